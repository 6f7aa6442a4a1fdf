//! G25: a run can be reconstructed from its events alone; copy-back is a workspace revision
//! authored by the run's step.

use engine::{Decision, GateDecision, reconstruct};
use serde_json::json;
use storage::{Door, EventLog, RunId};
use workspace::RevisionStore as _;

use crate::support::{
    FETCH, Harness, OFFLINE, REFUND, account, cli, failed_after_code_started, workflow,
};

fn assert_reconstructs(harness: &Harness, engine: &engine::Engine, run: &RunId) {
    let events = harness.store.events(run).unwrap();
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "gapless"
    );
    assert_eq!(
        reconstruct(&engine::journal::read_all(&events).unwrap()),
        engine.stored_state(run).unwrap(),
        "run {run}"
    );
}

#[test]
fn g25_run_reconstructed_from_events() {
    let harness = Harness::new();
    let engine = harness.engine();
    let mut runs = Vec::new();
    // Succeeded.
    runs.push(
        engine
            .start_run(
                &account(),
                &workflow(OFFLINE),
                json!({"count": 1}),
                cli("a"),
            )
            .unwrap()
            .run,
    );
    // Parked at a gate.
    runs.push(
        engine
            .start_run(
                &account(),
                &workflow(REFUND),
                json!({"ticket_id": "T"}),
                cli("a"),
            )
            .unwrap()
            .run,
    );
    // Approved and finished.
    let approved = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T"}),
            cli("a"),
        )
        .unwrap()
        .run;
    engine
        .decide(
            &approved,
            "send_refund",
            Decision {
                kind: GateDecision::Approve,
                who: cli("a"),
                door: Door::Cli,
                note: "ok".into(),
            },
        )
        .unwrap();
    runs.push(approved);
    // Rejected.
    let rejected = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T"}),
            cli("a"),
        )
        .unwrap()
        .run;
    engine
        .decide(
            &rejected,
            "send_refund",
            Decision {
                kind: GateDecision::Reject,
                who: cli("a"),
                door: Door::Link,
                note: "no".into(),
            },
        )
        .unwrap();
    runs.push(rejected);
    // Networked failure: unknown, needs attention; then a person's retry.
    harness
        .executor
        .then("fetch", |_| failed_after_code_started("reset"));
    let unknown = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("a"))
        .unwrap()
        .run;
    runs.push(unknown.clone());
    let retried = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("a"))
        .unwrap()
        .run;
    harness
        .executor
        .then("fetch", |_| failed_after_code_started("reset"));
    let retried_after_unknown = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("a"))
        .unwrap()
        .run;
    engine
        .retry(
            &retried_after_unknown,
            "fetch",
            None,
            engine::PersonDecision {
                who: cli("a"),
                door: Door::Cli,
                note: "safe".into(),
            },
        )
        .unwrap();
    runs.push(retried);
    runs.push(retried_after_unknown);
    // Needs repair.
    harness.executor.then("compute", |_| {
        engine::ExecutionReport::outcome_only(
            engine::ExecutionOutcome::NeedsRepair {
                module: "numpy".into(),
                detail: String::new(),
            },
            "fake",
        )
    });
    runs.push(
        engine
            .start_run(
                &account(),
                &workflow(OFFLINE),
                json!({"count": 1}),
                cli("a"),
            )
            .unwrap()
            .run,
    );
    // Failed before any step: a connection the account does not have.
    let missing = FETCH.replace("connections: [payments]", "connections: [crm]");
    runs.push(
        engine
            .start_run(&account(), &workflow(&missing), json!({}), cli("a"))
            .unwrap()
            .run,
    );
    harness
        .executor
        .then("compute", |_| failed_after_code_started("bad"));
    let stopped = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    engine
        .stop(
            &stopped,
            engine::PersonDecision {
                who: cli("a"),
                door: Door::Cli,
                note: "stop".into(),
            },
        )
        .unwrap();
    runs.push(stopped);
    for run in &runs {
        assert_reconstructs(&harness, &engine, run);
    }
    // The reconstruction is not trivially equal: the fixtures cover several end states.
    let statuses: std::collections::BTreeSet<String> = runs
        .iter()
        .map(|run| {
            reconstruct(&engine.journal(run).unwrap())
                .status
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(statuses.len() >= 6, "{statuses:?}");
}

/// A step whose `main` returns `None` succeeded with the output JSON `null`: the store keeps
/// that value, and so must the run rebuilt from its events.
#[test]
fn g25_a_step_that_returns_none_is_rebuilt_with_its_null_output() {
    let harness = Harness::new();
    harness.executor.then("compute", |_| {
        crate::support::succeeded(serde_json::Value::Null)
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    assert_eq!(
        engine.stored_state(&run).unwrap().attempts[0].output,
        Some(serde_json::Value::Null)
    );
    assert_reconstructs(&harness, &engine, &run);
}

#[test]
fn g25_copy_back_is_a_revision_authored_by_the_run_step() {
    let harness = Harness::new();
    let revisions = harness.revisions_dir();
    harness.executor.then("compute", |_| {
        let mut report = crate::support::succeeded(json!(2));
        report.file_changes = vec![crate::support::file("shared/out.txt", b"result".to_vec())];
        report
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    let history = workspace::FolderRevisions::open(&revisions)
        .unwrap()
        .history()
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        history[0].author,
        workspace::Author::RunStep {
            run_id: run.clone(),
            step: "compute".into(),
            attempt: 1
        }
    );
    assert_eq!(history[0].changes[0].path, "shared/out.txt");
    let events = harness.store.events(&run).unwrap();
    let recorded = events
        .iter()
        .find(|event| event.kind == "workspace.revision")
        .unwrap();
    assert_eq!(recorded.payload["revision"], json!(history[0].id.as_str()));
    // The working folder follows the revision: the next step is staged from it.
    let written = std::fs::read(harness.work_dir().join("shared/out.txt")).unwrap();
    assert_eq!(written, b"result");
}

/// Two accounts' runs of the same workflow: each step is staged from its own account's folder,
/// is told its own account, and its copy-back lands in that account's history and folder only.
#[test]
fn g25_copy_back_reaches_only_the_run_accounts_workspace() {
    use storage::{Account, AccountId, AccountStore, Timestamp};
    let harness = Harness::new();
    let other = AccountId::parse("other").unwrap();
    harness
        .store
        .ensure_account(&Account {
            id: other.clone(),
            name: "other".into(),
            created_at: Timestamp(0),
        })
        .unwrap();
    harness.source.set_connection_field(
        "other",
        "payments",
        "api_key",
        "sk_other_account_value_42",
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    for _ in 0..2 {
        let seen = seen.clone();
        harness.executor.then("compute", move |request| {
            // Which account's files the step was handed: each holds its own marker.
            let marker = workspace::RelPath::parse("whose.txt").unwrap();
            let (whose, _) = request
                .files
                .reader()
                .unwrap()
                .read(&marker, 0, 64)
                .unwrap();
            seen.lock().unwrap().push((
                request.account.to_owned(),
                String::from_utf8(whose).unwrap(),
            ));
            let mut report = crate::support::succeeded(json!(2));
            report.file_changes = vec![crate::support::file(
                "out.txt",
                format!("written for {}", request.account).into_bytes(),
            )];
            report
        });
    }
    let engine = harness.engine();
    let accounts = harness.dir.path().join("accounts");
    for (folder, whose) in [
        (harness.work_dir(), "local's files"),
        (accounts.join("other/workspace"), "other's files"),
    ] {
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("whose.txt"), whose).unwrap();
    }
    for owner in [account(), other.clone()] {
        let summary = engine
            .start_run(&owner, &workflow(OFFLINE), json!({"count": 1}), cli("a"))
            .unwrap();
        assert_eq!(summary.status, storage::RunStatus::Succeeded);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (account(), "local's files".to_owned()),
            (other.clone(), "other's files".to_owned()),
        ]
    );
    assert_eq!(
        std::fs::read(harness.work_dir().join("out.txt")).unwrap(),
        format!("written for {}", crate::support::ACCOUNT).into_bytes()
    );
    assert_eq!(
        std::fs::read(accounts.join("other/workspace/out.txt")).unwrap(),
        b"written for other"
    );
    for (folder, count) in [
        (harness.revisions_dir(), 1),
        (accounts.join("other/revisions"), 1),
    ] {
        let history = workspace::FolderRevisions::open(&folder)
            .unwrap()
            .history()
            .unwrap();
        assert_eq!(history.len(), count, "{}", folder.display());
    }
}

/// The copy-back screen is the run's account's: a value the account holds but the run was
/// never given is refused in a file and withheld from the record when it names a file; the
/// same bytes from another account's run are just bytes there.
#[test]
fn g19_copy_back_is_screened_with_the_run_accounts_values() {
    use storage::{Account, AccountId, AccountStore, Timestamp};
    const SPARE: &str = "sk_other_spare_value_never_given_77";
    let harness = Harness::new();
    let other = AccountId::parse("other").unwrap();
    harness
        .store
        .ensure_account(&Account {
            id: other.clone(),
            name: "other".into(),
            created_at: Timestamp(0),
        })
        .unwrap();
    harness.source.set_connection_field(
        "other",
        "payments",
        "api_key",
        "sk_other_payments_value_42",
    );
    harness
        .source
        .set_connection_field("other", "spare", "token", SPARE);
    for _ in 0..2 {
        harness.executor.then("compute", |_| {
            let mut report = crate::support::succeeded(json!(2));
            report.file_changes = vec![
                crate::support::file("holds.txt", format!("token={SPARE}").into_bytes()),
                crate::support::file(&format!("{SPARE}.txt"), b"named after it".to_vec()),
            ];
            report
        });
    }
    let engine = harness.engine();
    let run = engine
        .start_run(&other, &workflow(OFFLINE), json!({"count": 1}), cli("a"))
        .unwrap()
        .run;
    let accounts = harness.dir.path().join("accounts");
    assert!(!accounts.join("other/workspace/holds.txt").exists());
    assert!(
        !accounts
            .join(format!("other/workspace/{SPARE}.txt"))
            .exists()
    );
    let events = harness.store.events(&run).unwrap();
    let refusals: Vec<&serde_json::Value> = events
        .iter()
        .filter(|event| event.kind == "copy_back.refused")
        .map(|event| &event.payload)
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(
        !format!("{events:?}").contains(SPARE),
        "a path naming an account value is withheld from the record"
    );
    // In the first account, the other account's value is no credential of its own.
    engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap();
    assert!(harness.work_dir().join("holds.txt").exists());
}

/// The copy-back events of `run`: (path, reason) of every refusal.
fn copy_back_refusals(harness: &Harness, run: &RunId) -> Vec<(String, String)> {
    harness
        .store
        .events(run)
        .unwrap()
        .iter()
        .filter(|event| event.kind == "copy_back.refused")
        .map(|event| {
            (
                event.payload["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                event.payload["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// Every step's copy-back is held to the same caps, whatever executor made it (an agent
/// step's view, a backend): a file over the per-file cap, files past the count and the bytes
/// past the total are refused by name with their reason, never cut, never silently dropped
/// (agents review, finding 4: an agent's 70 MB file came back cut at 64 MiB, unannounced).
#[test]
fn g12_every_copy_back_is_held_to_the_caps_with_a_refusal_by_name() {
    let harness = Harness::new();
    let caps = harness.options.copy_back;
    harness.executor.then("compute", move |_| {
        let mut report = crate::support::succeeded(json!(2));
        let mut changes = vec![crate::support::file(
            "big.bin",
            vec![b'b'; caps.max_file_bytes as usize + 1],
        )];
        for index in 0..caps.max_files + 2 {
            changes.push(crate::support::file(
                &format!("many/{index:05}.txt"),
                b"m".to_vec(),
            ));
        }
        report.file_changes = changes;
        report
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    let refusals = copy_back_refusals(&harness, &run);
    let big = refusals.iter().find(|(path, _)| path == "big.bin").unwrap();
    assert!(big.1.contains(&caps.max_file_bytes.to_string()), "{big:?}");
    let past_count: Vec<_> = refusals
        .iter()
        .filter(|(path, _)| path.starts_with("many/"))
        .collect();
    assert_eq!(past_count.len(), 2, "{refusals:?}");
    assert!(
        past_count[0].1.contains(&caps.max_files.to_string()),
        "{past_count:?}"
    );
    assert!(!harness.work_dir().join("big.bin").exists());
    let written = std::fs::read_dir(harness.work_dir().join("many"))
        .unwrap()
        .count();
    assert_eq!(written, caps.max_files);

    // The bytes of one step together.
    let harness = Harness::new();
    let caps = harness.options.copy_back;
    let piece = caps.max_file_bytes as usize;
    let pieces = (caps.max_total_bytes as usize).div_ceil(piece) + 1;
    harness.executor.then("compute", move |_| {
        let mut report = crate::support::succeeded(json!(2));
        report.file_changes = (0..pieces)
            .map(|index| crate::support::file(&format!("part-{index}.bin"), vec![b'p'; piece]))
            .collect();
        report
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    let refusals = copy_back_refusals(&harness, &run);
    assert!(!refusals.is_empty());
    assert!(
        refusals
            .iter()
            .all(|(_, reason)| reason.contains(&caps.max_total_bytes.to_string())),
        "{refusals:?}"
    );
    let kept: u64 = std::fs::read_dir(harness.work_dir())
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    assert!(kept <= caps.max_total_bytes);
}

struct NoSecrets;

impl workspace::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

/// A copy-back that would take an agent's folder past what a run can pin is refused by name:
/// otherwise the agent could never run again (agents review, finding 4).
#[test]
fn g12_a_copy_back_past_an_agents_pin_limit_is_refused_by_name() {
    let harness = Harness::new();
    let workspace = harness.options.workspaces.for_account(&account()).unwrap();
    let filler: Vec<_> = (0..workspace::MAX_PINNED_FILES - 1)
        .map(|index| {
            (
                workspace::RelPath::parse(&format!("agents/boss/notes/{index:05}.md")).unwrap(),
                workspace::Change::Write(b"n".to_vec()),
            )
        })
        .collect();
    workspace
        .commit(
            &workspace::Author::Cli {
                os_user: "test".into(),
            },
            "filler",
            filler,
            &NoSecrets,
        )
        .unwrap();
    harness.executor.then("compute", |_| {
        let mut report = crate::support::succeeded(json!(2));
        report.file_changes = vec![
            crate::support::file("agents/boss/notes/new-1.md", b"one".to_vec()),
            crate::support::file("agents/boss/notes/new-2.md", b"two".to_vec()),
            crate::support::file("shared/fine.md", b"fine".to_vec()),
        ];
        report
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    let refusals = copy_back_refusals(&harness, &run);
    let paths: Vec<&str> = refusals.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        ["agents/boss/notes/new-1.md", "agents/boss/notes/new-2.md"]
    );
    assert!(refusals[0].1.contains("agents/boss"), "{refusals:?}");
    assert!(harness.work_dir().join("shared/fine.md").exists());
}
