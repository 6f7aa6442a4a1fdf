//! G1 (only a validated workflow runs; parsed again right before the run) and G4 (run-time
//! inputs with a credential key are refused).

use engine::{Decision, Error, GateDecision};
use serde_json::json;
use storage::{Door, RunStatus, RunStore};

use crate::support::{Harness, OFFLINE, REFUND, account, cli, workflow};

#[test]
fn g4_runtime_input_with_token_key_refused() {
    let harness = Harness::new();
    let engine = harness.engine();
    for inputs in [
        json!({"count": 1, "token": "abc"}),
        json!({"count": 1, "extra": {"nested": [{"apiKey": "abc"}]}}),
        json!({"count": 1, "API-KEY": "abc"}),
        json!({"count": 1, "api\u{200b}key": "abc"}),
    ] {
        let refused =
            engine.start_run(&account(), &workflow(OFFLINE), inputs.clone(), cli("alice"));
        assert!(
            matches!(refused, Err(Error::ForbiddenInputKeys { .. })),
            "{inputs}: {refused:?}"
        );
    }
    assert!(
        harness.store.runs(&account()).unwrap().is_empty(),
        "a refused run is never created"
    );
    assert!(harness.executor.calls.lock().unwrap().is_empty());
}

#[test]
fn g4_runtime_inputs_must_match_declarations() {
    let harness = Harness::new();
    let engine = harness.engine();
    for inputs in [
        json!({}),
        json!({"count": "seven"}),
        json!({"count": 1, "other": 2}),
        json!([1]),
    ] {
        let refused =
            engine.start_run(&account(), &workflow(OFFLINE), inputs.clone(), cli("alice"));
        assert!(
            matches!(refused, Err(Error::InputMismatch { .. })),
            "{inputs}: {refused:?}"
        );
    }
    assert!(harness.store.runs(&account()).unwrap().is_empty());
}

#[test]
fn g4_supervisor_retry_inputs_with_credential_key_are_refused() {
    let harness = Harness::new();
    harness.executor.then("compute", |_| {
        crate::support::failed_after_code_started("boom")
    });
    let supervisor =
        crate::support::ScriptedSupervisor::new(|_| engine::SupervisorDecision::Retry {
            inputs: json!({"count": 2, "factor": {"Secret": "x"}}),
        });
    let engine = harness.engine_with(supervisor);
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 2}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert_eq!(
        harness.executor.calls_of("compute").len(),
        1,
        "the retry never reached the executor"
    );
    // Refused by the engine before any attempt: the refusal is an event naming the key.
    let attempts = harness.store.attempts(&summary.run).unwrap();
    assert_eq!(attempts.len(), 1);
    let refused = engine
        .journal(&summary.run)
        .unwrap()
        .into_iter()
        .find_map(|entry| match entry.event {
            engine::journal::Event::SupervisorRetryRefused(refused) => Some(refused),
            _ => None,
        })
        .unwrap();
    assert!(
        refused.reason.contains("forbidden keys"),
        "{}",
        refused.reason
    );
    assert!(
        refused.reason.contains("/factor/Secret"),
        "{}",
        refused.reason
    );
    assert!(!summary.reason.unwrap().contains("\"x\""));
}

#[test]
fn g1_run_records_the_exact_source_and_its_hash() {
    let harness = Harness::new();
    let engine = harness.engine();
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 2}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded);
    let run = harness.store.run(&summary.run).unwrap().unwrap();
    assert_eq!(run.workflow_source, OFFLINE);
    use sha2_check::hex_sha256;
    assert_eq!(run.workflow_hash, hex_sha256(OFFLINE));
    assert_eq!(
        harness.executor.calls_of("report")[0].inputs,
        json!({"value": {"step": "compute"}})
    );
}

#[test]
fn g1_stored_workflow_is_parsed_again_before_a_resumed_run_goes_on() {
    let harness = Harness::new();
    let engine = harness.engine();
    let parked = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    // Someone edits the stored definition while the run waits: it no longer validates.
    let connection = rusqlite::Connection::open(harness.db_path()).unwrap();
    connection
        .execute(
            "UPDATE runs SET workflow_source = replace(workflow_source, 'network: public_egress', 'network: everywhere') WHERE id = ?1",
            [parked.run.as_str()],
        )
        .unwrap();
    let decision = Decision {
        kind: GateDecision::Approve,
        who: cli("alice"),
        door: Door::Cli,
        note: "ok".into(),
    };
    let refused = engine.decide(&parked.run, "send_refund", decision);
    assert!(
        matches!(refused, Err(Error::StoredWorkflowInvalid { .. })),
        "{refused:?}"
    );
    assert!(harness.executor.calls_of("send_refund").is_empty());
}

#[test]
fn g1_stored_workflow_changed_but_still_valid_is_refused() {
    let harness = Harness::new();
    let engine = harness.engine();
    let parked = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    // A still-valid edit (the networked step loses its network) is not what was confirmed.
    let connection = rusqlite::Connection::open(harness.db_path()).unwrap();
    connection
        .execute(
            "UPDATE runs SET workflow_source = replace(workflow_source, 'network: public_egress', 'network: none') WHERE id = ?1",
            [parked.run.as_str()],
        )
        .unwrap();
    let decision = Decision {
        kind: GateDecision::Approve,
        who: cli("alice"),
        door: Door::Cli,
        note: "ok".into(),
    };
    let refused = engine.decide(&parked.run, "send_refund", decision);
    assert!(
        matches!(refused, Err(Error::StoredWorkflowInvalid { .. })),
        "{refused:?}"
    );
    assert!(harness.executor.calls_of("send_refund").is_empty());
}

/// SHA-256 of a text, as the engine records it.
mod sha2_check {
    pub fn hex_sha256(text: &str) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    }
}
