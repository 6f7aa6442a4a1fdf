//! The supervisor: who decides what happens after a failure (G15).
//!
//! The engine hands a failed attempt to the [`Supervisor`] and holds whatever it answers to the
//! rules, whatever its prompt said: an `unknown` attempt is never retried by it, a retry is of
//! the failed step only, with exactly that step's input names, inputs that pass G4 and match
//! the workflow's declared types, at most [`DEFAULT_SUPERVISOR_RETRIES`] times per step per run
//! (an account may set up to [`MAX_SUPERVISOR_RETRIES`]), and a retry of a gated step parks the
//! run again for a person's decision on the new inputs.

use redact::Redacted;
use serde_json::Value;
use storage::{AccountId, AttemptStatus, NetworkMode, RunId};

/// Told to every supervisor with every failure, word for word.
pub const UNKNOWN_MEANS_STOP: &str = "An attempt whose status is `unknown` may have had effects \
     outside the sandbox (it had network access when it failed after its code started, or it \
     timed out, was killed or crashed). Unknown means stop: the engine will not retry it for \
     you; only a person's recorded decision can.";

/// Supervisor retries per step per run when the account set none.
pub const DEFAULT_SUPERVISOR_RETRIES: u32 = 2;
/// The most supervisor retries per step per run an account may set.
pub const MAX_SUPERVISOR_RETRIES: u32 = 5;

/// Whether the engine will act on a `Retry` for this failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPermission {
    Allowed,
    /// The attempt is `unknown` (or the retry budget is spent): a `Retry` is refused.
    Forbidden,
}

/// What a supervisor sees of a failure: scrubbed values only. Everything the step itself
/// produced (`message`, `traceback`, `printed`) is the step's text, untrusted: a supervisor
/// shows it to a model as data, never as instructions.
#[derive(Debug, Clone)]
pub struct FailureView {
    pub account: AccountId,
    pub run_id: RunId,
    pub workflow: String,
    pub step_id: String,
    pub attempt: u32,
    pub network: NetworkMode,
    /// `failed`, `unknown` or `refused`.
    pub status: AttemptStatus,
    pub error_kind: Redacted<String>,
    pub message: Redacted<String>,
    pub traceback: Redacted<String>,
    /// What the attempt printed (stdout, then stderr), scrubbed, then bounded.
    pub printed: Redacted<String>,
    /// The inputs the attempt ran with.
    pub inputs: Redacted<Value>,
    /// The step's declaration as the workflow states it: id, gate, explain, network,
    /// connections (names), inputs (where each comes from, and a workflow input's declared
    /// type), and its code or agent and task.
    pub declaration: Redacted<Value>,
    pub retry: RetryPermission,
    /// Supervisor retries of this step this run has left.
    pub retries_left: u32,
    /// [`UNKNOWN_MEANS_STOP`], always.
    pub policy: &'static str,
}

/// What the supervisor decided.
#[derive(Debug, Clone, PartialEq)]
pub enum SupervisorDecision {
    /// Run the failed step again with these inputs: an object with exactly the step's input
    /// names (the engine refuses anything else).
    Retry { inputs: Value },
    /// Stop the run (`stopped`), with a reason for the record.
    Stop { reason: String },
    /// Bring the run to a person (`needs_attention`).
    AskPerson,
}

/// Who decided, for the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorIdentity {
    /// The account's assistant: its provider's name and the model that answered.
    Model { provider: String, model: String },
    /// No model decided: why the failure went to a person (no provider configured, the
    /// provider unreachable, `supervisor: none`).
    NoModel { why: String },
}

/// A decision with its note and who took it.
#[derive(Debug, Clone, PartialEq)]
pub struct Supervised {
    pub decision: SupervisorDecision,
    /// Why, in the supervisor's words (recorded scrubbed; empty for none).
    pub note: String,
    pub by: SupervisorIdentity,
}

/// Decides after a failure.
pub trait Supervisor: Send + Sync {
    fn on_failure(&self, view: &FailureView) -> Supervised;

    /// Which provider (and model) sees this account's failures, in words, for the workflow
    /// page; `None` when a person sees them.
    fn who_sees_failures(&self, account: &AccountId) -> Option<String> {
        let _ = account;
        None
    }
}

/// The supervisor when no model is configured: every failure goes to a person.
#[derive(Debug, Clone, Copy, Default)]
pub struct PersonSupervisor;

/// Why [`PersonSupervisor`] brings every failure to a person.
pub const NO_MODEL_CONFIGURED: &str =
    "no model provider is configured for the account, so a person decides";

impl Supervisor for PersonSupervisor {
    fn on_failure(&self, _view: &FailureView) -> Supervised {
        Supervised {
            decision: SupervisorDecision::AskPerson,
            note: String::new(),
            by: SupervisorIdentity::NoModel {
                why: NO_MODEL_CONFIGURED.to_owned(),
            },
        }
    }
}
