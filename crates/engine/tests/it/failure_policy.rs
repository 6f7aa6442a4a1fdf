//! G14 (nothing re-runs a networked step behind your back) and G15 (the supervisor, and a
//! person when there is none), plus G9's `needs_repair`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use engine::{
    CodePhase, Error, ExecutionOutcome, ExecutionReport, PersonDecision, PersonSupervisor,
    RetryPermission, StepError, SupervisorDecision, UNKNOWN_MEANS_STOP,
};
use serde_json::json;
use storage::{AttemptStatus, DecisionKind, DecisionStore, Door, NetworkMode, RunStatus, RunStore};

use crate::support::{
    FETCH, Harness, OFFLINE, ScriptedSupervisor, account, cli, failed_after_code_started, workflow,
};

fn person(note: &str) -> PersonDecision {
    PersonDecision {
        who: cli("alice"),
        door: Door::Cli,
        note: note.into(),
    }
}

/// Retries every failure with the inputs it failed with.
fn always_retry() -> Arc<ScriptedSupervisor> {
    ScriptedSupervisor::new(|view| SupervisorDecision::Retry {
        inputs: view.inputs.get().clone(),
    })
}

#[test]
fn g14_networked_failure_is_attempted_once() {
    let harness = Harness::new();
    harness
        .executor
        .then("fetch", |_| failed_after_code_started("connection reset"));
    let supervisor = always_retry();
    let engine = harness.engine_with(supervisor.clone());
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert_eq!(
        harness.executor.calls_of("fetch").len(),
        1,
        "the supervisor's retry was refused"
    );
    let attempts = harness.store.attempts(&summary.run).unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].status, AttemptStatus::Unknown);
    assert!(
        harness
            .events_kinds(&summary.run)
            .contains(&"supervisor.retry_refused".to_owned())
    );
    // The supervisor was told plainly.
    let seen = supervisor.seen.lock().unwrap();
    assert_eq!(seen[0].status, AttemptStatus::Unknown);
    assert_eq!(seen[0].retry, RetryPermission::Forbidden);
    assert_eq!(seen[0].policy, UNKNOWN_MEANS_STOP);
    assert!(seen[0].policy.contains("Unknown means stop"));
    drop(seen);

    // Only a person's recorded decision, with a note, runs it again.
    let no_note = engine.retry(&summary.run, "fetch", None, person("  "));
    assert!(
        matches!(no_note, Err(Error::NoteRequired { .. })),
        "{no_note:?}"
    );
    let retried = engine
        .retry(
            &summary.run,
            "fetch",
            None,
            person("checked: the provider saw nothing"),
        )
        .unwrap();
    assert_eq!(retried.status, RunStatus::Succeeded);
    assert_eq!(harness.executor.calls_of("fetch").len(), 2);
    let decisions = harness.store.decisions(&summary.run).unwrap();
    assert_eq!(decisions[0].kind, DecisionKind::Retry);
    assert_eq!(decisions[0].attempt, Some(1));
}

#[test]
fn g14_networked_failure_before_code_started_is_failed_not_unknown() {
    let harness = Harness::new();
    harness.executor.then("fetch", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Failed {
                error: StepError {
                    kind: "SetupError".into(),
                    message: "no slot".into(),
                    traceback: String::new(),
                },
                phase: CodePhase::BeforeCode,
            },
            "fake",
        )
    });
    let engine = harness.engine_with(always_retry());
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded);
    let attempts = harness.store.attempts(&summary.run).unwrap();
    assert_eq!(attempts[0].status, AttemptStatus::Failed);
    assert_eq!(harness.executor.calls_of("fetch").len(), 2);
}

#[test]
fn g14_timeout_is_unknown_and_goes_to_a_person() {
    let harness = Harness::new();
    harness.executor.then("summarize", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Unknown {
                reason: "wall time limit".into(),
            },
            "fake",
        )
    });
    let engine = harness.engine_with(always_retry());
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert_eq!(harness.executor.calls_of("summarize").len(), 1);
}

