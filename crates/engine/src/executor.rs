//! The seam between the engine and whatever runs a step (the sandbox, an agent loop, a fake in
//! tests). The engine knows nothing about how; it only sees what was observed from outside.

use redact::{Redactor, SecretValue};
use storage::{AccountId, RunId};
use zeroize::Zeroizing;

/// Everything one attempt of one step needs. Built by the engine for each attempt.
pub struct ExecutionRequest<'a> {
    /// The account the run belongs to: its values screen the copy-back (G12, G19).
    pub account: &'a AccountId,
    pub run_id: &'a RunId,
    pub step: &'a spec::Step,
    /// The workflow's pinned interpreter version (G8).
    pub python: spec::PythonVersion,
    /// The step's keyword inputs, a JSON object.
    pub inputs: serde_json::Value,
    /// `CONN_<ALIAS>_<FIELD>` for every field of every connection granted to the step, and
    /// nothing else (G19).
    pub env: Vec<(String, &'a SecretValue)>,
    /// 1 for the first attempt of this step in this run.
    pub attempt: u32,
    /// What the step may see (issue 39): a read-only snapshot a backend stages; what it
    /// changed comes back as [`ExecutionReport::file_changes`].
    pub files: &'a workspace::StepFiles,
    /// The run's redactor: everything an executor sends out of the platform (an agent's model
    /// turns) passes through it first (G16).
    pub redactor: &'a Redactor,
    /// Where an agent step's turns, tool calls, refusals and limits are written as they
    /// happen, each tool call before it runs (G14, G25).
    pub journal: &'a dyn StepJournal,
    /// What the run pinned when it started: an agent step reads its agent file and scripts
    /// from here, never from the working folder (issue 16 §1).
    pub definitions: &'a crate::definitions::PinnedDefinitions,
    /// Told what a code step prints as it prints it, for the run page's live view (issue
    /// 38); the report still carries all of it. An executor that cannot tell leaves it.
    pub live: Option<std::sync::Arc<dyn LivePrinted>>,
}

/// What a running code step prints, as it prints it (see [`ExecutionRequest::live`]). Called
/// on the executor's own thread: it must return quickly (it only keeps the bytes).
pub trait LivePrinted: Send + Sync {
    fn printed(&self, stream: crate::journal::PrintedStream, bytes: &[u8]);
}

/// The events an executor may write while a step runs: an agent step's turns, tool calls
/// (before they run), their ends, refused calls and tripped limits. Nothing else: the engine
/// alone writes an attempt's start and end. Each event is scrubbed with the run's redactor and
/// stored before the call returns; an error means it was not stored, and the executor must
/// not go on to run what it describes.
pub trait StepJournal: Sync {
    fn record(&self, event: AgentEvent) -> Result<(), NotJournalled>;
}

/// An event [`StepJournal::record`] did not store: the executor must not run what it
/// describes.
#[derive(Debug, thiserror::Error)]
pub enum NotJournalled {
    /// The store failed, or the run's values to scrub the event with could not be read.
    #[error("the step's journal did not store the event")]
    Store(#[source] Box<crate::Error>),
    /// This journal takes no events of this kind (a code step's takes no agent events).
    #[error("this step's journal takes no {kind} events")]
    Refused { kind: &'static str },
}

/// What [`StepJournal::record`] takes.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    Turn(crate::journal::AgentTurn),
    ToolCalled(crate::journal::ToolCalled),
    ToolFinished(crate::journal::ToolFinished),
    ToolRefused(crate::journal::ToolRefused),
    Limit(crate::journal::AgentLimit),
}

/// Where the engine asks an executor what a step may reach before it records the attempt.
#[derive(Debug, Clone, Copy)]
pub struct NetworkQuery<'a> {
    pub account: &'a AccountId,
    pub step: &'a spec::Step,
    /// What the step may see: an agent step's network is read from its agent file there when
    /// the run pinned nothing.
    pub files: &'a workspace::StepFiles,
    /// What the run pinned: an agent step's network is its pinned agent file's.
    pub definitions: &'a crate::definitions::PinnedDefinitions,
}

/// Whether the step's own code had started when it failed. Decides between `failed` and
/// `unknown` for a networked step (G14): before its code started, nothing it does can have
/// happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePhase {
    /// Failed before any of the step's code ran (setup, an import check, a refused policy).
    BeforeCode,
    /// The step's code had started.
    CodeStarted,
}

/// An error the step's code raised, as the runner reported it. Raw: the engine scrubs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    pub kind: String,
    pub message: String,
    pub traceback: String,
}

/// A step's JSON result as the step wrote it. Kept as text, so the digits of every number are
/// scrubbed as they were written (a 23-digit numeric credential parsed first would be a float
/// keeping 16 of its digits, which no form matches).
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutput(Zeroizing<String>);

impl StepOutput {
    /// The text a step wrote, if it is one JSON document.
    pub fn from_json_text(text: Zeroizing<String>) -> Result<StepOutput, serde_json::Error> {
        serde_json::from_str::<serde_json::Value>(&text)?;
        Ok(StepOutput(text))
    }

    /// A value's JSON text (for executors that produce values, and tests).
    pub fn from_value(value: &serde_json::Value) -> StepOutput {
        StepOutput(Zeroizing::new(value.to_string()))
    }

    /// The JSON text.
    pub fn as_text(&self) -> &str {
        &self.0
    }
}

