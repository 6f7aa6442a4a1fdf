//! G23 (a gate parks the run; a recorded decision lets it go on) and G18 (parked state has
//! names, never values; a resumed run looks values up again).

use engine::{Decision, Error, GateDecision};
use redact::SecretName;
use serde_json::json;
use storage::{AttemptStatus, AuditLog, DecisionKind, DecisionStore, Door, RunStatus, RunStore};

use crate::support::{
    Harness, REFUND, ROTATED, SECRET, account, cli, contains, succeeded, workflow,
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
fn g23_gate_parks_and_approve_records_note() {
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
    assert_eq!(parked.waiting_at.as_deref(), Some("send_refund"));
    assert!(
        harness.executor.calls_of("send_refund").is_empty(),
        "nothing runs past a gate"
    );
    assert_eq!(harness.executor.calls_of("build_request").len(), 1);

    let wrong_step = engine.decide(&parked.run, "confirm", approve("wrong step"));
    assert!(
        matches!(wrong_step, Err(Error::NotParkedAt { .. })),
        "{wrong_step:?}"
    );

    let done = engine
        .decide(
            &parked.run,
            "send_refund",
            approve("amount checked against the ticket"),
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(harness.executor.calls_of("send_refund").len(), 1);
    let decisions = harness.store.decisions(&parked.run).unwrap();
    assert_eq!(decisions.len(), 1);
    let decision = &decisions[0];
    assert_eq!(decision.kind, DecisionKind::Approve);
    assert_eq!(decision.who, cli("alice"));
    assert_eq!(decision.door, Door::Cli);
    assert_eq!(decision.note, "amount checked against the ticket");
    assert_eq!(decision.step_id.as_deref(), Some("send_refund"));
    assert!(decision.at.0 > 0);
    assert!(
        harness
            .events_kinds(&parked.run)
            .contains(&"decision".to_owned())
    );
    // The decision is in the audit log too, and the chain holds.
    let audit = harness.store.audit_entries().unwrap();
    assert!(
        audit
            .iter()
            .any(|entry| entry.action == "run.approve" && entry.run.as_ref() == Some(&parked.run))
    );
    assert_eq!(harness.store.verify_audit().unwrap().first_break(), None);

    // A decided gate cannot be decided again.
    let again = engine.decide(&parked.run, "send_refund", approve("twice"));
    assert!(
        matches!(again, Err(Error::NotWaitingApproval { .. })),
        "{again:?}"
    );
}

#[test]
fn g23_reject_stops() {
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
    let decision = Decision {
        kind: GateDecision::Reject,
        who: cli("bob"),
        door: Door::Console,
        note: "wrong amount".into(),
    };
    let stopped = engine.decide(&parked.run, "send_refund", decision).unwrap();
    assert_eq!(stopped.status, RunStatus::Stopped);
    assert!(harness.executor.calls_of("send_refund").is_empty());
    assert!(harness.executor.calls_of("confirm").is_empty());
    let decisions = harness.store.decisions(&parked.run).unwrap();
    assert_eq!(decisions[0].kind, DecisionKind::Reject);
    assert_eq!(decisions[0].door, Door::Console);
    assert_eq!(harness.store.parked(&parked.run).unwrap(), None);
}

#[test]
fn g23_a_gate_is_decided_once_even_by_two_engines() {
    let harness = Harness::new();
    let first = harness.engine();
    let second = harness.engine();
    let parked = first
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    let reject = Decision {
        kind: GateDecision::Reject,
        who: cli("bob"),
        door: Door::Api,
        note: "no".into(),
    };
    first
        .decide(&parked.run, "send_refund", approve("yes"))
        .unwrap();
    assert!(second.decide(&parked.run, "send_refund", reject).is_err());
    assert_eq!(harness.store.decisions(&parked.run).unwrap().len(), 1);
}

#[test]
fn g18_parked_state_has_no_values() {
    let harness = Harness::new();
    // The step before the gate returns the credential: what is parked must not hold it.
    harness.executor.then("build_request", |_| {
        succeeded(json!({"echo": SECRET, "ticket": "T-1"}))
    });
    let engine = harness.engine();
    let parked = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    let state = harness.store.parked(&parked.run).unwrap().unwrap();
    let text = state.state.to_string();
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(
        state.state["outputs"]["build_request"]["echo"],
        json!(redact::MASK)
    );
    assert_eq!(
        state.state["outputs"]["build_request"]["ticket"],
        json!("T-1")
    );
    assert_eq!(
        state.state["credential_names"],
        json!(["connection:payments.api_key"])
    );
    assert!(!contains(&harness.database_bytes(), SECRET.as_bytes()));
}

#[test]
fn g18_resume_after_secret_changed_uses_new_value() {
    let harness = Harness::new();
    // After approval the step prints both the old and the new value: both are scrubbed.
    harness.executor.then("send_refund", |_| {
        let mut report = succeeded(json!({"sent": true}));
        report.stdout = format!("old={SECRET} new={ROTATED}").into_bytes().into();
        report
    });
    let engine = harness.engine();
    let parked = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    harness
        .source
        .set_connection_field(crate::support::ACCOUNT, "payments", "api_key", ROTATED);
    let done = engine
        .decide(&parked.run, "send_refund", approve("rotated meanwhile"))
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    let call = &harness.executor.calls_of("send_refund")[0];
    assert_eq!(
        call.env,
        vec![("CONN_PAYMENTS_API_KEY".to_owned(), ROTATED.to_owned())]
    );
    let bytes = harness.database_bytes();
    assert!(!contains(&bytes, SECRET.as_bytes()));
    assert!(!contains(&bytes, ROTATED.as_bytes()));
}

#[test]
fn g18_resume_in_a_new_process_looks_values_up_again() {
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
    harness
        .source
        .set_connection_field(crate::support::ACCOUNT, "payments", "api_key", ROTATED);
    let fresh = harness.engine();
    assert_eq!(
        fresh
            .decide(&parked.run, "send_refund", approve("ok"))
            .unwrap()
            .status,
        RunStatus::Succeeded
    );
    assert_eq!(
        harness.executor.calls_of("send_refund")[0].env[0].1,
        ROTATED
    );
}

#[test]
fn g20_connection_revoked_while_waiting_makes_the_step_refused() {
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
    harness.source.revoke(
        crate::support::ACCOUNT,
        SecretName::ConnectionField {
            alias: "payments".into(),
            field: "api_key".into(),
        },
    );
    let summary = engine
        .decide(&parked.run, "send_refund", approve("go"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert!(
        harness.executor.calls_of("send_refund").is_empty(),
        "a refused step never starts"
    );
    let attempts = harness.store.attempts(&parked.run).unwrap();
    let refused = attempts
        .iter()
        .find(|attempt| attempt.step_id == "send_refund")
        .unwrap();
    assert_eq!(refused.status, AttemptStatus::Refused);
    let reason = refused.reason.as_deref().unwrap();
    assert!(reason.contains("payments"), "{reason}");
}

/// G23, G24: the engine alone derives the gate a run waits at, with the attempt its decision
/// is recorded against (the step's next attempt); the decision names that very attempt.
#[test]
fn g24_the_engine_derives_the_pending_gate_and_its_decision_names_that_attempt() {
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
    let gate = engine.pending_gate(&parked.run).unwrap().unwrap();
    assert_eq!(
        gate,
        storage::GateRef {
            account: account(),
            run: parked.run.clone(),
            step: storage::StepId::parse("send_refund").unwrap(),
            attempt: 1,
        }
    );
    engine
        .decide(&parked.run, "send_refund", approve("checked"))
        .unwrap();
    let decisions = harness.store.decisions(&parked.run).unwrap();
    assert_eq!(decisions[0].attempt, Some(gate.attempt));
    assert_eq!(engine.pending_gate(&parked.run).unwrap(), None);
}
