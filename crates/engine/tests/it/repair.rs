//! G9, an accepted repair: only the step's code changes (the engine checks it again), the run
//! records that it runs the new version from that step, the outputs before it stand, and the
//! step runs again with the new code.

use engine::journal::Event;
use engine::{
    AcceptedRepair, Decision, Error, ExecutionOutcome, ExecutionReport, GateDecision,
    PersonDecision,
};
use serde_json::json;
use storage::{AttemptStatus, DecisionKind, DecisionStore, Door, RunStatus, RunStore};

use crate::support::{Harness, OFFLINE, REFUND, account, cli, workflow};

fn repaired(text: &str) -> AcceptedRepair {
    AcceptedRepair {
        step: "report".into(),
        workflow: workflow(text),
        version: 2,
        provider: "fake".into(),
        model: "fake-assistant".into(),
        by: PersonDecision {
            who: cli("alice"),
            door: Door::Cli,
            note: "stdlib only now".into(),
        },
    }
}

/// OFFLINE whose `report` needs repair (a third-party import) after `compute` succeeded.
fn needing_repair() -> (Harness, engine::Engine, storage::RunId) {
    let harness = Harness::new();
    harness.executor.then("report", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "requests".into(),
                detail: "line 1".into(),
            },
            "fake",
        )
    });
    let engine = harness.engine();
    // Saved first: a repair is asked for only when it could be accepted, which needs the
    // workspace's current version to be the text the run runs.
    let saved = engine.save_workflow_version(
        &account(),
        "offline",
        OFFLINE,
        &workspace::Author::Person { id: "alice".into() },
        "workflow offline: the text the run runs",
    );
    assert_eq!(saved.unwrap().number, 1);
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("a"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsRepair);
    let run = summary.run;
    (harness, engine, run)
}

const NEW_CODE: &str = "      def main(value):\n          return {\"value\": value}\n";
const OLD_CODE: &str = "      def main(value):\n          return value\n";

#[test]
fn g9_an_accepted_repair_runs_the_new_version_from_that_step_and_earlier_outputs_stand() {
    let (harness, engine, run) = needing_repair();
    let text = OFFLINE.replace(OLD_CODE, NEW_CODE);
    assert_ne!(text, OFFLINE);
    let done = engine.retry_repaired(&run, repaired(&text)).unwrap();
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
    assert_eq!(
        harness.executor.calls_of("compute").len(),
        1,
        "its output stands"
    );
    let reports = harness.executor.calls_of("report");
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1].inputs, json!({"value": {"step": "compute"}}));
    let record = harness.store.run(&run).unwrap().unwrap();
    assert_eq!(record.workflow_source, text, "the run runs the new version");
    let accepted = engine
        .journal(&run)
        .unwrap()
        .into_iter()
        .find_map(|entry| match entry.event {
            Event::RepairAccepted(accepted) => Some(accepted),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (accepted.step.as_str(), accepted.attempt, accepted.version),
        ("report", 1, 2)
    );
    assert_eq!(accepted.provider, "fake");
    assert_eq!(accepted.note, "stdlib only now");
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, DecisionKind::Retry);
    assert_eq!(decisions[0].attempt, Some(1));
    let attempts = harness.store.attempts(&run).unwrap();
    assert_eq!(attempts[1].status, AttemptStatus::NeedsRepair);
    assert_eq!(attempts[2].status, AttemptStatus::Succeeded);
}

