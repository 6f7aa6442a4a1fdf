//! Writes a SQLite database whose runs hold every kind of event the engine writes, by running
//! real engine scenarios: the fixture the journal's readers are tested against
//! (`crates/engine/tests/fixtures/journal/`, see its README).
//!
//! `cargo run -p engine --example journal_fixture -- OUT.db`
//!
//! Each scenario drives the real engine over the real SQLite store with a scripted executor
//! (what a sandbox would have observed), a scripted supervisor, a counting clock and counting
//! run ids, so two runs of this program write the same rows. A crash is a panic of the
//! executor mid-step, caught here, after which a fresh engine recovers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::{
    CodePhase, CopyBackRefusal, Decision, Engine, EngineOptions, ExecutionOutcome, ExecutionReport,
    FileChange, GateDecision, PersonDecision, StepError, StepOutput, SupervisorDecision,
};
use redact::SecretName;
use redact::testing::MemorySource;
use serde_json::{Value, json};
use storage::{Account, AccountId, AccountStore, Actor, Door, RunId, RunStatus, Timestamp};
use storage_sqlite::SqliteStore;
use test_support::steps::{QueuedSupervisor, ScriptedExecutor};
use test_support::time::{CountingClock, CountingIds};
use test_support::workflows::{FETCH, OFFLINE, REFUND};

const ACCOUNT: &str = "acct";
/// The connection value every run can see; it must appear in no stored byte.
const SECRET: &str = "sk_live_Fixture7Qm2Vx9Lp4Tn6Rw8";

/// Two steps that write files back into the workspace.
const FILES: &str = r#"name: files
python: "3.11"
steps:
  - id: write_report
    explain: Writes the report files.
    code: |
      def main():
          return None
  - id: write_journal
    explain: Tries to write into the journal's folder.
    code: |
      def main():
          return None
"#;

/// A step needing a connection the account does not have.
const MISSING: &str = r#"name: missing
python: "3.11"
steps:
  - id: charge
    explain: Charges the card.
    network: public_egress
    connections: [ledger]
    code: |
      def main():
          return None
"#;

/// A step whose output names a credential key, read by the next step.
const MINT: &str = r#"name: mint
python: "3.11"
steps:
  - id: mint
    explain: Mints a key.
    code: |
      def main():
          return {"api_key": "minted-by-the-step"}
  - id: use_key
    explain: Uses it.
    inputs: { minted: { from: mint } }
    code: |
      def main(minted):
          return None
"#;

fn report(outcome: ExecutionOutcome) -> ExecutionReport {
    ExecutionReport {
        interpreter_version: Some("3.11.2".into()),
        isolation_notes: vec!["landlock unavailable".into()],
        ..ExecutionReport::outcome_only(outcome, "local")
    }
}

/// What a step with no script queued reports here: its output, as the local backend would.
fn succeeded(output: Value) -> ExecutionReport {
    report(ExecutionOutcome::Succeeded {
        output: StepOutput::from_value(&output),
    })
}

fn failed(message: &str) -> ExecutionReport {
    ExecutionReport {
        stderr: format!("Traceback (most recent call last):\nRuntimeError: {message}\n")
            .into_bytes()
            .into(),
        ..report(ExecutionOutcome::Failed {
            error: StepError {
                kind: "RuntimeError".into(),
                message: message.into(),
                traceback: "  File \"step.py\", line 2, in main".into(),
            },
            phase: CodePhase::CodeStarted,
        })
    }
}

fn person(id: &str, name: &str) -> Actor {
    Actor::Person {
        id: id.into(),
        name: name.into(),
    }
}

fn cli() -> Actor {
    Actor::Cli {
        os_user: "alice".into(),
    }
}

/// One data directory: the store, the secret source and what every engine over it shares.
struct Fixture {
    store: Arc<SqliteStore>,
    source: Arc<MemorySource>,
    executor: Arc<ScriptedExecutor>,
    supervisor: Arc<QueuedSupervisor>,
    clock: Arc<CountingClock>,
    ids: Arc<CountingIds>,
    workspaces: PathBuf,
}

impl Fixture {
    fn engine(&self) -> Engine {
        Engine::new(
            EngineOptions::new(workspace::Workspaces::new(self.workspaces.clone())),
            self.store.clone(),
            self.executor.clone(),
            redact::ScrubSets::new(self.source.clone()),
            self.supervisor.clone(),
            self.clock.clone(),
            self.ids.clone(),
        )
    }

    fn start(&self, text: &str, inputs: Value) -> RunId {
        let workflow = spec::parse_workflow("workflow.yaml", text).unwrap();
        self.engine()
            .start_run(
                &AccountId::parse(ACCOUNT).unwrap_or_else(|error| panic!("{error}")),
                &workflow,
                inputs,
                cli(),
            )
            .unwrap()
            .run
    }