/// How the attempt ended, observed from outside the sandbox (never what step code claims).
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutionOutcome {
    /// `main` returned; its JSON result as written.
    Succeeded { output: StepOutput },
    /// The code (or the setup before it) reported an error.
    Failed { error: StepError, phase: CodePhase },
    /// A third-party import (`module`) or a syntax error (`module` empty) found before any
    /// code ran (G9).
    NeedsRepair { module: String, detail: String },
    /// The outcome is not known: a timeout, a kill, a crash of the sandbox.
    Unknown { reason: String },
    /// The attempt never started: a policy the backend cannot enforce, a version it lacks.
    Refused { reason: String },
}

/// One file the copy-back filter accepted: the workspace's list entry (issue 39), which the
/// copy-back screen and the revision commit take.
pub use workspace::FileChange;

/// One file the copy-back filter refused, with its reason (G12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyBackRefusal {
    pub path: String,
    pub reason: String,
}

/// What the executor observed. Printed text is raw (it may hold a value the step was granted),
/// zeroed when dropped: the engine scrubs, then bounds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionReport {
    pub outcome: ExecutionOutcome,
    pub stdout: Zeroizing<Vec<u8>>,
    pub stderr: Zeroizing<Vec<u8>>,
    /// The exact interpreter version used (`3.11.2`), when the interpreter started.
    pub interpreter_version: Option<String>,
    /// The backend's name (`local`, `gvisor`, `unisolated`, ...).
    pub backend: String,
    /// What the backend chose or could not use ("landlock unavailable", "not isolated").
    pub isolation_notes: Vec<String>,
    pub file_changes: Vec<FileChange>,
    pub copy_back_refusals: Vec<CopyBackRefusal>,
}

impl ExecutionReport {
    /// A report with nothing but an outcome, for executors that have nothing else to say.
    pub fn outcome_only(outcome: ExecutionOutcome, backend: &str) -> ExecutionReport {
        ExecutionReport {
            outcome,
            stdout: Zeroizing::default(),
            stderr: Zeroizing::default(),
            interpreter_version: None,
            backend: backend.to_owned(),
            isolation_notes: Vec::new(),
            file_changes: Vec::new(),
            copy_back_refusals: Vec::new(),
        }
    }
}

/// Why an executor refuses a step before it runs, or cannot say what it needs (issue 37: a
/// typed seam, where each port answered a bare `String`). The words are for a person and go
/// into the record as they are; the kind tells the engine (and a worker deciding whether to try
/// again) what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepRefusal {
    /// What the step needs is not here: a Python version, a network, an isolation the backend
    /// cannot give. Another host (or setting) could run it.
    #[error("{0}")]
    Unavailable(String),
    /// What the step names refuses it: its agent file or a colleague cannot be read or is not
    /// valid, or its definitions require what the workflow does not give (a gate).
    #[error("{0}")]
    Definition(String),
    /// A setting of the operator or the account refuses it: a model endpoint this process may
    /// not reach, a provider the account lacks.
    #[error("{0}")]
    Setting(String),
    /// The store could not be read to decide; nothing is wrong with the step itself.
    #[error("{0}")]
    Store(String),
}

/// One custom tool run once for a person (issue 40, `Engine::test_tool`): its script, its
/// checked arguments, and the agent's tree as the engine pinned it.
pub struct ToolTestRun<'a> {
    pub account: &'a AccountId,
    pub agent: &'a spec::Agent,
    pub tool: &'a str,
    pub script: &'a str,
    pub arguments: &'a serde_json::Map<String, serde_json::Value>,
    /// Whether the agent's `secrets:` go into the environment (nothing else ever does).
    pub with_secrets: bool,
    pub files: &'a workspace::StepFiles,
    pub python: spec::PythonVersion,
}

/// Runs one attempt of one step. The binary adapts the sandbox to this trait.
pub trait StepExecutor: Send + Sync {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport;

    /// Runs one custom tool once, in a fresh sandbox like any step (issue 40). An executor
    /// that runs no sandbox here refuses, naming where tools are tested.
    fn test_tool(&self, _run: ToolTestRun<'_>) -> Result<ExecutionReport, StepRefusal> {
        Err(StepRefusal::Unavailable(
            "this process runs no step: the process that runs this data directory's steps (a \
             `stepward serve` with workers) tests tools; use its console or POST \
             /api/agents/NAME/tools/TOOL/test"
                .to_owned(),
        ))
    }

    /// The network the step's code will have, recorded durably with the attempt before it
    /// starts (G14). A code step declares its own; an agent step's is its agent file's, which
    /// only the executor reads. `Err` refuses the attempt with that reason.
    fn network_of(&self, query: NetworkQuery<'_>) -> Result<spec::Network, StepRefusal> {
        Ok(query.step.network())
    }

    /// Whether the query's step, pinned to `python`, could run here at all (the version is
    /// present, the network its code or its agent's scripts need can be built, the backend can
    /// enforce it). Asked for every step when a run starts, after its definitions are pinned
    /// (an agent step's needs are its pinned agent files'), so a run that could never finish
    /// is refused before any step runs or waits at a gate; `Err` says what is missing and the
    /// setting that would give it. `execute` refuses the same whatever this answered, so an
    /// executor that cannot tell in advance keeps the default.
    fn availability(
        &self,
        query: NetworkQuery<'_>,
        python: spec::PythonVersion,
    ) -> Result<(), StepRefusal> {
        let _ = (query, python);
        Ok(())
    }

    /// The models the query's step talks to (an agent step: its pinned agent's and every
    /// colleague's, as the account configures them now; never a key), pinned with the run when
    /// it starts. A code step talks to none, the default. `Err` refuses the run's start.
    fn models_of(
        &self,
        query: NetworkQuery<'_>,
    ) -> Result<Vec<crate::journal::PinnedModel>, StepRefusal> {
        let _ = query;
        Ok(Vec::new())
    }
}
