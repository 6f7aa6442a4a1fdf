//! G16 (the run's values are collected once, reach only the steps granted them, and every
//! durable writer is handed them) and G17 (a credential printed, returned, raised or written
//! never reaches the record, in any encoding the redactor knows).

use base64::Engine as _;
use engine::{CodePhase, CopyBackRefusal, ExecutionOutcome, ExecutionReport, StepError};
use serde_json::json;
use storage::{EventLog, RunStatus, RunStore};

use crate::support::{
    ACCOUNT, FETCH, Harness, OFFLINE, SECRET, ScriptedSupervisor, account, cli, contains, workflow,
};

fn encodings(secret: &str) -> Vec<(String, Vec<u8>)> {
    let bytes = secret.as_bytes();
    vec![
        ("raw".into(), bytes.to_vec()),
        (
            "base64".into(),
            base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into_bytes(),
        ),
        (
            "base64url".into(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(bytes)
                .into_bytes(),
        ),
        ("hex".into(), hex::encode(bytes).into_bytes()),
        ("HEX".into(), hex::encode_upper(bytes).into_bytes()),
    ]
}

#[test]
fn g17_secret_in_output_error_traceback_printed_never_stored() {
    let harness = Harness::new();
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let hex_lower = hex::encode(SECRET);
    // compute: prints the value raw and in base64, returns it in hex, writes files.
    harness.executor.then("compute", move |request| {
        let value = request.env[0].1.dangerously_expose().to_owned();
        let mut report = crate::support::succeeded(json!({
            "echo": value,
            "hex": hex_lower,
            "nested": {"key": format!("Bearer {value}")},
        }));
        report.stdout = format!("using {value}\n").into_bytes().into();
        report.stderr = format!("debug b64={b64}\n").into_bytes().into();
        report.isolation_notes = vec![format!("note with {value}")];
        report.file_changes = vec![
            crate::support::file("out/leak.txt", format!("key={value}").into_bytes()),
            crate::support::file("out/clean.txt", b"fine".to_vec()),
        ];
        report.copy_back_refusals = vec![CopyBackRefusal {
            path: "link".into(),
            reason: "a symbolic link".into(),
        }];
        report
    });
    // report: fails with the value in the message and URL-encoded in the traceback.
    harness.executor.then("report", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Failed {
                error: StepError {
                    kind: "ValueError".into(),
                    message: format!("bad key {SECRET}"),
                    traceback: format!(
                        "File main.py\n  url=https://x/?k={}",
                        SECRET.replace('_', "%5F")
                    ),
                },
                phase: CodePhase::CodeStarted,
            },
            "fake",
        )
    });
    let supervisor = ScriptedSupervisor::new(|_| engine::SupervisorDecision::AskPerson);
    let engine = harness.engine_with(supervisor.clone());
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    // The step did get the value, through its environment only.
    assert_eq!(
        harness.executor.calls_of("compute")[0].env,
        vec![("CONN_PAYMENTS_API_KEY".to_owned(), SECRET.to_owned())]
    );
    assert!(
        harness.executor.calls_of("report")[0].env.is_empty(),
        "report is not granted payments"
    );

    // What the supervisor saw is scrubbed.
    let seen = supervisor.seen.lock().unwrap();
    assert!(!seen[0].message.get().contains(SECRET));
    assert!(seen[0].message.get().contains(redact::MASK));
    drop(seen);

    // Events kept the shape of what happened, with the value masked.
    let events = harness.store.events(&summary.run).unwrap();
    let printed: Vec<&str> = events
        .iter()
        .filter(|event| event.kind == "step.printed")
        .map(|event| event.payload["text"].as_str().unwrap())
        .collect();
    assert_eq!(printed.len(), 2);
    assert!(printed.iter().all(|text| text.contains(redact::MASK)));
    let refusals = events
        .iter()
        .filter(|event| event.kind == "copy_back.refused")
        .count();
    assert_eq!(
        refusals, 2,
        "the symbolic link and the file holding the value"
    );
    let revision = events
        .iter()
        .find(|event| event.kind == "workspace.revision")
        .unwrap();
    assert_eq!(revision.payload["files"][0]["path"], json!("out/clean.txt"));

    let bytes = harness.database_bytes();
    assert!(!bytes.is_empty());
    for (name, encoded) in encodings(SECRET) {
        assert!(
            !contains(&bytes, &encoded),
            "the {name} form of the secret is in the database"
        );
    }
    assert!(
        contains(&bytes, b"CONN_PAYMENTS_API_KEY") || contains(&bytes, b"payments"),
        "names are kept"
    );
}

#[test]
fn g16_missing_connection_fails_the_run_before_any_step() {
    let harness = Harness::new();
    let source = redact::testing::MemorySource::new();
    source.set_connection_field(ACCOUNT, "crm", "token", "unrelated-value-123456");
    let mut harness = harness;
    harness.source = std::sync::Arc::new(source);
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::Failed);
    let reason = summary.reason.unwrap();
    assert!(reason.contains("payments"), "{reason}");
    assert!(
        harness.executor.calls.lock().unwrap().is_empty(),
        "no step ran"
    );
    assert!(harness.store.attempts(&summary.run).unwrap().is_empty());
}

#[test]
fn g3_two_connection_fields_sharing_a_variable_fail_the_run_before_any_step() {
    let text = r#"name: clash
python: "3.11"
steps:
  - id: first
    explain: Runs first, needs nothing.
    code: |
      def main():
          return 1
  - id: both
    explain: Holds two connections whose fields collide.
    connections: [pay, pay_x]
    code: |
      def main():
          return 1
"#;
    let mut harness = Harness::new();
    let source = redact::testing::MemorySource::new();
    source.set_connection_field(ACCOUNT, "pay", "x_y", "first-value-abcdef123");
    source.set_connection_field(ACCOUNT, "pay_x", "y", "second-value-abcdef123");
    harness.source = std::sync::Arc::new(source);
    let summary = harness
        .engine()
        .start_run(&account(), &workflow(text), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::Failed);
    assert!(summary.reason.unwrap().contains("CONN_PAY_X_Y"));
    assert!(harness.executor.calls.lock().unwrap().is_empty());
}

#[test]
fn g17_printed_text_is_scrubbed_before_it_is_bounded() {
    let mut harness = Harness::new();
    harness.options.max_printed_bytes = 20;
    // The value straddles the cut: cutting first would leave half of it behind.
    harness.executor.then("compute", |_| {
        let mut report = crate::support::succeeded(json!(1));
        report.stdout = format!("0123456789{SECRET}").into_bytes().into();
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
    let events = harness.store.events(&summary.run).unwrap();
    let printed = events
        .iter()
        .find(|event| event.kind == "step.printed")
        .unwrap();
    let text = printed.payload["text"].as_str().unwrap();
    assert!(text.len() <= 20, "{text}");
    assert!(!text.contains(&SECRET[..8]), "{text}");
    assert_eq!(printed.payload["printed_bytes"], json!(10 + SECRET.len()));
}