    /// Starts a run whose executor "crashes the platform" mid-step: the run is left with an
    /// attempt marked running, as a killed process leaves it.
    fn start_and_crash(&self, text: &str, inputs: Value) {
        let workflow = spec::parse_workflow("workflow.yaml", text).unwrap();
        let engine = self.engine();
        let previous_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let crashed = catch_unwind(AssertUnwindSafe(|| {
            engine.start_run(
                &AccountId::parse(ACCOUNT).unwrap_or_else(|error| panic!("{error}")),
                &workflow,
                inputs,
                cli(),
            )
        }));
        std::panic::set_hook(previous_hook);
        assert!(
            crashed.is_err(),
            "the step was meant to crash the platform: {crashed:?}"
        );
    }
}

fn decision(kind: GateDecision, who: Actor, door: Door, note: &str) -> Decision {
    Decision {
        kind,
        who,
        door,
        note: note.into(),
    }
}

fn by(who: Actor, door: Door, note: &str) -> PersonDecision {
    PersonDecision {
        who,
        door,
        note: note.into(),
    }
}

fn scenarios(fixture: &Fixture) {
    let engine = fixture.engine();
    let executor = &fixture.executor;
    let supervisor = &fixture.supervisor;

    // A gated run, approved in the console; the networked step prints the connection's value
    // (scrubbed in the record) and finishes.
    let run = fixture.start(REFUND, json!({"ticket_id": "T-1"}));
    executor.then("send_refund", |request| ExecutionReport {
        stdout: format!("sending with {SECRET}\n").into_bytes().into(),
        ..succeeded(json!({"sent": request.inputs["request"]["ticket"]}))
    });
    let alice = person("p-alice", "Alice Example");
    engine
        .decide(
            &run,
            "send_refund",
            decision(
                GateDecision::Approve,
                alice.clone(),
                Door::Console,
                "amount checked",
            ),
        )
        .unwrap();

    // A gated run rejected through an approve link.
    let run = fixture.start(REFUND, json!({"ticket_id": "T-2"}));
    engine
        .decide(
            &run,
            "send_refund",
            decision(
                GateDecision::Reject,
                alice.clone(),
                Door::Link,
                "duplicate ticket",
            ),
        )
        .unwrap();

    // A gated run left waiting: a newer engine decides it.
    fixture.start(REFUND, json!({"ticket_id": "T-3"}));

    // An offline step fails; the supervisor retries it with new inputs, and it succeeds.
    executor.then("compute", |_| failed("division by zero"));
    supervisor.then(SupervisorDecision::Retry {
        inputs: json!({"count": 2, "factor": 3}),
    });
    fixture.start(OFFLINE, json!({"count": 1}));

    // An offline step fails; the run waits for a person, who retries it with new inputs.
    executor.then("compute", |_| failed("bad input"));
    let run = fixture.start(OFFLINE, json!({"count": 1}));
    engine
        .retry(
            &run,
            "compute",
            Some(json!({"factor": 5})),
            by(cli(), Door::Cli, "the input was wrong, now fixed"),
        )
        .unwrap();

    // A networked step fails after its code started: unknown. The supervisor asks to retry,
    // the engine refuses; a person stops the run through the API with a key.
    executor.then("fetch", |_| failed("connection reset"));
    supervisor.then(SupervisorDecision::Retry { inputs: json!({}) });
    let run = fixture.start(FETCH, json!({}));
    engine
        .stop(
            &run,
            by(
                Actor::ApiKey { id: "key-1".into() },
                Door::Api,
                "the provider charged it",
            ),
        )
        .unwrap();

    // A networked step times out: unknown; a person checks and retries it; it succeeds.
    executor.then("fetch", |_| {
        report(ExecutionOutcome::Unknown {
            reason: "the step ran longer than its 30 s wall-time limit and was killed".into(),
        })
    });
    let run = fixture.start(FETCH, json!({}));
    engine
        .retry(
            &run,
            "fetch",
            None,
            by(alice.clone(), Door::Console, "nothing was fetched; safe"),
        )
        .unwrap();

    // An offline step fails; the supervisor stops the run (its reason quotes the value).
    executor.then("compute", |_| failed("overflow"));
    supervisor.then(SupervisorDecision::Stop {
        reason: format!("the input cannot work with key {SECRET}"),
    });
    fixture.start(OFFLINE, json!({"count": 1}));

    // An offline step keeps failing; the supervisor's retries run out; left for a person.
    for _ in 0..4 {
        executor.then("compute", |_| failed("still broken"));
        // A retry gives every input of the step (the engine refuses one that leaves any out).
        supervisor.then(SupervisorDecision::Retry {
            inputs: json!({"count": 3, "factor": 2}),
        });
    }
    fixture.start(OFFLINE, json!({"count": 1}));

    // Copy-back: the sandbox refused a link; the engine refuses a file holding the value, a
    // path holding it and a path out of the folder; the rest is a revision. The next step
    // writes into `.journal/`, so the workspace refuses that whole revision.
    executor.then("write_report", |_| ExecutionReport {
        copy_back_refusals: vec![CopyBackRefusal {
            path: "out/latest".into(),
            reason: "a symbolic link is never copied back".into(),
        }],
        file_changes: vec![
            file("out/report.txt", b"42 refunds\n".to_vec()),
            file("out/config.env", format!("KEY={SECRET}\n").into_bytes()),
            file(
                &format!("out/{SECRET}.txt"),
                b"named after the key\n".to_vec(),
            ),
            // `v1.db` also holds a refusal of `../escape.txt`: since issue 39 an executor hands
            // back a `RelPath`, so no such path reaches the engine to be refused.
        ],
        ..succeeded(Value::Null)
    });
    executor.then("write_journal", |_| ExecutionReport {
        file_changes: vec![
            file("out/summary.txt", b"done\n".to_vec()),
            file(".journal/entry", b"forged\n".to_vec()),
        ],
        ..succeeded(Value::Null)
    });
    fixture.start(FILES, json!({}));

    // A third-party import: needs repair; a person stops the run.
    executor.then("compute", |_| {
        report(ExecutionOutcome::NeedsRepair {
            module: "numpy".into(),
            detail: "numpy is not in the standard library of Python 3.11".into(),
        })
    });
    let run = fixture.start(OFFLINE, json!({"count": 1}));
    engine
        .stop(&run, by(cli(), Door::Cli, "rewriting it without numpy"))
        .unwrap();

    // The backend refuses a step it cannot isolate: refused, left for a person.
    executor.then("compute", |_| {
        report(ExecutionOutcome::Refused {
            reason: "the gvisor backend is not installed on this server".into(),
        })
    });
    fixture.start(OFFLINE, json!({"count": 1}));

    // A connection the account does not have: the run fails before any step.
    fixture.start(MISSING, json!({}));

    // A step output names a credential key: the record keeps the key and masks the value, and
    // the next step's inputs are refused for the key.
    executor.then("mint", |_| {
        succeeded(json!({"api_key": "minted-by-the-step"}))
    });
    fixture.start(MINT, json!({}));

    // A connection revoked while the run waits at its gate: after approval, the step is
    // refused.
    let run = fixture.start(REFUND, json!({"ticket_id": "T-4"}));
    fixture.source.revoke(
        ACCOUNT,
        SecretName::ConnectionField {
            alias: "payments".into(),
            field: "api_key".into(),
        },
    );
    engine
        .decide(
            &run,
            "send_refund",
            decision(GateDecision::Approve, cli(), Door::Cli, "go"),
        )
        .unwrap();
    fixture
        .source
        .set_connection_field(ACCOUNT, "payments", "api_key", SECRET);

    // The platform dies while a networked step runs, and while an offline one runs; a fresh
    // engine recovers: the first is unknown, the second runs again.
    executor.then("fetch", |_| panic!("the platform died mid-step"));
    fixture.start_and_crash(FETCH, json!({}));
    executor.then("compute", |_| panic!("the platform died mid-step"));
    fixture.start_and_crash(OFFLINE, json!({"count": 7}));
    let recovered = fixture.engine().recover().unwrap();
    assert_eq!(recovered.marked_unknown.len(), 1, "{recovered:?}");
    assert_eq!(recovered.interrupted_offline.len(), 1, "{recovered:?}");
}

