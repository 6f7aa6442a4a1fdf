//! The run state machine: steps, gates, suspend and resume, the failure policy, recovery.
//!
//! Invariants: the engine knows no Linux, no SQL dialect, no HTTP and no model. It sees a
//! validated [`spec::Workflow`], the [`storage::Store`] traits, a [`StepExecutor`], a
//! [`redact::SecretSource`], a [`Supervisor`], a [`Clock`] and an [`IdSource`]. Everything it
//! writes goes through the run's `Redactor` first (the store only accepts `Redacted` values).
//!
//! The failure policy (G14): an attempt is recorded as running, with its network mode, and that
//! record is synced before the executor is called; a networked attempt that fails after its
//! code started, or whose end was not observed, is `unknown`, and no code path in this crate
//! starts a step whose latest attempt is `unknown` unless a person's recorded `retry` decision
//! names that attempt (see `drive::latest_attempt_blocks`).

#![forbid(unsafe_code)]

mod attempt;
mod clock;
mod context;
mod copyback;
pub mod definitions;
mod drive;
mod engine;
mod executor;
mod inputs;
pub mod interview;
mod jobs;
pub mod journal;
mod live;
mod reach_change;
mod record;
mod recovery;
mod repair;
mod supervisor;
mod tool_tests;
pub mod workspace_writes;

use workspace::Workspaces;

pub use crate::clock::{Clock, IdSource, RandomRunIds, SystemClock};
pub use crate::definitions::{
    DefinitionWriteError, PinnedDefinitions, ReachConfirmation, WorkflowVersion,
    is_definition_name, workflow_path,
};
pub use crate::engine::{Decision, Engine, GateDecision, PersonDecision, RunSummary, StepSummary};
pub use crate::executor::{
    AgentEvent, CodePhase, CopyBackRefusal, ExecutionOutcome, ExecutionReport, ExecutionRequest,
    FileChange, LivePrinted, NetworkQuery, NotJournalled, StepError, StepExecutor, StepJournal,
    StepOutput, StepRefusal, ToolTestRun,
};
pub use crate::interview::{AsRead, CheckedDraft, Draft, DraftSaveError};
pub use crate::jobs::{
    Driving, INLINE_LEASE, JobClaim, JobEnd, STOPPED_TWICE, slot_of, unnamed_holder,
};
pub use crate::reach_change::AffectedWorkflow;
pub use crate::record::{AttemptState, RunState, reconstruct};
pub use crate::recovery::RecoveryReport;
pub use crate::repair::{
    AcceptedRepair, MAX_REPAIR_PROPOSALS, NoProposal, NoRepairAssistant, ProposedRepair,
    RefusedProposal, RepairAssistant, RepairError, RepairOutcome, RepairRequest,
    changes_besides_code, code_diff,
};
pub use crate::supervisor::{
    DEFAULT_SUPERVISOR_RETRIES, FailureView, MAX_SUPERVISOR_RETRIES, NO_MODEL_CONFIGURED,
    PersonSupervisor, RetryPermission, Supervised, Supervisor, SupervisorDecision,
    SupervisorIdentity, UNKNOWN_MEANS_STOP,
};
pub use crate::tool_tests::{
    SecretsChoice, TOOL_TEST_PYTHON, ToolArguments, ToolTestConfirmation, ToolTestRequest,
};

use storage::{RunId, RunStatus};

/// The engine's settings, handed in by the binary.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Every account's workspace: a step's files are copied from its account's working folder
    /// and back as a revision of that account's history (G25), never another account's.
    pub workspaces: Workspaces,
    /// The most bytes of each printed stream kept per attempt, after scrubbing.
    pub max_printed_bytes: usize,
    /// The most bytes of an error message or traceback kept, after scrubbing.
    pub max_error_bytes: usize,
    /// How many times the supervisor may retry one step of one run when the account set no
    /// number of its own (an account's setting, and this, are held to
    /// [`MAX_SUPERVISOR_RETRIES`]).
    pub max_supervisor_retries: u32,
    /// The operator's maxima for declared `limits`; every parse the engine does holds a
    /// workflow to them (G1).
    pub limit_maxima: spec::LimitMaxima,
    /// What one step's copy-back may return, whatever executor made it (G12).
    pub copy_back: CopyBackCaps,
    /// How a door's caller waits for the run it acted on (issue 38).
    pub driving: Driving,
    /// Who this engine's inline jobs are held as: this process, as the binary names it.
    pub holder: storage::queue::Holder,
    /// Whether a lease's holder is proven dead (a process of this host that no longer runs):
    /// recovery ends its leases at once instead of waiting for them to run out.
    pub holder_dead: fn(&storage::queue::Holder) -> bool,
    /// The account's names a saved workflow is checked against (its people for `notify:`, its
    /// model providers for G19), as every door that saves reads them; `None`: a saved
    /// workflow is held to the parser only.
    pub account_names: Option<AccountNamesSource>,
}

