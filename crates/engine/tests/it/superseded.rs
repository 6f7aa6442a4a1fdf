//! G16 across processes: a run parked at a gate and approved from a new process (every CLI
//! command is one, so no secret set is cached) still scrubs a value that was replaced while it
//! waited, and its step gets only the new value.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use engine::{Decision, GateDecision};
use serde_json::json;
use storage::{Door, RunStatus};

use crate::support::{
    ACCOUNT, Harness, REFUND, ROTATED, SECRET, account, cli, contains, succeeded, workflow,
};

fn approve(note: &str) -> Decision {
    Decision {
        kind: GateDecision::Approve,
        who: cli("alice"),
        door: Door::Cli,
        note: note.into(),
    }
}

#[test]
fn g16_fresh_engine_resuming_a_parked_run_scrubs_the_value_replaced_while_it_waited() {
    let harness = Harness::new();
    // The provider answers with the key the run was started with, as an API echoing "key ...
    // was revoked" would; raw, base64, and in the step's output.
    harness.executor.then("send_refund", |_| {
        let mut report = succeeded(json!({"error": format!("key {SECRET} was revoked")}));
        report.stdout = format!("old={SECRET} b64={}\n", STANDARD.encode(SECRET))
            .into_bytes()
            .into();
        report.stderr = format!("new={ROTATED}\n").into_bytes().into();
        report
    });
    let parked = {
        let first_process = harness.engine();
        first_process
            .start_run(
                &account(),
                &workflow(REFUND),
                json!({"ticket_id": "T-1"}),
                cli("alice"),
            )
            .unwrap()
    };
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    // While the run waits, a person changes the connection's value.
    harness
        .source
        .set_connection_field(ACCOUNT, "payments", "api_key", ROTATED);

    let second_process = harness.engine();
    let done = second_process
        .decide(&parked.run, "send_refund", approve("rotated meanwhile"))
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);

    // The step's environment holds only the new value.
    let calls = harness.executor.calls_of("send_refund");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].env,
        vec![("CONN_PAYMENTS_API_KEY".to_owned(), ROTATED.to_owned())]
    );
    // Nothing durable holds the old value, nor the new one, in any form.
    let bytes = harness.database_bytes();
    assert!(!bytes.is_empty());
    for (label, form) in [
        ("old value", SECRET.to_owned()),
        ("old value in base64", STANDARD.encode(SECRET)),
        ("new value", ROTATED.to_owned()),
    ] {
        assert!(
            !contains(&bytes, form.as_bytes()),
            "the database holds the {label}"
        );
    }
    // The output was stored, with the value masked.
    let summary_output = done
        .steps
        .iter()
        .find(|step| step.step_id == "send_refund")
        .and_then(|step| step.output.clone())
        .unwrap();
    let text = summary_output.to_string();
    assert!(text.contains("was revoked"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[test]
fn g16_fresh_engine_resume_scrubs_values_of_a_connection_revoked_while_it_waited() {
    let harness = Harness::new();
    let parked = harness
        .engine()
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    harness.source.revoke(
        ACCOUNT,
        redact::SecretName::ConnectionField {
            alias: "payments".into(),
            field: "api_key".into(),
        },
    );
    // The refused step's reason is recorded with the run's redactor; a note that quotes the
    // old value must come out masked even though the value can no longer be resolved.
    let summary = harness
        .engine()
        .decide(
            &parked.run,
            "send_refund",
            approve(&format!("the key {SECRET} was revoked, go anyway")),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert!(harness.executor.calls_of("send_refund").is_empty());
    assert!(!contains(&harness.database_bytes(), SECRET.as_bytes()));
}
