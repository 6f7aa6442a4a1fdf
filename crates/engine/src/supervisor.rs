//! The supervisor: who decides what happens after a failure (G15).

use redact::Redacted;
use storage::{AttemptStatus, NetworkMode, RunId};

/// Told to every supervisor with every failure, word for word.
pub const UNKNOWN_MEANS_STOP: &str = "An attempt whose status is `unknown` may have had effects \
     outside the sandbox (it had network access when it failed after its code started, or it \
     timed out, was killed or crashed). Unknown means stop: the engine will not retry it for \
     you; only a person's recorded decision can.";

/// Whether the engine will act on a `Retry` for this failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPermission {
    Allowed,
    /// The attempt is `unknown` (or the retry budget is spent): a `Retry` is refused.
    Forbidden,
}

/// What a supervisor sees of a failure: scrubbed values only.
#[derive(Debug, Clone)]
pub struct FailureView {
    pub run_id: RunId,
    pub step_id: String,
    pub attempt: u32,
    pub network: NetworkMode,
    /// `failed`, `unknown` or `refused`.
    pub status: AttemptStatus,
    pub error_kind: Redacted<String>,
    pub message: Redacted<String>,
    pub traceback: Redacted<String>,
    /// The inputs the attempt ran with.
    pub inputs: Redacted<serde_json::Value>,
    pub retry: RetryPermission,
    /// [`UNKNOWN_MEANS_STOP`], always.
    pub policy: &'static str,
}

/// What the supervisor decided.
#[derive(Debug, Clone, PartialEq)]
pub enum SupervisorDecision {
    /// Run the step again with these inputs (merged over the step's declared inputs).
    Retry { inputs: serde_json::Value },
    /// Stop the run (`stopped`), with a reason for the record.
    Stop { reason: String },
    /// Bring the run to a person (`needs_attention`).
    AskPerson,
}

/// Decides after a failure.
pub trait Supervisor: Send + Sync {
    fn on_failure(&self, view: &FailureView) -> SupervisorDecision;
}

/// The supervisor when no model is configured: every failure goes to a person.
#[derive(Debug, Clone, Copy, Default)]
pub struct PersonSupervisor;

impl Supervisor for PersonSupervisor {
    fn on_failure(&self, _view: &FailureView) -> SupervisorDecision {
        SupervisorDecision::AskPerson
    }
}
