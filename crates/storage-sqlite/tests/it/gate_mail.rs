//! The approve-link outbox (issue 41): parking writes one row per gate and attempt in its own
//! transaction; a sender claims due rows for a while, alone; what it records needs its claim;
//! a claim that ran out is due again (at least once).

use redact::Redactor;
use serde_json::json;
use storage::mail::{GateMailOutbox, GateMailOutcome, GateMailStatus, NewGateMail};
use storage::{
    AccountId, Actor, AuditAction, AuditLog, NewAuditEntry, NewEvent, RunId, RunStore, Timestamp,
};

use crate::support::{run_secrets, temp_store};

const SECRET: &str = "sk_live_mail_0123456789abcdef";

pub fn mail_of(redactor: &Redactor, attempt: u32) -> NewGateMail {
    NewGateMail {
        account: AccountId::parse("acct").unwrap(),
        attempt,
        content: redactor.scrub_json(&json!({
            "workflow": "refund",
            "step": "approve_refund",
            "explain": format!("Pays with {SECRET}."),
        })),
        people: vec!["ada@example.com".to_owned()],
        remind_after_secs: Some(3600),
    }
}

fn event(redactor: &Redactor) -> NewEvent {
    NewEvent {
        kind: "gate.parked",
        version: 1,
        payload: redactor.scrub_json(&json!({"kind": "gate.parked"})),
        at: Timestamp(10),
    }
}

fn parked_run(store: &storage_sqlite::SqliteStore, id: &str) -> (RunId, Redactor) {
    storage::AccountStore::ensure_account(
        store,
        &storage::Account {
            id: AccountId::parse("acct").unwrap(),
            name: "local".into(),
            created_at: Timestamp(1),
        },
    )
    .unwrap();
    let run =
        test_support::runs::create_run_of(store, &AccountId::parse("acct").unwrap(), id, "refund");
    let redactor = run_secrets(run.as_str(), SECRET).redactor();
    (run, redactor)
}

fn park(store: &dyn RunStore, run: &RunId, redactor: &Redactor, attempt: u32, at: i64) {
    store
        .park(
            run,
            "approve_refund",
            &redactor.scrub_json(&json!({"attempt": attempt})),
            Timestamp(at),
            &event(redactor),
            &mail_of(redactor, attempt),
        )
        .unwrap();
}

fn sent(at: i64, next_due: Option<i64>) -> GateMailOutcome {
    GateMailOutcome::Sent {
        at: Timestamp(at),
        recipients: vec!["ada@example.com".to_owned()],
        note: None,
        next_due: next_due.map(Timestamp),
    }
}

#[test]
fn parking_writes_one_scrubbed_row_per_gate_and_attempt() {
    let (_dir, store) = temp_store();
    let (run, redactor) = parked_run(&store, "run-mail-1");
    park(&store, &run, &redactor, 1, 100);
    park(&store, &run, &redactor, 1, 150);
    park(&store, &run, &redactor, 2, 200);
    let rows = store.gate_mail(&run).unwrap();
    assert_eq!(
        rows.iter().map(|row| row.attempt).collect::<Vec<_>>(),
        [1, 2],
        "a park repeated for one attempt writes no second row"
    );
    let first = &rows[0];
    assert_eq!(first.status, GateMailStatus::Due);
    assert_eq!(first.due_at, Some(Timestamp(100)));
    assert_eq!(first.people, ["ada@example.com"]);
    assert!(!first.content.to_string().contains(SECRET));
    assert_eq!(first.content["workflow"], "refund");
}

#[test]
fn a_mail_scrubbed_for_another_run_is_refused_and_nothing_parks() {
    let (_dir, store) = temp_store();
    let (run, redactor) = parked_run(&store, "run-mail-2");
    let (_other, other_redactor) = parked_run(&store, "run-mail-3");
    let refused = store.park(
        &run,
        "approve_refund",
        &redactor.scrub_json(&json!({"attempt": 1})),
        Timestamp(100),
        &event(&redactor),
        &mail_of(&other_redactor, 1),
    );
    assert!(refused.is_err(), "{refused:?}");
    assert!(store.parked(&run).unwrap().is_none());
    assert!(store.gate_mail(&run).unwrap().is_empty());
}

