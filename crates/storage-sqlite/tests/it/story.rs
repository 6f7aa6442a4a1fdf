//! The conformance story: one account's run told through every trait method, called through
//! the trait objects so that any backend can be dropped in.

use redact::Redactor;
use serde_json::json;
use storage::{
    Account, AccountId, AccountStore, Actor, AttemptFinish, AttemptStatus, AuditLog, DecisionKind,
    DecisionStore, Door, Error, EventLog, NetworkMode, NewAttempt, NewAuditEntry, NewDecision,
    NewEvent, NewRun, RunId, RunStatus, RunStore, Store, Timestamp,
};

use crate::support::{FixedSource, run_secrets, temp_store};

const SECRET: &str = "sk_live_story_0123456789abcdef";

fn new_run(id: &RunId, redactor: &Redactor) -> NewRun {
    NewRun {
        id: id.clone(),
        account: AccountId::parse("acct").unwrap(),
        status: RunStatus::Running,
        workflow_name: redactor.scrub("refund"),
        workflow_file_name: redactor.scrub("refund.yaml"),
        workflow_source: redactor.scrub("name: refund\n"),
        workflow_hash: storage::Sha256Hex::of(b"name: refund\n"),
        inputs: redactor.scrub_json(&json!({"ticket_id": "T-1"})),
        started_by: redactor.scrub_fields(Actor::Cli {
            os_user: "story".into(),
        }),
        created_at: Timestamp(10),
    }
}

/// The audit entry a decision on `run` is recorded with.
fn decided(redactor: &Redactor, run: &RunId, action: storage::AuditAction) -> NewAuditEntry {
    NewAuditEntry {
        account: AccountId::parse("acct").unwrap(),
        run: Some(run.clone()),
        actor: redactor.scrub_fields(Actor::Cli {
            os_user: "alice".into(),
        }),
        action,
        detail: redactor.scrub_json(&json!({"decision": action.as_str()})),
        at: Timestamp(16),
    }
}

fn event(redactor: &Redactor, kind: &'static str) -> NewEvent {
    NewEvent {
        kind,
        version: 1,
        payload: redactor.scrub_json(&json!({"kind": kind})),
        at: Timestamp(10),
    }
}

fn event_at(
    kind: &'static str,
    version: u32,
    payload: redact::Redacted<serde_json::Value>,
    at: Timestamp,
) -> NewEvent {
    NewEvent {
        kind,
        version,
        payload,
        at,
    }
}