#[test]
fn g9_a_repair_that_changes_more_than_the_steps_code_is_refused_and_nothing_runs() {
    let (harness, engine, run) = needing_repair();
    for (text, says) in [
        (
            OFFLINE.replace(
                "    explain: Reports it.\n",
                "    explain: Reports it.\n    network: public_egress\n",
            ),
            "step `report`: `network`",
        ),
        (
            OFFLINE.replace("factor: 2 }", "factor: 3 }"),
            "step `compute`: `inputs`",
        ),
        (
            OFFLINE.replace(
                "          return count * factor\n",
                "          return count * factor + 1\n",
            ),
            "step `compute`: `code`",
        ),
    ] {
        let refused = engine.retry_repaired(&run, repaired(&text));
        match refused {
            Err(Error::RepairRefused { reason, .. }) => assert!(reason.contains(says), "{reason}"),
            other => panic!("{says}: {other:?}"),
        }
    }
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::NeedsRepair
    );
    assert_eq!(harness.executor.calls_of("report").len(), 1);
    // Another step, or a run that does not need repair, is refused too.
    let mut other = repaired(&OFFLINE.replace(OLD_CODE, NEW_CODE));
    other.step = "compute".into();
    assert!(matches!(
        engine.retry_repaired(&run, other),
        Err(Error::RepairRefused { .. })
    ));
    let blank = AcceptedRepair {
        by: PersonDecision {
            note: " ".into(),
            ..repaired(OFFLINE).by
        },
        ..repaired(&OFFLINE.replace(OLD_CODE, NEW_CODE))
    };
    assert!(matches!(
        engine.retry_repaired(&run, blank),
        Err(Error::NoteRequired { .. })
    ));
}

#[test]
fn g23_a_repaired_gated_step_waits_for_a_decision_on_its_new_code() {
    let harness = Harness::new();
    harness.executor.then("send_refund", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "requests".into(),
                detail: "line 1".into(),
            },
            "fake",
        )
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
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    let approved = engine
        .decide(
            &parked.run,
            "send_refund",
            Decision {
                kind: GateDecision::Approve,
                who: cli("alice"),
                door: Door::Cli,
                note: "the old code".into(),
            },
        )
        .unwrap();
    assert_eq!(approved.status, RunStatus::NeedsRepair, "{approved:?}");
    let text = REFUND.replace(
        "      def main(request):\n          return request\n",
        "      def main(request):\n          return {\"sent\": request}\n",
    );
    assert_ne!(text, REFUND);
    let repaired = engine
        .retry_repaired(
            &parked.run,
            AcceptedRepair {
                step: "send_refund".into(),
                workflow: workflow(&text),
                version: 2,
                provider: "fake".into(),
                model: "fake-assistant".into(),
                by: PersonDecision {
                    who: cli("bob"),
                    door: Door::Cli,
                    note: "stdlib only now".into(),
                },
            },
        )
        .unwrap();
    assert_eq!(
        repaired.status,
        RunStatus::WaitingApproval,
        "nobody approved the new code: {repaired:?}"
    );
    assert_eq!(
        harness.executor.calls_of("send_refund").len(),
        1,
        "the new code did not run on the old approval"
    );
}