#[test]
fn g14_attempt_is_durably_running_with_network_before_execute() {
    let harness = Harness::new();
    let path = harness.db_path();
    harness.executor.then("fetch", move |request| {
        // Another connection (another process, in effect) already sees the attempt.
        let connection = rusqlite::Connection::open(&path).unwrap();
        let (status, network): (String, String) = connection
            .query_row(
                "SELECT status, network FROM attempts WHERE run_id = ?1 AND step_id = 'fetch'",
                [request.run_id.as_str()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        crate::support::succeeded(json!({"status": status, "network": network}))
    });
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
        .unwrap();
    let fetch = summary
        .steps
        .iter()
        .find(|step| step.step_id == "fetch")
        .unwrap();
    assert_eq!(
        fetch.output,
        Some(json!({"status": "running", "network": "public_egress"}))
    );
}

#[test]
fn g14_networked_step_interrupted_is_unknown_after_restart() {
    let harness = Harness::new();
    // The platform dies while the step runs (the executor never returns).
    harness
        .executor
        .then("fetch", |_| panic!("platform killed mid-step"));
    let engine = harness.engine();
    let crashed = std::panic::catch_unwind(AssertUnwindSafe(|| {
        engine.start_run(&account(), &workflow(FETCH), json!({}), cli("alice"))
    }));
    assert!(crashed.is_err());
    drop(engine);
    let run = storage::RunId::parse("run-1").unwrap();
    assert_eq!(
        harness.store.running_attempts().unwrap()[0].network,
        NetworkMode::PublicEgress
    );

    let restarted = harness.engine();
    let report = restarted.recover().unwrap();
    assert_eq!(
        report.marked_unknown,
        vec![(run.clone(), "fetch".to_owned(), 1)]
    );
    assert_eq!(harness.executor.calls_of("fetch").len(), 1, "never re-run");
    let stored = harness.store.run(&run).unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::NeedsAttention);
    assert_eq!(
        harness.store.attempts(&run).unwrap()[0].status,
        AttemptStatus::Unknown
    );
    // A second recovery does nothing more.
    let again = restarted.recover().unwrap();
    assert!(again.marked_unknown.is_empty() && again.resumed.is_empty());
    assert_eq!(harness.executor.calls_of("fetch").len(), 1);
}

#[test]
fn g14_offline_step_rerun_after_crash() {
    let harness = Harness::new();
    harness
        .executor
        .then("report", |_| panic!("platform killed mid-step"));
    let engine = harness.engine();
    let crashed = std::panic::catch_unwind(AssertUnwindSafe(|| {
        engine.start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
    }));
    assert!(crashed.is_err());
    drop(engine);
    let run = storage::RunId::parse("run-1").unwrap();
    let report = harness.engine().recover().unwrap();
    assert_eq!(
        report.interrupted_offline,
        vec![(run.clone(), "report".to_owned(), 1)]
    );
    assert_eq!(report.resumed, vec![run.clone()]);
    assert_eq!(harness.executor.calls_of("report").len(), 2);
    assert_eq!(
        harness.executor.calls_of("compute").len(),
        1,
        "a succeeded step is not re-run"
    );
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
    let statuses: Vec<AttemptStatus> = harness
        .store
        .attempts(&run)
        .unwrap()
        .iter()
        .map(|attempt| attempt.status)
        .collect();
    assert_eq!(
        statuses,
        vec![
            AttemptStatus::Succeeded,
            AttemptStatus::Failed,
            AttemptStatus::Succeeded
        ]
    );
}

#[test]
fn g15_offline_failure_retried_by_supervisor_with_new_inputs() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| failed_after_code_started("factor too small"));
    let supervisor = ScriptedSupervisor::new(|view| {
        assert_eq!(view.retry, RetryPermission::Allowed);
        SupervisorDecision::Retry {
            inputs: json!({"count": 5, "factor": 2}),
        }
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
    assert_eq!(summary.status, RunStatus::Succeeded);
    let calls = harness.executor.calls_of("compute");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].inputs, json!({"count": 3, "factor": 2}));
    assert_eq!(calls[1].inputs, json!({"count": 5, "factor": 2}));
}

#[test]
fn g15_supervisor_retries_are_bounded() {
    let harness = Harness::new();
    for _ in 0..10 {
        harness
            .executor
            .then("compute", |_| failed_after_code_started("still broken"));
    }
    let engine = harness.engine_with(always_retry());
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert_eq!(
        harness.executor.calls_of("compute").len(),
        3,
        "one attempt and the default two retries"
    );
}

#[test]
fn g15_without_a_model_every_failure_goes_to_a_person_who_can_stop() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| failed_after_code_started("bad"));
    let engine = harness.engine_with(Arc::new(PersonSupervisor));
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert_eq!(harness.executor.calls_of("compute").len(), 1);
    let wrong = engine.retry(&summary.run, "report", None, person("not this one"));
    assert!(
        matches!(wrong, Err(Error::NotTheStoppedStep { .. })),
        "{wrong:?}"
    );
    let stopped = engine.stop(&summary.run, person("not worth it")).unwrap();
    assert_eq!(stopped.status, RunStatus::Stopped);
    let decisions = harness.store.decisions(&summary.run).unwrap();
    assert_eq!(decisions[0].kind, DecisionKind::Stop);
    assert_eq!(decisions[0].note, "not worth it");
}

