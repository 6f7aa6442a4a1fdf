//! Review of the credential path: holes found by reading the engine, each proved by a test
//! that failed before its fix.

use engine::{Engine, SupervisorDecision};
use serde_json::json;
use storage::{EventLog, RunStatus};

use crate::support::{
    Harness, OFFLINE, SECRET, ScriptedSupervisor, account, cli, contains,
    failed_after_code_started, workflow,
};

/// A credential typed literally into a retry's inputs: not a vault value, so no redactor knows
/// it. G4 keeps it out of the record by refusing the key it sits under.
const LITERAL_CREDENTIAL: &str = "literal-credential-typed-by-someone-9Qx7";

#[test]
fn g4_supervisor_retry_inputs_with_a_forbidden_key_are_never_stored() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| failed_after_code_started("factor too small"));
    let supervisor = ScriptedSupervisor::new(|_| SupervisorDecision::Retry {
        inputs: json!({"factor": 10, "auth": {"API-Key": LITERAL_CREDENTIAL}}),
    });
    let engine = harness.engine_with(supervisor);
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    // The step never ran with the forbidden inputs...
    assert_eq!(harness.executor.calls_of("compute").len(), 1);
    // ...and the refusal names the key, never its value.
    let events = harness.store.events(&summary.run).unwrap();
    assert!(
        events
            .iter()
            .any(|event| event.payload.to_string().contains("/auth/API-Key")),
        "no event names the refused key"
    );
    assert!(
        !contains(&harness.database_bytes(), LITERAL_CREDENTIAL.as_bytes()),
        "the value under a forbidden key reached the database"
    );
}

/// The sandbox caps what a step prints before the engine sees it; a value printed across that
/// cap arrives as its first half only, which no whole-value pattern matches (G17: a cut must
/// not leave half a secret).
#[test]
fn g17_output_cut_before_the_engine_saw_it_leaves_no_half_secret() {
    let harness = Harness::new();
    let half = &SECRET[..SECRET.len() / 2];
    harness.executor.then("compute", move |_| {
        let mut report = crate::support::succeeded(json!(1));
        report.stdout = format!("a lot of output, then the key: {half}")
            .into_bytes()
            .into();
        report.isolation_notes = vec!["printed output went over the limit and was cut".into()];
        report
    });
    let engine: Engine = harness.engine();
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded);
    let events = harness.store.events(&summary.run).unwrap();
    let printed = events
        .iter()
        .find(|event| event.kind == "step.printed")
        .unwrap();
    let text = printed.payload["text"].as_str().unwrap();
    assert!(
        text.starts_with("a lot of output, then the key: "),
        "{text}"
    );
    assert!(
        !text.contains(half),
        "half of the value was recorded: {text}"
    );
    assert!(!contains(&harness.database_bytes(), half.as_bytes()));
}

fn tree_holds(folder: &std::path::Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    entries.map(|entry| entry.unwrap().path()).any(|path| {
        contains(path.as_os_str().as_encoded_bytes(), needle)
            || if path.is_dir() {
                tree_holds(&path, needle)
            } else {
                contains(&std::fs::read(&path).unwrap(), needle)
            }
    })
}

/// A step that names a file after its key: the contents are clean, the name is the value. The
/// name is written into the revision history and the working folder as it is (G12, G19).
#[test]
fn g19_a_copied_back_file_named_after_a_secret_is_refused() {
    let harness = Harness::new();
    let revisions = harness.revisions_dir();
    harness.executor.then("compute", |_| {
        let mut report = crate::support::succeeded(json!(1));
        report.file_changes = vec![
            crate::support::file(&format!("cache/{SECRET}.json"), b"{}".to_vec()),
            crate::support::file("cache/summary.json", b"{\"total\": 1}".to_vec()),
        ];
        report
    });
    let summary = harness
        .engine()
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded);
    let work = harness.work_dir();
    assert!(!tree_holds(&revisions, SECRET.as_bytes()), "in the history");
    assert!(
        !tree_holds(&work, SECRET.as_bytes()),
        "in the working folder"
    );
    assert!(!contains(&harness.database_bytes(), SECRET.as_bytes()));
    // The other file of the same copy-back is not lost with it.
    assert_eq!(
        std::fs::read(work.join("cache/summary.json")).unwrap(),
        b"{\"total\": 1}"
    );
}