/// An assistant whose check of an accepted repair waits until the test lets it go on, so the
/// test can act while an acceptance is between its checks and its save.
struct HeldAssistant {
    new_text: String,
    in_check: std::sync::mpsc::SyncSender<()>,
    go_on: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl engine::RepairAssistant for HeldAssistant {
    fn propose(
        &self,
        _request: &engine::RepairRequest<'_>,
    ) -> Result<engine::ProposedRepair, engine::NoProposal> {
        Ok(engine::ProposedRepair {
            code: "def main(value):\n    return {\"value\": value}\n".into(),
            note: "returns an object".into(),
            provider: "fake".into(),
            model: "fake-assistant".into(),
            refused: Vec::new(),
        })
    }

    fn check(
        &self,
        _workflow: &spec::Workflow,
        _step: &str,
        _code: &str,
    ) -> Result<spec::Workflow, engine::RefusedProposal> {
        let _ = self.in_check.send(());
        let _ = self.go_on.lock().unwrap().recv();
        Ok(workflow(&self.new_text))
    }
}

/// G15: accepting a repair holds the run from its first check to the run going on, so no other
/// decision (a stop here) comes in between: the stop is refused, and the version saved is the
/// one the run goes on with, never a version saved for a run that was stopped meanwhile.
#[test]
fn g15_a_stop_while_a_repair_is_being_accepted_is_refused_and_the_saved_version_runs() {
    let (_harness, engine, run) = needing_repair();
    let (in_check, checking) = std::sync::mpsc::sync_channel(1);
    let (release, go_on) = std::sync::mpsc::channel();
    let engine = engine.with_repairs(std::sync::Arc::new(HeldAssistant {
        new_text: OFFLINE.replace(OLD_CODE, NEW_CODE),
        in_check,
        go_on: std::sync::Mutex::new(go_on),
    }));
    engine.propose_repair(&run, "report").unwrap();
    let decision = |note: &str| PersonDecision {
        who: cli("alice"),
        door: Door::Cli,
        note: note.into(),
    };
    let (accepted, stopped) = std::thread::scope(|scope| {
        let accepting = scope.spawn(|| {
            engine.accept_repair(&run, "report", "alice", decision("stdlib only now"), None)
        });
        // The acceptance is in its check, before anything is saved.
        checking
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the acceptance reached its check");
        let stopped = engine.stop(&run, decision("not needed any more"));
        release.send(()).unwrap();
        (accepting.join().unwrap(), stopped)
    });
    assert!(
        matches!(stopped, Err(Error::DecisionInProgress { .. })),
        "{stopped:?}"
    );
    let outcome = accepted.unwrap();
    assert_eq!(outcome.version.number, 2);
    assert_eq!(outcome.summary.status, RunStatus::Succeeded, "{outcome:?}");
}

/// G15, G23: a repair of an attempt that ran with a person's new inputs runs the repaired step
/// with them, never with the inputs they corrected; its decision puts them in force, so a later
/// retry without inputs runs them too.
#[test]
fn g15_a_repair_of_an_attempt_with_new_inputs_runs_the_repaired_step_with_them() {
    let harness = Harness::new();
    let failed = |_: &engine::ExecutionRequest<'_>| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Failed {
                error: engine::StepError {
                    kind: "ValueError".into(),
                    message: "not a report".into(),
                    traceback: String::new(),
                },
                phase: engine::CodePhase::CodeStarted,
            },
            "fake",
        )
    };
    harness.executor.then("report", failed);
    harness.executor.then("report", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "requests".into(),
                detail: "line 1".into(),
            },
            "fake",
        )
    });
    harness.executor.then("report", failed);
    let engine = harness.engine();
    let started = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("a"),
        )
        .unwrap();
    assert_eq!(started.status, RunStatus::NeedsAttention, "{started:?}");
    let run = started.run;
    let person = |note: &str| PersonDecision {
        who: cli("alice"),
        door: Door::Cli,
        note: note.into(),
    };
    let corrected = json!({"value": 7});
    let retried = engine
        .retry_attempt(&run, "report", 1, Some(corrected.clone()), person("seven"))
        .unwrap();
    assert_eq!(retried.status, RunStatus::NeedsRepair, "{retried:?}");
    let text = OFFLINE.replace(OLD_CODE, NEW_CODE);
    let repaired = engine.retry_repaired(&run, repaired(&text)).unwrap();
    assert_eq!(repaired.status, RunStatus::NeedsAttention, "{repaired:?}");
    let calls = harness.executor.calls_of("report");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[1].inputs, corrected);
    assert_eq!(
        calls[2].inputs, corrected,
        "the repaired step ran with the inputs the person corrected"
    );
    let again = engine
        .retry_attempt(&run, "report", 3, None, person("once more"))
        .unwrap();
    assert_eq!(again.status, RunStatus::Succeeded, "{again:?}");
    let calls = harness.executor.calls_of("report");
    assert_eq!(calls.len(), 4);
    assert_eq!(
        calls[3].inputs, corrected,
        "a retry after the repair ran the corrected inputs"
    );
}