#[test]
fn g15_person_retry_with_new_inputs() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| failed_after_code_started("bad"));
    let engine = harness.engine();
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    let refused = engine.retry(
        &summary.run,
        "compute",
        Some(json!({"token": "x"})),
        person("try"),
    );
    assert!(
        matches!(refused, Err(Error::RetryInputsRefused { .. })),
        "{refused:?}"
    );
    // Each new input names one of the step's, with its declared type; nothing is decided.
    for (inputs, says) in [
        (json!({"cnt": 5}), "has no input named"),
        (json!({"count": "five"}), "declared as integer"),
    ] {
        match engine.retry(&summary.run, "compute", Some(inputs), person("try")) {
            Err(Error::RetryInputsRefused { reason, .. }) => {
                assert!(reason.contains(says), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert!(harness.store.decisions(&summary.run).unwrap().is_empty());
    let done = engine
        .retry(
            &summary.run,
            "compute",
            Some(json!({"count": 5})),
            person("smaller batch"),
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(
        harness.executor.calls_of("compute")[1].inputs,
        json!({"count": 5, "factor": 2})
    );
}

#[test]
fn g15_supervisor_stop_stops_the_run() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| failed_after_code_started("bad"));
    let engine = harness.engine_with(ScriptedSupervisor::new(|_| SupervisorDecision::Stop {
        reason: "hopeless".into(),
    }));
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::Stopped);
    assert!(summary.reason.unwrap().contains("hopeless"));
}

#[test]
fn g9_needs_repair_waits_for_a_new_revision() {
    let harness = Harness::new();
    harness.executor.then("compute", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "requests".into(),
                detail: "line 1".into(),
            },
            "fake",
        )
    });
    let engine = harness.engine_with(always_retry());
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsRepair);
    assert!(summary.reason.unwrap().contains("requests"));
    assert_eq!(harness.executor.calls_of("compute").len(), 1);
    assert!(matches!(
        engine.retry(&summary.run, "compute", None, person("x")),
        Err(Error::NeedsRepairNotRetry { .. })
    ));
}

/// G23, G15: a gate's approval was for the inputs it was shown. A person's retry of a gated
/// step with new inputs parks the run for a decision on them, as a supervisor's does; the
/// approval then runs the step with the new inputs. A retry with the same inputs does not park.
#[test]
fn g23_a_persons_retry_of_a_gated_step_with_new_inputs_parks_for_a_decision_on_them() {
    const GATED: &str = r#"name: gated
python: "3.11"
steps:
  - id: send!
    explain: Sends the notice, after a person approves it.
    network: public_egress
    inputs: { to: "old@example.com" }
    code: |
      def main(to):
          return to
"#;
    let unknown = |_: &engine::ExecutionRequest<'_>| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Unknown {
                reason: "the connection dropped".into(),
            },
            "fake",
        )
    };
    let harness = Harness::new();
    harness.executor.then("send", unknown);
    let engine = harness.engine();
    let started = engine
        .start_run(&account(), &workflow(GATED), json!({}), cli("alice"))
        .unwrap();
    assert_eq!(started.status, RunStatus::WaitingApproval);
    let approve = |note: &str| engine::Decision {
        kind: engine::GateDecision::Approve,
        who: cli("bob"),
        door: Door::Cli,
        note: note.into(),
    };
    let ran = engine.decide(&started.run, "send", approve("ok")).unwrap();
    assert_eq!(ran.status, RunStatus::NeedsAttention);
    let retried = engine
        .retry_attempt(
            &started.run,
            "send",
            1,
            Some(json!({"to": "new@example.com"})),
            person("the right address"),
        )
        .unwrap();
    assert_eq!(
        retried.status,
        RunStatus::WaitingApproval,
        "new inputs ran on the approval of the old ones"
    );
    assert_eq!(harness.executor.calls_of("send").len(), 1);
    let done = engine
        .decide(&started.run, "send", approve("new address checked"))
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
    let calls = harness.executor.calls_of("send");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].inputs["to"], "new@example.com");

    // The same inputs: the earlier approval stands, the retry runs at once.
    harness.executor.then("send", unknown);
    let again = engine
        .start_run(&account(), &workflow(GATED), json!({}), cli("alice"))
        .unwrap();
    engine.decide(&again.run, "send", approve("ok")).unwrap();
    let plain = engine
        .retry_attempt(&again.run, "send", 1, None, person("try again"))
        .unwrap();
    assert_eq!(plain.status, RunStatus::Succeeded);

    // A retry without inputs of an attempt that ran with new ones runs them again, never the
    // declaration's on the approval of the new ones; on a gate they need a decision again.
    harness.executor.then("send", unknown);
    harness.executor.then("send", unknown);
    let third = engine
        .start_run(&account(), &workflow(GATED), json!({}), cli("alice"))
        .unwrap();
    engine.decide(&third.run, "send", approve("ok")).unwrap();
    let corrected = Some(json!({"to": "new@example.com"}));
    engine
        .retry_attempt(&third.run, "send", 1, corrected, person("address"))
        .unwrap();
    let ran = engine
        .decide(&third.run, "send", approve("new address"))
        .unwrap();
    assert_eq!(ran.status, RunStatus::NeedsAttention, "{ran:?}");
    let before = harness.executor.calls_of("send").len();
    let again = engine
        .retry_attempt(&third.run, "send", 2, None, person("once more"))
        .unwrap();
    assert_eq!(again.status, RunStatus::WaitingApproval, "{again:?}");
    assert_eq!(harness.executor.calls_of("send").len(), before);
    let done = engine
        .decide(&third.run, "send", approve("still right"))
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
    let calls = harness.executor.calls_of("send");
    assert_eq!(calls.last().unwrap().inputs["to"], "new@example.com");
}