fn story(store: &dyn Store) {
    let accounts: &dyn AccountStore = store;
    let runs: &dyn RunStore = store;
    let events: &dyn EventLog = store;
    let decisions: &dyn DecisionStore = store;
    let audit: &dyn AuditLog = store;

    // Accounts: created on first use, the same account on every later use.
    let local = Account {
        id: AccountId::parse("acct").unwrap(),
        name: "local".into(),
        created_at: Timestamp(1),
    };
    assert_eq!(accounts.ensure_account(&local).unwrap(), local);
    let later = Account {
        created_at: Timestamp(99),
        ..local.clone()
    };
    assert_eq!(accounts.ensure_account(&later).unwrap(), local);
    assert!(matches!(
        accounts.create_account(&local),
        Err(Error::AlreadyExists { .. })
    ));
    let other = Account {
        id: AccountId::parse("other").unwrap(),
        name: "other".into(),
        created_at: Timestamp(2),
    };
    accounts.create_account(&other).unwrap();
    assert_eq!(accounts.account(&other.id).unwrap(), Some(other.clone()));
    assert_eq!(
        accounts
            .account(&AccountId::parse("nobody").unwrap())
            .unwrap(),
        None
    );
    assert_eq!(accounts.accounts().unwrap(), vec![local.clone(), other]);

    // Runs.
    let run = RunId::parse("run-1").unwrap();
    let secrets = run_secrets(run.as_str(), SECRET);
    let redactor = secrets.redactor();
    runs.create_run(&new_run(&run, &redactor), &event(&redactor, "run.created"))
        .unwrap();
    assert!(matches!(
        runs.create_run(&new_run(&run, &redactor), &event(&redactor, "run.created")),
        Err(Error::AlreadyExists { .. })
    ));
    let stored = runs.run(&run).unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(stored.workflow_file_name, "refund.yaml");
    assert_eq!(runs.runs(&local.id).unwrap().len(), 1);
    assert_eq!(
        runs.runs_with_status(&[RunStatus::Running]).unwrap().len(),
        1
    );
    assert!(
        runs.runs_with_status(&[RunStatus::Queued])
            .unwrap()
            .is_empty()
    );

    // A value scrubbed for another run is refused by every writer.
    let foreign = run_secrets("run-2", SECRET).redactor();
    assert!(matches!(
        events.append(
            &run,
            &event_at("x", 1, foreign.scrub_json(&json!({})), Timestamp(11))
        ),
        Err(Error::WrongRedactor { .. })
    ));

    // Events: 1, 2, 3, ... (the first written with the run) and the secret is gone; each
    // keeps the journal version it was written in.
    for (expected, version) in [(2, 1), (3, 2)] {
        let payload = redactor.scrub_json(&json!({"printed": format!("key={SECRET}")}));
        assert_eq!(
            events
                .append(
                    &run,
                    &event_at("step.printed", version, payload, Timestamp(12))
                )
                .unwrap(),
            expected
        );
    }
    let log = events.events(&run).unwrap();
    assert_eq!(
        log.iter().map(|event| event.seq).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(
        log.iter().map(|event| event.version).collect::<Vec<_>>(),
        vec![1, 1, 2]
    );
    assert_eq!(log[0].kind, "run.created");
    assert!(!log[1].payload.to_string().contains(SECRET));
    assert!(matches!(
        events.append(
            &RunId::parse("missing").unwrap(),
            &event_at(
                "x",
                1,
                run_secrets("missing", SECRET)
                    .redactor()
                    .scrub_json(&json!({})),
                Timestamp(1)
            ),
        ),
        Err(Error::UnknownRun { .. })
    ));

    // Attempts: running (with its network mode) before the sandbox starts, then finished.
    let attempt = NewAttempt {
        run: run.clone(),
        step_id: storage::StepId::parse("send_refund").unwrap(),
        attempt: 1,
        network: NetworkMode::PublicEgress,
        inputs: redactor.scrub_json(&json!({"request": {"amount": 1}})),
        started_at: Timestamp(13),
    };
    runs.begin_attempt(&attempt, &event(&redactor, "attempt.started"))
        .unwrap();
    assert!(matches!(
        runs.begin_attempt(&attempt, &event(&redactor, "attempt.started")),
        Err(Error::AlreadyExists { .. })
    ));
    let running = runs.running_attempts().unwrap();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].network, NetworkMode::PublicEgress);
    assert_eq!(running[0].status, AttemptStatus::Running);
    let finish = AttemptFinish {
        status: AttemptStatus::Succeeded,
        finished_at: Timestamp(14),
        interpreter_version: Some(redactor.scrub("3.11.2")),
        backend: Some(redactor.scrub("local")),
        isolation_notes: Some(redactor.scrub("landlock unavailable")),
        output: Some(redactor.scrub_json(&json!({"ok": true, "echo": SECRET}))),
        reason: None,
    };
    runs.finish_attempt(
        &run,
        "send_refund",
        1,
        &finish,
        &event(&redactor, "attempt.finished"),
    )
    .unwrap();
    assert!(matches!(
        runs.finish_attempt(
            &run,
            "send_refund",
            1,
            &finish,
            &event(&redactor, "attempt.finished")
        ),
        Err(Error::AttemptNotRunning { .. })
    ));
    assert!(runs.running_attempts().unwrap().is_empty());
    let attempts = runs.attempts(&run).unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].status, AttemptStatus::Succeeded);
    assert_eq!(attempts[0].interpreter_version.as_deref(), Some("3.11.2"));
    assert_eq!(
        attempts[0].isolation_notes.as_deref(),
        Some("landlock unavailable")
    );
    assert_eq!(
        attempts[0].output,
        Some(json!({"ok": true, "echo": redact::MASK}))
    );
    assert_eq!(attempts[0].finished_at, Some(Timestamp(14)));

    // Parking at a gate.
    runs.set_run_status(
        &run,
        RunStatus::WaitingApproval,
        Timestamp(15),
        &event(&redactor, "run.status"),
    )
    .unwrap();
    let state = redactor
        .scrub_json(&json!({"outputs": {}, "credential_names": ["connection:payments.api_key"]}));
    runs.park(
        &run,
        "approve_refund",
        &state,
        Timestamp(15),
        &event(&redactor, "gate.parked"),
        &crate::gate_mail::mail_of(&redactor, 1),
    )
    .unwrap();
    let parked = runs.parked(&run).unwrap().unwrap();
    assert_eq!(parked.step_id, "approve_refund");
    assert_eq!(parked.state, *state.get());

    // Decisions: a gate is decided once.
    let approve = NewDecision {
        run: run.clone(),
        step_id: Some(storage::StepId::parse("approve_refund").unwrap()),
        attempt: Some(1),
        kind: DecisionKind::Approve,
        who: redactor.scrub_fields(Actor::Cli {
            os_user: "alice".into(),
        }),
        door: Door::Cli,
        note: redactor.scrub("looks right"),
        at: Timestamp(16),
    };
    let recorded = decisions
        .record_decision(
            &approve,
            &event(&redactor, "decision"),
            &decided(&redactor, &run, storage::AuditAction::RunApprove),
        )
        .unwrap();
    assert_eq!(recorded.note, "looks right");
    let reject = NewDecision {
        kind: DecisionKind::Reject,
        ..approve.clone()
    };
    assert!(matches!(
        decisions.record_decision(
            &reject,
            &event(&redactor, "decision"),
            &decided(&redactor, &run, storage::AuditAction::RunReject)
        ),
        Err(Error::AlreadyDecided { .. })
    ));
    let stop = NewDecision {
        step_id: None,
        attempt: None,
        kind: DecisionKind::Stop,
        ..approve
    };
    decisions
        .record_decision(
            &stop,
            &event(&redactor, "decision"),
            &decided(&redactor, &run, storage::AuditAction::RunStop),
        )
        .unwrap();
    let all = decisions.decisions(&run).unwrap();
    assert_eq!(
        all.iter().map(|decision| decision.kind).collect::<Vec<_>>(),
        vec![DecisionKind::Approve, DecisionKind::Stop]
    );
    assert_eq!(
        all[0].who,
        Actor::Cli {
            os_user: "alice".into()
        }
    );
    assert_eq!(all[0].door, Door::Cli);
    runs.clear_parked(&run).unwrap();
    assert_eq!(runs.parked(&run).unwrap(), None);

    // A terminal run stays terminal.
    runs.set_run_status(
        &run,
        RunStatus::Stopped,
        Timestamp(17),
        &event(&redactor, "run.status"),
    )
    .unwrap();
    assert!(matches!(
        runs.set_run_status(
            &run,
            RunStatus::Running,
            Timestamp(18),
            &event(&redactor, "run.status")
        ),
        Err(Error::StatusConflict { .. })
    ));
    assert_eq!(runs.run(&run).unwrap().unwrap().updated_at, Timestamp(17));

    // The audit log: run-scoped and account-scoped entries, chained.
    audit
        .append_audit(&NewAuditEntry {
            account: local.id.clone(),
            run: Some(run.clone()),
            actor: redactor.scrub_fields(Actor::Cli {
                os_user: "alice".into(),
            }),
            action: storage::AuditAction::RunApprove,
            detail: redactor.scrub_json(&json!({"note": "looks right"})),
            at: Timestamp(16),
        })
        .unwrap();
    let source = FixedSource::with_connection_field("payments", "api_key", SECRET);
    let account_redactor = redact::ScrubSets::new(std::sync::Arc::new(source))
        .for_account(&AccountId::parse("acct").unwrap())
        .unwrap();
    let second = audit
        .append_audit(&NewAuditEntry {
            account: local.id.clone(),
            run: None,
            actor: account_redactor.scrub_fields(Actor::Person {
                id: "p1".into(),
                name: "Alice".into(),
            }),
            action: storage::AuditAction::VaultSecretSet,
            detail: account_redactor.scrub_json(&json!({"name": "payments", "pasted": SECRET})),
            at: Timestamp(20),
        })
        .unwrap();
    // The two decisions recorded above wrote their entries with them; the refused one none.
    assert_eq!(second.seq, 4);
    assert!(!second.detail.to_string().contains(SECRET));
    assert!(matches!(
        audit.append_audit(&NewAuditEntry {
            account: local.id.clone(),
            run: None,
            actor: redactor.scrub_fields(Actor::Engine),
            action: storage::AuditAction::WorkspaceWrite,
            detail: redactor.scrub_json(&json!({})),
            at: Timestamp(21),
        }),
        Err(Error::WrongRedactor { .. })
    ));
    assert_eq!(audit.audit_entries().unwrap().len(), 4);
    assert_eq!(audit.verify_account_audit(&local.id).unwrap(), Ok(4));
    assert_eq!(audit.verify_audit().unwrap().first_break(), None);
}

