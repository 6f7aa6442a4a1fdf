//! G25 as a property: for any run the engine can be driven through (any workflow of gated,
//! networked and offline steps; any mix of what the executor observes, crashes of the
//! platform mid-step included; any supervisor; any person's decisions), the run rebuilt from
//! its typed events alone equals the state the store holds, after every operation.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, Once};

use engine::{
    CodePhase, Decision, Engine, ExecutionOutcome, ExecutionReport, FailureView, GateDecision,
    PersonDecision, StepError, Supervisor, SupervisorDecision,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use storage::{Door, RunId, RunStatus, RunStore};

use crate::support::{Harness, SECRET, account, cli, succeeded};

/// The message of the panic that plays a crash of the platform mid-step.
const CRASH: &str = "the platform died mid-step (a test crash)";

/// What the executor observes for one attempt.
#[derive(Debug, Clone, Copy)]
enum Observed {
    Succeeded,
    SucceededWithNull,
    /// Succeeded after printing the run's value and writing files (one holding the value).
    PrintedAndWrote,
    FailedBeforeCode,
    FailedAfterCode,
    Unknown,
    NeedsRepair,
    Refused,
    /// The platform dies while the step runs.
    Crash,
}

#[derive(Debug, Clone)]
struct StepPlan {
    gate: bool,
    networked: bool,
    /// What each attempt observes, in order; once used up, attempts succeed.
    attempts: Vec<Observed>,
}

#[derive(Debug, Clone, Copy)]
enum Supervised {
    Retry,
    Stop,
    AskPerson,
}

#[derive(Debug, Clone, Copy)]
enum PersonMove {
    /// Approve a gate, or retry the step that needs attention.
    GoOn,
    /// Reject a gate, or stop the run.
    Halt,
}

#[derive(Debug, Clone)]
struct Scenario {
    steps: Vec<StepPlan>,
    supervisor: Vec<Supervised>,
    people: Vec<PersonMove>,
}

fn observed() -> impl Strategy<Value = Observed> {
    prop_oneof![
        3 => Just(Observed::Succeeded),
        1 => Just(Observed::SucceededWithNull),
        1 => Just(Observed::PrintedAndWrote),
        2 => Just(Observed::FailedBeforeCode),
        2 => Just(Observed::FailedAfterCode),
        1 => Just(Observed::Unknown),
        1 => Just(Observed::NeedsRepair),
        1 => Just(Observed::Refused),
        1 => Just(Observed::Crash),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let step = (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(observed(), 0..4),
    )
        .prop_map(|(gate, networked, attempts)| StepPlan {
            gate,
            networked,
            attempts,
        });
    let supervised = prop_oneof![
        Just(Supervised::Retry),
        Just(Supervised::Stop),
        Just(Supervised::AskPerson)
    ];
    let person = prop_oneof![3 => Just(PersonMove::GoOn), 1 => Just(PersonMove::Halt)];
    (
        prop::collection::vec(step, 1..5),
        prop::collection::vec(supervised, 0..6),
        prop::collection::vec(person, 0..8),
    )
        .prop_map(|(steps, supervisor, people)| Scenario {
            steps,
            supervisor,
            people,
        })
}

fn workflow_text(steps: &[StepPlan]) -> String {
    let mut text = String::from("name: generated\npython: \"3.11\"\nsteps:\n");
    for (index, step) in steps.iter().enumerate() {
        let gate = if step.gate { "!" } else { "" };
        text.push_str(&format!(
            "  - id: s{index}{gate}\n    explain: Step {index}.\n"
        ));
        if step.networked {
            text.push_str("    network: public_egress\n    connections: [payments]\n");
        }
        text.push_str("    code: |\n      def main():\n          return 1\n");
    }
    text
}

fn report(observed: Observed, attempt: u32) -> ExecutionReport {
    let failed = |phase| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Failed {
                error: StepError {
                    kind: "RuntimeError".into(),
                    message: format!("attempt {attempt} broke"),
                    traceback: String::new(),
                },
                phase,
            },
            "fake",
        )
    };
    match observed {
        Observed::Succeeded => succeeded(json!({"attempt": attempt})),
        Observed::SucceededWithNull => succeeded(Value::Null),
        Observed::PrintedAndWrote => ExecutionReport {
            stdout: format!("key {SECRET}\n").into_bytes().into(),
            file_changes: vec![
                crate::support::file(&format!("out/attempt-{attempt}.txt"), b"done\n".to_vec()),
                crate::support::file("out/leak.env", SECRET.as_bytes().to_vec()),
            ],
            ..succeeded(json!([attempt]))
        },
        Observed::FailedBeforeCode => failed(CodePhase::BeforeCode),
        Observed::FailedAfterCode => failed(CodePhase::CodeStarted),
        Observed::Unknown => ExecutionReport::outcome_only(
            ExecutionOutcome::Unknown {
                reason: "killed at its wall-time limit".into(),
            },
            "fake",
        ),
        Observed::NeedsRepair => ExecutionReport::outcome_only(
            ExecutionOutcome::NeedsRepair {
                module: "numpy".into(),
                detail: "not in the standard library".into(),
            },
            "fake",
        ),
        Observed::Refused => ExecutionReport::outcome_only(
            ExecutionOutcome::Refused {
                reason: "the backend cannot enforce this".into(),
            },
            "fake",
        ),
        Observed::Crash => std::panic::panic_any(CRASH),
    }
}