/// How the binary reads an account's names: its error in words.
pub type ReadAccountNames =
    dyn Fn(&storage::AccountId) -> Result<spec::AccountNames, String> + Send + Sync;

/// Reads an account's names ([`spec::AccountNames`]).
#[derive(Clone)]
pub struct AccountNamesSource(pub std::sync::Arc<ReadAccountNames>);

impl std::fmt::Debug for AccountNamesSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("AccountNamesSource")
    }
}

/// The caps of every step's copy-back, checked on each file's real size: a file past one is
/// refused by name with its reason, never cut (G12). The sandbox's own filter holds a code
/// step's files to the same caps before they leave the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyBackCaps {
    /// The largest single file, in bytes.
    pub max_file_bytes: u64,
    /// The most bytes of one step's copy-back, all files together.
    pub max_total_bytes: u64,
    /// The most new or changed files of one step's copy-back.
    pub max_files: usize,
}

impl Default for CopyBackCaps {
    fn default() -> Self {
        CopyBackCaps {
            max_file_bytes: 8 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_files: 1000,
        }
    }
}

impl EngineOptions {
    /// The default limits, with every account's workspace under `workspaces`.
    pub fn new(workspaces: Workspaces) -> EngineOptions {
        EngineOptions {
            workspaces,
            max_printed_bytes: 64 * 1024,
            max_error_bytes: 16 * 1024,
            max_supervisor_retries: DEFAULT_SUPERVISOR_RETRIES,
            limit_maxima: spec::LimitMaxima::BUILT_IN,
            copy_back: CopyBackCaps::default(),
            driving: Driving::Inline,
            holder: unnamed_holder(),
            holder_dead: |_| false,
            account_names: None,
        }
    }
}