#[test]
fn story_through_trait_objects_sqlite() {
    let (_dir, store) = temp_store();
    story(&store);
}

#[test]
fn story_leaves_no_secret_in_the_database_file() {
    let (dir, store) = temp_store();
    story(&store);
    drop(store);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes
                .windows(SECRET.len())
                .any(|window| window == SECRET.as_bytes())
        );
    }
}

#[test]
fn g25_audit_tampering_breaks_the_chain() {
    let (_dir, store) = temp_store();
    story(&store);
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    // The triggers forbid edits; a tamperer with file access removes them first.
    connection
        .execute_batch("DROP TRIGGER audit_is_append_only_update")
        .unwrap();
    assert!(
        connection
            .execute("DELETE FROM audit_log WHERE seq = 1", [])
            .is_err()
    );
    connection
        .execute(
            "UPDATE audit_log SET action = 'nothing.happened' WHERE seq = 1",
            [],
        )
        .unwrap();
    let verification = store.verify_audit().unwrap();
    let broken = verification.first_break().unwrap();
    assert_eq!(broken.seq, 1);
}

#[test]
fn events_cannot_be_edited_or_removed() {
    let (_dir, store) = temp_store();
    story(&store);
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    assert!(
        connection
            .execute("UPDATE events SET kind = 'x'", [])
            .is_err()
    );
    assert!(connection.execute("DELETE FROM events", []).is_err());
}