/// G23: a repaired gated step whose attempt ran with a person's new inputs parks for a decision
/// on the new code with those inputs, and its approval runs them.
#[test]
fn g23_a_repaired_gated_step_with_new_inputs_parks_with_them_and_its_approval_runs_them() {
    let harness = Harness::new();
    harness.executor.then("send_refund", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Unknown {
                reason: "the connection dropped".into(),
            },
            "fake",
        )
    });
    harness.executor.then("send_refund", |_| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "requests".into(),
                detail: "line 1".into(),
            },
            "fake",
        )
    });
    let engine = harness.engine();
    let decision = |kind: GateDecision, note: &str| Decision {
        kind,
        who: cli("bob"),
        door: Door::Cli,
        note: note.into(),
    };
    let parked = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    let run = parked.run;
    let ran = engine
        .decide(&run, "send_refund", decision(GateDecision::Approve, "ok"))
        .unwrap();
    assert_eq!(ran.status, RunStatus::NeedsAttention, "{ran:?}");
    let corrected = json!({"request": {"ticket": "T-2"}});
    let retried = engine
        .retry_attempt(
            &run,
            "send_refund",
            1,
            Some(corrected.clone()),
            PersonDecision {
                who: cli("alice"),
                door: Door::Cli,
                note: "the right ticket".into(),
            },
        )
        .unwrap();
    assert_eq!(retried.status, RunStatus::WaitingApproval);
    let ran = engine
        .decide(&run, "send_refund", decision(GateDecision::Approve, "T-2"))
        .unwrap();
    assert_eq!(ran.status, RunStatus::NeedsRepair, "{ran:?}");
    let text = REFUND.replace(
        "      def main(request):\n          return request\n",
        "      def main(request):\n          return {\"sent\": request}\n",
    );
    let repaired = engine
        .retry_repaired(
            &run,
            AcceptedRepair {
                step: "send_refund".into(),
                workflow: workflow(&text),
                version: 2,
                provider: "fake".into(),
                model: "fake-assistant".into(),
                by: PersonDecision {
                    who: cli("bob"),
                    door: Door::Cli,
                    note: "stdlib only now".into(),
                },
            },
        )
        .unwrap();
    assert_eq!(repaired.status, RunStatus::WaitingApproval, "{repaired:?}");
    assert_eq!(harness.executor.calls_of("send_refund").len(), 2);
    let done = engine
        .decide(
            &run,
            "send_refund",
            decision(GateDecision::Approve, "new code, T-2"),
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
    let calls = harness.executor.calls_of("send_refund");
    assert_eq!(calls.len(), 3);
    assert_eq!(
        calls[2].inputs, corrected,
        "the approval of the repaired step ran the inputs it corrected"
    );
}

/// An assistant that proposes the same code every time, counting its calls.
struct SameProposal {
    calls: std::sync::atomic::AtomicUsize,
}

impl engine::RepairAssistant for SameProposal {
    fn propose(
        &self,
        _request: &engine::RepairRequest<'_>,
    ) -> Result<engine::ProposedRepair, engine::NoProposal> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(engine::ProposedRepair {
            code: format!(
                "# {}\ndef main(value):\n    return value\n",
                "c".repeat(200_000)
            ),
            note: "stdlib only".into(),
            provider: "fake".into(),
            model: "fake-assistant".into(),
            refused: Vec::new(),
        })
    }

    fn check(
        &self,
        workflow: &spec::Workflow,
        _: &str,
        _: &str,
    ) -> Result<spec::Workflow, engine::RefusedProposal> {
        Ok(workflow.clone())
    }
}

/// server review 3, finding 4: repair proposals were unbounded in number, each appended whole
/// to the run's journal (40 proposals of 240 KB: 9.6 MB). A step's attempt takes at most
/// [`engine::MAX_REPAIR_PROPOSALS`]; past them the engine refuses before the assistant is
/// asked; a proposal's code is stored once per run however often it is proposed, and read
/// back whole.
#[test]
fn g9_repair_proposals_are_bounded_and_each_code_is_stored_once() {
    use storage::EventLog;
    let (harness, engine, run) = needing_repair();
    let assistant = std::sync::Arc::new(SameProposal {
        calls: std::sync::atomic::AtomicUsize::new(0),
    });
    let engine = engine.with_repairs(assistant.clone());
    for _ in 0..engine::MAX_REPAIR_PROPOSALS {
        engine.propose_repair(&run, "report").unwrap();
    }
    let refused = engine.propose_repair(&run, "report").unwrap_err();
    assert!(matches!(refused, Error::RepairRefused { .. }), "{refused}");
    assert_eq!(
        assistant.calls.load(std::sync::atomic::Ordering::SeqCst),
        engine::MAX_REPAIR_PROPOSALS,
        "the assistant was asked past the bound"
    );
    let bytes: usize = harness
        .store
        .events(&run)
        .unwrap()
        .iter()
        .map(|event| event.payload.to_string().len())
        .sum();
    assert!(bytes < 400_000, "the journal holds {bytes} bytes");
    let latest = engine.repair_proposal(&run, "report").unwrap().unwrap();
    assert!(latest.code.ends_with("return value\n") && latest.code.len() > 200_000);
}