/// Answers from the scenario's queue; then brings every failure to a person.
struct QueuedSupervisor(Mutex<Vec<Supervised>>);

impl Supervisor for QueuedSupervisor {
    fn on_failure(&self, _view: &FailureView) -> engine::Supervised {
        engine::Supervised {
            decision: self.next(),
            note: String::new(),
            by: engine::SupervisorIdentity::NoModel {
                why: "queued".to_owned(),
            },
        }
    }
}

impl QueuedSupervisor {
    fn next(&self) -> SupervisorDecision {
        let mut queue = self.0.lock().unwrap();
        match (!queue.is_empty()).then(|| queue.remove(0)) {
            Some(Supervised::Retry) => SupervisorDecision::Retry { inputs: json!({}) },
            Some(Supervised::Stop) => SupervisorDecision::Stop {
                reason: "the supervisor gave up".into(),
            },
            Some(Supervised::AskPerson) | None => SupervisorDecision::AskPerson,
        }
    }
}

/// Crashes are panics the test provokes; they are not printed, every other panic is.
fn quiet_crashes() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&CRASH) {
                default(info);
            }
        }));
    });
}

/// Runs `operation`; a crash of the platform is `None`, as a process that died returns
/// nothing.
fn survive<T>(operation: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(operation)) {
        Ok(value) => Some(value),
        Err(payload) if payload.downcast_ref::<&str>() == Some(&CRASH) => None,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

fn assert_rebuilt(engine: &Engine, run: &RunId, after: &str) {
    let entries = engine.journal(run).unwrap();
    assert_eq!(
        engine::reconstruct(&entries),
        engine.stored_state(run).unwrap(),
        "after {after}"
    );
}

fn drive(scenario: &Scenario) {
    quiet_crashes();
    let harness = Harness::new();
    for (index, plan) in scenario.steps.iter().enumerate() {
        for (number, observed) in plan.attempts.iter().copied().enumerate() {
            let attempt = u32::try_from(number).unwrap() + 1;
            harness
                .executor
                .then(&format!("s{index}"), move |_| report(observed, attempt));
        }
    }
    let supervisor = Arc::new(QueuedSupervisor(Mutex::new(scenario.supervisor.clone())));
    let engine = harness.engine_with(supervisor.clone());
    let workflow = spec::parse_workflow("generated.yaml", &workflow_text(&scenario.steps))
        .unwrap_or_else(|diagnostics| panic!("{diagnostics:?}"));
    let run = RunId::parse("run-1").unwrap();
    let mut crashed =
        survive(|| engine.start_run(&account(), &workflow, json!({}), cli("p"))).is_none();
    assert_rebuilt(&engine, &run, "the start");
    let mut people = scenario.people.iter().copied();
    for _ in 0..16 {
        if crashed {
            // The process restarts: a fresh engine recovers what the crash left.
            let restarted = harness.engine_with(supervisor.clone());
            crashed = survive(|| restarted.recover().unwrap()).is_none();
            assert_rebuilt(&restarted, &run, "a recovery");
            continue;
        }
        let record = harness.store.run(&run).unwrap().unwrap();
        let person = people.next().unwrap_or(PersonMove::Halt);
        let by = PersonDecision {
            who: cli("p"),
            door: Door::Cli,
            note: "decided by the property".into(),
        };
        let acted = match (record.status, person) {
            (RunStatus::WaitingApproval, move_) => {
                let step = harness.store.parked(&run).unwrap().unwrap().step_id;
                let kind = match move_ {
                    PersonMove::GoOn => GateDecision::Approve,
                    PersonMove::Halt => GateDecision::Reject,
                };
                let decision = Decision {
                    kind,
                    who: by.who,
                    door: by.door,
                    note: by.note,
                };
                survive(|| engine.decide(&run, &step, decision).map(drop))
            }
            (RunStatus::NeedsAttention, PersonMove::GoOn) => {
                let step = harness
                    .store
                    .attempts(&run)
                    .unwrap()
                    .last()
                    .unwrap()
                    .step_id
                    .clone();
                survive(|| engine.retry(&run, &step, None, by).map(drop))
            }
            (RunStatus::NeedsAttention | RunStatus::NeedsRepair, _) => {
                survive(|| engine.stop(&run, by).map(drop))
            }
            (RunStatus::Succeeded | RunStatus::Failed | RunStatus::Stopped, _) => break,
            (RunStatus::Running | RunStatus::Queued, _) => {
                panic!("a run that did not crash is {}", record.status)
            }
        };
        match acted {
            Some(result) => result.unwrap(),
            None => crashed = true,
        }
        assert_rebuilt(&engine, &run, "a person's decision");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn g25_any_run_rebuilt_from_its_typed_events_is_the_stored_run(scenario in scenario()) {
        drive(&scenario);
    }
}