/// Everything the engine can refuse or fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workflow no longer passes the parser (G1).
    #[error("{file} no longer validates: {} problem(s), the first: {}", diagnostics.len(), diagnostics.first().map(|d| d.to_string()).unwrap_or_default())]
    WorkflowInvalid {
        file: String,
        diagnostics: Vec<spec::Diagnostic>,
    },
    /// Parsing the workflow's own text gives a different workflow (G1).
    #[error("{file}: the validated workflow does not match its own source text")]
    WorkflowChanged { file: String },
    /// The definition holds a value of the account's vault (G1, G16); where, never what.
    #[error(
        "{file}:{line}:{column}: this definition holds a value of the account's vault (a secret, \
         a connection or a model key); a definition never holds one: name a connection in the \
         step's `connections` and read it from its environment variable instead"
    )]
    DefinitionHoldsValue {
        file: String,
        line: usize,
        column: usize,
    },
    /// A step id the store refuses (the parser and the store disagree on the grammar).
    #[error("`{step}` is not a step id the record can hold")]
    NotAStepId { step: String },
    /// A run-time input holds a key that names a credential (G4).
    #[error("run inputs hold forbidden keys (credentials are never inputs; use a connection): {}", paths.join(", "))]
    ForbiddenInputKeys { paths: Vec<String> },
    /// Run-time inputs that do not match the workflow's declarations.
    #[error("run inputs do not match the workflow: {}", problems.join("; "))]
    InputMismatch { problems: Vec<String> },
    /// A step of the workflow needs what this server cannot give (a Python version, an egress
    /// network, a backend that enforces its declaration) or could never run (an agent step
    /// holding applying tools outside a gate); no run was created.
    #[error(
        "the workflow {workflow} cannot run here, so no run was started: {}",
        problems.join("; ")
    )]
    CannotRunHere {
        workflow: String,
        problems: Vec<String>,
    },
    /// No run with this id.
    #[error("no run with id {run}")]
    UnknownRun { run: RunId },
    /// A gate decision on a run that is not waiting for one.
    #[error("run {run} is {status}, not waiting for approval")]
    NotWaitingApproval { run: RunId, status: RunStatus },
    /// A gate decision on a step the run is not parked at.
    #[error(
        "run {run} is {}, not at step {step}",
        parked.as_deref().map_or_else(|| "not parked at a gate".to_owned(), |at| format!("parked at the gate {at}"))
    )]
    NotParkedAt {
        run: RunId,
        step: String,
        parked: Option<String>,
    },
    /// A retry or stop on a run that does not need a person.
    #[error(
        "run {run} is {status}: retrying and stopping are decisions on a run that waits for a \
         person (needs_attention; a needs_repair run can be stopped)"
    )]
    NotNeedingAttention { run: RunId, status: RunStatus },
    /// Another person's retry, stop or repair of the run is being carried out right now.
    #[error(
        "another decision on run {run} (a retry, a stop or a repair) is being carried out right \
         now; look at the run again when it is done"
    )]
    DecisionInProgress { run: RunId },
    /// A command following a run while another process's worker runs it (issue 38) found
    /// that worker gone: the run waits in the queue for the next one.
    #[error(
        "run {run} was recorded, and waits for a worker: the process that ran this data \
         directory's steps stopped; start `stepward serve` (or `stepward worker` beside a serve \
         with --workers 0), and the run goes on (`stepward runs show {run}` follows it)"
    )]
    NoWorker { run: RunId },
    /// A retry of a run whose step needs repair: nothing of the step ran, and the same code
    /// would stop the same way before any of it runs.
    #[error(
        "run {run} needs repair, so step {step} is not run again: {reason}; running the same \
         code again would stop the same way before any of it runs. Fix the step's code, start \
         a new run, and stop this one"
    )]
    NeedsRepairNotRetry {
        run: RunId,
        step: String,
        reason: String,
    },
    /// A retry of a step that is not the one that stopped the run.
    #[error(
        "run {run} {}, not at step {step}",
        stopped_at.as_deref().map_or_else(|| "did not stop at a step".to_owned(), |at| format!("stopped at step {at}"))
    )]
    NotTheStoppedStep {
        run: RunId,
        step: String,
        stopped_at: Option<String>,
    },
    /// A retry of an attempt that is no longer the step's latest: the person decided on what
    /// they saw, and a newer attempt has run since.
    #[error(
        "attempt {asked} of step {step} of run {run} is not its latest any more (attempt {latest} \
         is): look at attempt {latest}'s record, then retry that one"
    )]
    NotTheLatestAttempt {
        run: RunId,
        step: String,
        asked: u32,
        latest: u32,
    },
    /// Every decision of a person needs a note saying why (approve, reject, retry, stop): it
    /// is kept in the record with who decided and through which door (G23). `what` is the
    /// decision in words ("approving step send of run R").
    #[error(
        "{what} needs a note saying why (it is kept in the record with who decided); a blank \
         note is refused"
    )]
    NoteRequired { run: RunId, what: String },
    /// The new inputs of a retry are not acceptable.
    #[error("the new inputs for step {step} of run {run} are refused: {reason}")]
    RetryInputsRefused {
        run: RunId,
        step: String,
        reason: String,
    },
    /// An accepted repair the engine refuses (G9): not a run or step that needs repair, or a
    /// repair that changes more than the step's code.
    #[error("the repair of step {step} of run {run} is refused: {reason}")]
    RepairRefused {
        run: RunId,
        step: String,
        reason: String,
    },
    /// The stored workflow of a run no longer parses.
    #[error("run {run}: its stored workflow no longer validates: {detail}")]
    StoredWorkflowInvalid { run: RunId, detail: String },
    /// The secret source could not build the run's secret set at all.
    #[error("the secrets of run {run} could not be collected")]
    Secrets {
        run: RunId,
        #[source]
        source: redact::Error,
    },
    /// The account's values could not be read to check a definition against them.
    #[error("the values of account {account} could not be read to check the definition")]
    AccountValues {
        account: storage::AccountId,
        #[source]
        source: redact::Error,
    },
    /// An event could not be encoded in the journal's shape.
    #[error("the `{kind}` event could not be encoded for the journal")]
    JournalEncode {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// What the run can reach could not be pinned when it started; the run was not created.
    #[error("the run's definitions could not be pinned: {detail}")]
    Pin { detail: String },
    /// A stored event could not be read.
    #[error(transparent)]
    Journal(#[from] journal::ReadError),
    /// The store failed (also what an injected crash looks like).
    #[error(transparent)]
    Storage(#[from] storage::Error),
    /// An account's workspace could not be opened or read.
    #[error("the workspace could not be read")]
    Workspace(#[from] workspace::Error),
    /// The system's random source failed.
    #[error("no randomness for {purpose}: {detail}")]
    Randomness {
        purpose: &'static str,
        detail: String,
    },
    /// A tool test that cannot run as asked (issue 40): no such agent or tool, an agent file
    /// that does not parse (G1), a script that is not there. Nothing ran.
    #[error("{}", tool_test_refusal(agent, tool, reason))]
    ToolTestRefused {
        agent: String,
        tool: String,
        reason: String,
    },
    /// A person's retry or stop found the run moved on by another door (of this or another
    /// process) since it was read: nothing was recorded.
    #[error(
        "run {run} is {now} now: another person's decision moved it first, and nothing of \
         this one was recorded"
    )]
    DecidedElsewhere { run: RunId, now: RunStatus },
    /// A tool test of an agent, a tool or a script the workspace does not have (issue 40).
    #[error("{}", tool_test_refusal(agent, tool, reason))]
    ToolTestNotFound {
        agent: String,
        tool: String,
        reason: String,
    },
    /// A tool test with the agent's secrets whose script was not confirmed as it is saved now
    /// (issue 40): nothing ran; the confirmation says what to confirm.
    #[error(
        "running {} with its agent's secrets needs a confirmation of its script as it is now \
         (SHA-256 {})",
        confirmation.script,
        confirmation.script_sha256
    )]
    ToolTestNeedsConfirmation {
        confirmation: Box<ToolTestConfirmation>,
    },
}

