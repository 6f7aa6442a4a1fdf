//! G25 across versions: the journals in `tests/fixtures/journal/` (one database per journal
//! version, written by the engine of that version; see its README) still read as typed events,
//! rebuild the state their store holds, re-encode to exactly what was stored, and their runs
//! can be continued by today's engine.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::journal::{self, Event, EventKind, PersonDecided};
use engine::{Decision, Engine, EngineOptions, GateDecision, PersonDecision, PersonSupervisor};
use redact::testing::MemorySource;
use storage::{
    AccountId, Actor, AttemptStatus, DecisionKind, Door, EventLog, RunId, RunStatus, RunStore,
};
use storage_sqlite::SqliteStore;

use crate::support::{CountingClock, CountingIds, ScriptedExecutor, contains};

/// The account and connection value `examples/journal_fixture.rs` wrote its runs with.
const FIXTURE_ACCOUNT: &str = "acct";
const FIXTURE_SECRET: &str = "sk_live_Fixture7Qm2Vx9Lp4Tn6Rw8";

/// Every event kind journal version 1 had, all of which its fixture holds.
const V1_KINDS: &[&str] = &[
    "run.created",
    "run.status",
    "secrets.resolved",
    "secrets.unavailable",
    "gate.parked",
    "decision",
    "attempt.started",
    "attempt.finished",
    "step.printed",
    "copy_back.refused",
    "workspace.revision",
    "supervisor.decision",
    "supervisor.retry_refused",
    "recovery",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/journal")
        .join(name)
}

/// A copy of a fixture database, opened (and so migrated) by today's store, with an engine
/// over it.
struct Opened {
    _dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    executor: Arc<ScriptedExecutor>,
    engine: Engine,
}

fn open(name: &str) -> Opened {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stepward.db");
    std::fs::copy(fixture(name), &path).unwrap();
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let source = Arc::new(MemorySource::new());
    source.set_connection_field(FIXTURE_ACCOUNT, "payments", "api_key", FIXTURE_SECRET);
    let executor = Arc::new(ScriptedExecutor::default());
    let engine = Engine::new(
        EngineOptions::new(workspace::Workspaces::new(dir.path().join("accounts"))),
        store.clone(),
        executor.clone(),
        redact::ScrubSets::new(source),
        Arc::new(PersonSupervisor),
        Arc::new(CountingClock::default()),
        Arc::new(CountingIds::default()),
    );
    Opened {
        _dir: dir,
        store,
        executor,
        engine,
    }
}

fn runs(opened: &Opened) -> Vec<RunId> {
    let mut runs: Vec<RunId> = opened
        .store
        .runs(&AccountId::parse(FIXTURE_ACCOUNT).unwrap())
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect();
    runs.sort_by_key(|run| run.as_str().trim_start_matches("run-").parse::<u32>().ok());
    runs
}

fn assert_reconstructs(opened: &Opened, run: &RunId) {
    let entries = opened.engine.journal(run).unwrap();
    assert_eq!(
        engine::reconstruct(&entries),
        opened.engine.stored_state(run).unwrap(),
        "run {run}"
    );
}

#[test]
fn g25_every_event_main_wrote_before_the_journal_was_typed_still_reads() {
    let opened = open("v1.db");
    let runs = runs(&opened);
    assert_eq!(runs.len(), 17, "the fixture's runs: {runs:?}");
    let mut kinds = BTreeSet::new();
    for run in &runs {
        let records = opened.store.events(run).unwrap();
        for record in &records {
            assert_eq!(record.version, 1, "run {run} event {}", record.seq);
            kinds.insert(record.kind.clone());
            let entry = journal::read(record).unwrap();
            assert_eq!(entry.event.kind().as_str(), record.kind);
            // The typed journal writes version 1 field for field: every stored payload
            // re-encodes to exactly what was stored.
            assert_eq!(
                entry.event.payload_json().unwrap(),
                record.payload,
                "run {run} event {} ({})",
                record.seq,
                record.kind
            );
        }
        assert_reconstructs(&opened, run);
    }
    let expected: BTreeSet<String> = V1_KINDS.iter().map(|kind| (*kind).to_owned()).collect();
    assert_eq!(kinds, expected, "the fixture holds every kind of version 1");
    for kind in V1_KINDS {
        assert!(EventKind::from_name(kind).is_some(), "{kind} is still read");
    }
}