#[test]
fn a_claim_is_held_alone_until_it_runs_out() {
    let (_dir, store) = temp_store();
    let (run, redactor) = parked_run(&store, "run-mail-4");
    park(&store, &run, &redactor, 1, 100);
    assert!(
        store
            .claim_gate_mail("a", Timestamp(99), Timestamp(200), 10)
            .unwrap()
            .is_empty(),
        "not due yet"
    );
    let claimed = store
        .claim_gate_mail("a", Timestamp(100), Timestamp(200), 10)
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        store
            .claim_gate_mail("b", Timestamp(150), Timestamp(300), 10)
            .unwrap()
            .is_empty(),
        "held by a"
    );
    // a's claim ran out (its process died): b takes the row; a's late outcome writes nothing.
    let taken = store
        .claim_gate_mail("b", Timestamp(200), Timestamp(300), 10)
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert!(
        !store
            .record_gate_mail(claimed[0].id, "a", &sent(210, None), None)
            .unwrap()
    );
    assert_eq!(store.gate_mail(&run).unwrap()[0].mails_sent, 0);
    assert!(
        store
            .record_gate_mail(taken[0].id, "b", &sent(220, Some(3820)), None)
            .unwrap()
    );
    let row = &store.gate_mail(&run).unwrap()[0];
    assert_eq!(
        (row.status, row.mails_sent, row.due_at),
        (GateMailStatus::Due, 1, Some(Timestamp(3820)))
    );
    assert_eq!(row.last_recipients, ["ada@example.com"]);
}

#[test]
fn failures_count_and_are_recorded_with_their_audit_entry_and_a_closed_row_is_never_due() {
    let (_dir, store) = temp_store();
    let (run, redactor) = parked_run(&store, "run-mail-5");
    park(&store, &run, &redactor, 1, 100);
    let id = store
        .claim_gate_mail("a", Timestamp(100), Timestamp(200), 10)
        .unwrap()[0]
        .id;
    let entry = NewAuditEntry {
        account: AccountId::parse("acct").unwrap(),
        run: Some(run.clone()),
        actor: redactor.scrub_fields(Actor::Engine),
        action: AuditAction::GateMail,
        detail: redactor.scrub_json(&json!({"outcome": "failed"})),
        at: Timestamp(110),
    };
    // A sender scrubs what it writes with the account's values: a run's scrub is refused.
    let by_run = GateMailOutcome::Failed {
        at: Timestamp(110),
        delivered: Vec::new(),
        error: redactor.scrub("no"),
        note: None,
        next_due: Some(Timestamp(140)),
    };
    assert!(matches!(
        store.record_gate_mail(id, "a", &by_run, None),
        Err(storage::Error::WrongRedactor { .. })
    ));
    let account_redactor = redact::ScrubSets::new(std::sync::Arc::new(
        crate::support::FixedSource::with_connection_field("payments", "api_key", SECRET),
    ))
    .for_account(&AccountId::parse("acct").unwrap())
    .unwrap();
    let failed = GateMailOutcome::Failed {
        at: Timestamp(110),
        delivered: vec!["ada@example.com".to_owned()],
        error: account_redactor.scrub(&format!("the server said no to {SECRET}")),
        note: None,
        next_due: Some(Timestamp(140)),
    };
    assert!(
        store
            .record_gate_mail(id, "a", &failed, Some(&entry))
            .unwrap()
    );
    let row = &store.gate_mail(&run).unwrap()[0];
    assert_eq!((row.tries, row.status), (1, GateMailStatus::Due));
    assert_eq!(
        row.delivered,
        ["ada@example.com"],
        "a retry skips who got it"
    );
    assert!(!row.last_error.as_deref().unwrap().contains(SECRET));
    let audited = store.audit_entries().unwrap();
    assert!(
        audited
            .iter()
            .any(|entry| entry.action == AuditAction::GateMail.as_str())
    );
    // Closed: never due again.
    let id = store
        .claim_gate_mail("a", Timestamp(140), Timestamp(300), 10)
        .unwrap()[0]
        .id;
    assert!(
        store
            .record_gate_mail(
                id,
                "a",
                &GateMailOutcome::Closed { at: Timestamp(150) },
                None
            )
            .unwrap()
    );
    assert_eq!(
        store.gate_mail(&run).unwrap()[0].status,
        GateMailStatus::Closed
    );
    assert!(
        store
            .claim_gate_mail("a", Timestamp(10_000), Timestamp(20_000), 10)
            .unwrap()
            .is_empty()
    );
}