/// A refused tool test in words, naming the tool when there is one.
fn tool_test_refusal(agent: &str, tool: &str, reason: &str) -> String {
    if tool.is_empty() {
        format!("the agent `{agent}` cannot be read: {reason}")
    } else {
        format!("the tool `{tool}` of agent `{agent}` cannot be tested: {reason}")
    }
}

/// An error and its causes as one sentence, `context: cause: cause`, for a reason that goes
/// into a record: each error states its own context once and leaves its cause to `source()`,
/// so nothing is repeated and nothing is lost.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        text.push_str(": ");
        text.push_str(&current.to_string());
        cause = current.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use storage::RunId;

    use crate::{Error, with_causes};

    /// A nested error as a record shows it: each context once, each cause once, in order.
    #[test]
    fn a_nested_error_states_each_context_once() {
        let error = Error::Secrets {
            run: RunId::parse("run-1").unwrap(),
            source: redact::Error::Source {
                account_id: storage::AccountId::parse("acct").unwrap(),
                source: redact::SourceError::Unavailable {
                    detail: "the vault's database is locked".into(),
                },
            },
        };
        let shown = with_causes(&error);
        assert_eq!(
            shown,
            "the secrets of run run-1 could not be collected: the secret source could not give \
             the values of account acct: unavailable: the vault's database is locked"
        );
        let storage = Error::Storage(storage::Error::Backend {
            operation: "append an event",
            source: Box::new(std::io::Error::other("disk I/O error")),
        });
        assert_eq!(
            with_causes(&storage),
            "storage backend failed during append an event: disk I/O error"
        );
        for error in [&error as &dyn std::error::Error, &storage] {
            let shown = with_causes(error);
            let mut cause = Some(error);
            while let Some(current) = cause {
                let own = current.to_string();
                assert_eq!(shown.matches(&own).count(), 1, "{own:?} in {shown:?}");
                cause = current.source();
            }
        }
    }

    /// The server shares one engine between request handlers and the recovery task.
    #[test]
    fn engine_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<crate::Engine>();
    }
}