#[test]
fn g25_the_fixture_reads_with_its_meaning() {
    let opened = open("v1.db");
    // The gate of run-1 was approved in the console by a person, with a note.
    let decision = opened
        .engine
        .journal(&RunId::parse("run-1").unwrap())
        .unwrap()
        .into_iter()
        .find_map(|entry| match entry.event {
            Event::Decision(decided) => Some(decided),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        decision,
        PersonDecided {
            decision: DecisionKind::Approve,
            step: Some("send_refund".into()),
            attempt: Some(1),
            who: Actor::Person {
                id: "p-alice".into(),
                name: "Alice Example".into(),
            },
            door: Door::Console,
            note: "amount checked".into(),
            new_inputs: None,
        }
    );
    // Recovery of run-16 found the networked attempt running and made it unknown.
    let recovered = opened
        .engine
        .journal(&RunId::parse("run-16").unwrap())
        .unwrap()
        .into_iter()
        .find_map(|entry| match entry.event {
            Event::Recovery(recovered) => Some(recovered),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (recovered.found, recovered.now),
        (AttemptStatus::Running, AttemptStatus::Unknown)
    );
    // The value the runs could see was scrubbed before it was written, and stays out.
    let bytes = std::fs::read(fixture("v1.db")).unwrap();
    assert!(!contains(&bytes, FIXTURE_SECRET.as_bytes()));
}

#[test]
fn g25_runs_of_an_older_journal_go_on_under_todays_engine() {
    let opened = open("v1.db");
    // run-3 waits at its gate: approved now, its last steps run and it succeeds.
    let parked = RunId::parse("run-3").unwrap();
    let done = opened
        .engine
        .decide(
            &parked,
            "send_refund",
            Decision {
                kind: GateDecision::Approve,
                who: Actor::Cli {
                    os_user: "bob".into(),
                },
                door: Door::Cli,
                note: "checked after the upgrade".into(),
            },
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(opened.executor.calls_of("send_refund").len(), 1);
    // run-9 used up its supervisor retries: a person retries it now.
    let attention = RunId::parse("run-9").unwrap();
    let done = opened
        .engine
        .retry(
            &attention,
            "compute",
            None,
            PersonDecision {
                who: Actor::Cli {
                    os_user: "bob".into(),
                },
                door: Door::Cli,
                note: "fixed upstream".into(),
            },
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    // Their journals now hold events of two writers, and still rebuild their state. The
    // approval needs no newer version than 1; the person's retry of run-9 carries the inputs
    // of the supervisor's last retry, in force for that step, so it is written in version 2.
    for (run, before, versions) in [(&parked, 6, vec![1]), (&attention, 19, vec![1, 2])] {
        let events = opened.store.events(run).unwrap();
        assert!(events.len() > before, "run {run}: {} events", events.len());
        let written: BTreeSet<u32> = events.iter().map(|event| event.version).collect();
        assert_eq!(written, BTreeSet::from_iter(versions), "run {run}");
        assert_reconstructs(&opened, run);
    }
}

/// G23 across versions: a person's decision with new inputs is written in journal version 2,
/// the first whose shape holds them, so a stepward that reads only version 1 (a worker not yet
/// upgraded, a rollback) refuses that run's journal instead of reading the retry without its
/// inputs and running the inputs it corrected. Every other event is still written in version 1,
/// which such a stepward reads in full.
#[test]
fn g23_a_decision_with_new_inputs_is_written_in_the_first_version_that_holds_them() {
    let harness = crate::support::Harness::new();
    harness.executor.then("compute", |_| {
        engine::ExecutionReport::outcome_only(
            engine::ExecutionOutcome::Failed {
                error: engine::StepError {
                    kind: "ValueError".into(),
                    message: "too small".into(),
                    traceback: String::new(),
                },
                phase: engine::CodePhase::CodeStarted,
            },
            "fake",
        )
    });
    harness.executor.then("compute", |_| {
        engine::ExecutionReport::outcome_only(
            engine::ExecutionOutcome::Failed {
                error: engine::StepError {
                    kind: "ValueError".into(),
                    message: "still too small".into(),
                    traceback: String::new(),
                },
                phase: engine::CodePhase::CodeStarted,
            },
            "fake",
        )
    });
    let engine = harness.engine();
    let started = engine
        .start_run(
            &crate::support::account(),
            &crate::support::workflow(crate::support::OFFLINE),
            serde_json::json!({"count": 3}),
            crate::support::cli("alice"),
        )
        .unwrap();
    assert_eq!(started.status, RunStatus::NeedsAttention, "{started:?}");
    let person = |note: &str| PersonDecision {
        who: crate::support::cli("alice"),
        door: Door::Cli,
        note: note.into(),
    };
    engine
        .retry_attempt(
            &started.run,
            "compute",
            1,
            Some(serde_json::json!({"count": 4})),
            person("four"),
        )
        .unwrap();
    engine
        .retry_attempt(&started.run, "compute", 2, None, person("again"))
        .unwrap();
    let records = harness.store.events(&started.run).unwrap();
    let mut decisions = 0;
    for record in &records {
        let entry = journal::read(record).unwrap();
        let expected = match &entry.event {
            Event::Decision(decided) if decided.new_inputs.is_some() => 2,
            Event::DefinitionsPinned(pinned) if !pinned.models.is_empty() => 3,
            Event::RepairProposed(proposed) if proposed.code_sha256.is_some() => 4,
            _ => 1,
        };
        if record.kind == "decision" {
            decisions += 1;
        }
        assert_eq!(
            record.version, expected,
            "event {} ({}) is written in the first version that holds it",
            record.seq, record.kind
        );
    }
    // Both retries carry the new inputs (the second takes the ones in force).
    assert_eq!(decisions, 2);
    assert_eq!(
        journal::VERSION,
        4,
        "the newest version this stepward writes"
    );
}
