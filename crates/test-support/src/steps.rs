//! An executor and supervisors that answer from a script: the engine's tests drive every path
//! of the state machine with what a sandbox or a model would have said.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use engine::{
    CodePhase, ExecutionOutcome, ExecutionReport, ExecutionRequest, FailureView, StepError,
    StepExecutor, StepOutput, Supervised, Supervisor, SupervisorDecision, SupervisorIdentity,
};
use serde_json::{Value, json};

pub type Script = Box<dyn Fn(&ExecutionRequest<'_>) -> ExecutionReport + Send + Sync>;

/// One call the executor saw.
#[derive(Debug, Clone)]
pub struct Call {
    pub step: String,
    pub inputs: Value,
    /// The environment, values exposed (only tests look at them).
    pub env: Vec<(String, String)>,
}

/// What a step with no script queued reports: its output.
pub type Fallback = fn(Value) -> ExecutionReport;

/// Runs the queued scripts of each step in turn; with none queued, succeeds with
/// `{"step": id}` (reported by [`succeeded`], or by the fallback it was made with).
pub struct ScriptedExecutor {
    scripts: Mutex<HashMap<String, VecDeque<Script>>>,
    fallback: Fallback,
    pub calls: Mutex<Vec<Call>>,
}

impl Default for ScriptedExecutor {
    fn default() -> Self {
        ScriptedExecutor::with_fallback(succeeded)
    }
}

impl ScriptedExecutor {
    /// A step with no script queued reports `fallback({"step": id})`.
    pub fn with_fallback(fallback: Fallback) -> ScriptedExecutor {
        ScriptedExecutor {
            scripts: Mutex::new(HashMap::new()),
            fallback,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Queues what the next call of `step` reports.
    pub fn then(
        &self,
        step: &str,
        script: impl Fn(&ExecutionRequest<'_>) -> ExecutionReport + Send + Sync + 'static,
    ) {
        self.scripts
            .lock()
            .unwrap()
            .entry(step.to_owned())
            .or_default()
            .push_back(Box::new(script));
    }

    pub fn calls_of(&self, step: &str) -> Vec<Call> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|call| call.step == step)
            .cloned()
            .collect()
    }
}

impl StepExecutor for ScriptedExecutor {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        self.calls.lock().unwrap().push(Call {
            step: request.step.id().to_owned(),
            inputs: request.inputs.clone(),
            env: request
                .env
                .iter()
                .map(|(name, value)| (name.clone(), value.dangerously_expose().to_owned()))
                .collect(),
        });
        let script = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(request.step.id())
            .and_then(VecDeque::pop_front);
        match script {
            Some(script) => script(&request),
            None => (self.fallback)(json!({"step": request.step.id()})),
        }
    }
}

/// A step that returned `output`, on the `fake` backend.
pub fn succeeded(output: Value) -> ExecutionReport {
    ExecutionReport {
        interpreter_version: Some("3.11.2".into()),
        ..ExecutionReport::outcome_only(
            ExecutionOutcome::Succeeded {
                output: StepOutput::from_value(&output),
            },
            "fake",
        )
    }
}

/// A step whose code started and raised `RuntimeError(message)`.
pub fn failed_after_code_started(message: &str) -> ExecutionReport {
    ExecutionReport::outcome_only(
        ExecutionOutcome::Failed {
            error: StepError {
                kind: "RuntimeError".into(),
                message: message.into(),
                traceback: String::new(),
            },
            phase: CodePhase::CodeStarted,
        },
        "fake",
    )
}

/// A supervisor that answers from a function and remembers what it saw.
pub struct ScriptedSupervisor {
    pub answer: Box<dyn Fn(&FailureView) -> SupervisorDecision + Send + Sync>,
    pub seen: Mutex<Vec<FailureView>>,
}

impl ScriptedSupervisor {
    pub fn new(
        answer: impl Fn(&FailureView) -> SupervisorDecision + Send + Sync + 'static,
    ) -> Arc<ScriptedSupervisor> {
        Arc::new(ScriptedSupervisor {
            answer: Box::new(answer),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Supervisor for ScriptedSupervisor {
    fn on_failure(&self, view: &FailureView) -> Supervised {
        self.seen.lock().unwrap().push(view.clone());
        Supervised {
            decision: (self.answer)(view),
            note: "scripted".to_owned(),
            by: SupervisorIdentity::Model {
                provider: "scripted".to_owned(),
                model: "script-1".to_owned(),
            },
        }
    }
}

/// Answers failures from a queue; with nothing queued, brings the run to a person.
#[derive(Default)]
pub struct QueuedSupervisor(Mutex<VecDeque<SupervisorDecision>>);

impl QueuedSupervisor {
    pub fn then(&self, decision: SupervisorDecision) {
        self.0.lock().unwrap().push_back(decision);
    }
}

impl Supervisor for QueuedSupervisor {
    fn on_failure(&self, _view: &FailureView) -> Supervised {
        Supervised {
            decision: self
                .0
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(SupervisorDecision::AskPerson),
            note: String::new(),
            by: SupervisorIdentity::NoModel {
                why: "queued".to_owned(),
            },
        }
    }
}