fn write(out: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stepward.db");
    {
        let store = Arc::new(SqliteStore::open(&db).unwrap());
        store
            .ensure_account(&Account {
                id: AccountId::parse(ACCOUNT).unwrap_or_else(|error| panic!("{error}")),
                name: "local".into(),
                created_at: Timestamp(0),
            })
            .unwrap();
        let source = Arc::new(MemorySource::new());
        source.set_connection_field(ACCOUNT, "payments", "api_key", SECRET);
        let fixture = Fixture {
            store,
            source,
            executor: Arc::new(ScriptedExecutor::with_fallback(succeeded)),
            supervisor: Arc::new(QueuedSupervisor::default()),
            clock: Arc::new(CountingClock::default()),
            ids: Arc::new(CountingIds::default()),
            workspaces: dir.path().join("accounts"),
        };
        scenarios(&fixture);
        for run in storage::RunStore::runs(
            fixture.store.as_ref(),
            &AccountId::parse(ACCOUNT).unwrap_or_else(|error| panic!("{error}")),
        )
        .unwrap()
        .iter()
        .rev()
        {
            let status: RunStatus = run.status;
            println!("{}  {status}", run.id);
        }
    }
    // One self-contained file: the WAL folded in, the journal mode back to a rollback journal
    // (the store turns WAL on again when it opens a copy).
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
        .unwrap();
    connection.execute_batch("VACUUM").unwrap();
    drop(connection);
    let bytes = std::fs::read(&db).unwrap();
    assert!(
        !bytes
            .windows(SECRET.len())
            .any(|window| window == SECRET.as_bytes()),
        "the connection's value reached the database"
    );
    std::fs::write(out, bytes).unwrap();
}

fn main() {
    let Some(out) = std::env::args_os().nth(1) else {
        eprintln!("usage: journal_fixture OUT.db");
        std::process::exit(2);
    };
    write(Path::new(&out));
}

/// A file a step wrote at `path`, as an executor hands it back.
fn file(path: &str, contents: impl Into<Vec<u8>>) -> FileChange {
    FileChange::write(workspace::RelPath::parse(path).unwrap(), contents.into())
}