#[test]
fn concurrent_appends_stay_gapless() {
    let (_dir, store) = temp_store();
    story(&store);
    let run = RunId::parse("run-1").unwrap();
    let redactor = run_secrets(run.as_str(), SECRET).redactor();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..25 {
                    store
                        .append(
                            &run,
                            &event_at("tick", 1, redactor.scrub_json(&json!({})), Timestamp(30)),
                        )
                        .unwrap();
                }
            });
        }
    });
    let seqs: Vec<u64> = store
        .events(&run)
        .unwrap()
        .iter()
        .map(|event| event.seq)
        .collect();
    let before = seqs.len() - 100;
    assert_eq!(seqs, (1..=(before as u64 + 100)).collect::<Vec<u64>>());
}

#[test]
fn a_state_change_and_its_event_are_written_together() {
    let (_dir, store) = temp_store();
    story(&store);
    let run = RunId::parse("run-1").unwrap();
    let redactor = run_secrets(run.as_str(), SECRET).redactor();
    let before = store.events(&run).unwrap().len();
    // A refused change (the run is terminal) leaves no event behind.
    assert!(
        store
            .set_run_status(
                &run,
                RunStatus::Running,
                Timestamp(40),
                &event(&redactor, "run.status")
            )
            .is_err()
    );
    assert_eq!(store.events(&run).unwrap().len(), before);
    // An event scrubbed for another run refuses the whole change.
    let foreign = run_secrets("run-9", SECRET).redactor();
    let attempt = NewAttempt {
        run: run.clone(),
        step_id: storage::StepId::parse("late").unwrap(),
        attempt: 1,
        network: NetworkMode::None,
        inputs: redactor.scrub_json(&json!({})),
        started_at: Timestamp(41),
    };
    assert!(matches!(
        store.begin_attempt(&attempt, &event(&foreign, "attempt.started")),
        Err(Error::WrongRedactor { .. })
    ));
    assert!(
        store
            .attempts(&run)
            .unwrap()
            .iter()
            .all(|attempt| attempt.step_id != "late")
    );
}

/// A person's retry or stop moves the run out of waiting for a person in the decision's own
/// transaction (review finding 4 of issue 38): two doors in two processes that both saw the
/// run wait record one decision, and the other is refused with nothing recorded.
#[test]
fn a_decision_that_moves_a_run_lands_only_while_the_run_is_where_it_was_seen() {
    let (_dir, store) = temp_store();
    let run = RunId::parse("run-2").unwrap();
    let redactor = run_secrets(run.as_str(), SECRET).redactor();
    store
        .ensure_account(&Account {
            id: AccountId::parse("acct").unwrap(),
            name: "local".into(),
            created_at: Timestamp(1),
        })
        .unwrap();
    store
        .create_run(&new_run(&run, &redactor), &event(&redactor, "run.started"))
        .unwrap();
    store
        .set_run_status(
            &run,
            RunStatus::NeedsAttention,
            Timestamp(11),
            &event(&redactor, "run.status"),
        )
        .unwrap();
    let retry = NewDecision {
        run: run.clone(),
        step_id: Some(storage::StepId::parse("charge").unwrap()),
        attempt: Some(1),
        kind: DecisionKind::Retry,
        who: redactor.scrub_fields(Actor::Cli {
            os_user: "alice".into(),
        }),
        door: Door::Cli,
        note: redactor.scrub("once more"),
        at: Timestamp(12),
    };
    let waiting = [RunStatus::NeedsAttention];
    let first = store.record_decision_moving(
        &retry,
        &event(&redactor, "decision"),
        &decided(&redactor, &run, storage::AuditAction::RunRetry),
        &waiting,
        RunStatus::Running,
        &event(&redactor, "run.status"),
    );
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(store.run(&run).unwrap().unwrap().status, RunStatus::Running);
    let events_before = store.events(&run).unwrap().len();
    let second = store.record_decision_moving(
        &retry,
        &event(&redactor, "decision"),
        &decided(&redactor, &run, storage::AuditAction::RunRetry),
        &waiting,
        RunStatus::Running,
        &event(&redactor, "run.status"),
    );
    assert!(
        matches!(second, Err(Error::StatusConflict { .. })),
        "{second:?}"
    );
    assert_eq!(
        store.decisions(&run).unwrap().len(),
        1,
        "nothing more recorded"
    );
    assert_eq!(store.events(&run).unwrap().len(), events_before);
}
