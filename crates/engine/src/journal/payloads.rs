//! The payload of each event kind, in the shape of journal version 1.
//!
//! Field names and encodings are the stored form: renaming a field or changing how a value is
//! written is a new journal version (see `crate::journal`). The storage vocabularies
//! (statuses, network modes, doors, decisions) are written by their stable names; an actor as
//! its kind, id and display name, the parts the decisions table stores too.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use storage::{Actor, AttemptStatus, DecisionKind, Door, NetworkMode, RunStatus};

/// The run was created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCreated {
    /// The status the run was created in.
    #[serde(with = "by_name")]
    pub status: RunStatus,
    /// The workflow's name.
    pub workflow: String,
    /// The file name it was parsed under.
    pub file: String,
    /// SHA-256 of the workflow text, hex.
    pub hash: String,
    /// The run-time inputs, scrubbed.
    pub inputs: Value,
    #[serde(with = "actor")]
    pub started_by: Actor,
}

/// What the run pinned when it started (issue 16 §1): the workspace's head revision, the
/// workflow's saved version (when its text is one), and every agent folder in reach with each
/// file's content hash. An agent step runs exactly these bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefinitionsPinned {
    /// The workspace's newest revision when the run started (`None`: an empty history).
    pub revision: Option<String>,
    /// `workflows/NAME.yaml` when the run's text is a saved version of it.
    pub workflow_path: Option<String>,
    /// That version's number.
    pub workflow_version: Option<u32>,
    /// Every agent in reach (the steps' agents, their colleagues at any depth), by name.
    pub agents: Vec<PinnedAgent>,
    /// The model each agent in reach talks to, as the account configured it when the run
    /// started (journal version 3): a provider changed or removed while the run waits refuses
    /// the step instead of talking to another endpoint. Never a key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<PinnedModel>,
}

/// The model one agent of a run talks to: the account's provider by name, its kind and base
/// URL, and the model id the agent file names. The key is looked up again at every use (G18).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedModel {
    pub agent: String,
    pub provider: String,
    /// `anthropic` or `openai`.
    pub kind: String,
    pub base_url: String,
    pub model: String,
}

/// One pinned agent folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedAgent {
    pub name: String,
    /// Every regular file of `agents/NAME/` (empty: the folder did not exist).
    pub files: Vec<PinnedFile>,
}

/// One pinned file: its workspace path and the SHA-256 (hex) of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedFile {
    pub path: String,
    pub sha256: String,
}

/// The run's status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatusChanged {
    #[serde(with = "by_name")]
    pub status: RunStatus,
    /// Why the run is not going on by itself, if it is not.
    pub reason: Option<String>,
}

/// The names of the credentials a run holds, never their values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretsResolved {
    pub names: Vec<String>,
}

/// The connections that could not be resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretsUnavailable {
    pub connections: Vec<UnavailableConnection>,
}

/// One connection that could not be resolved, and why (names only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnavailableConnection {
    pub alias: String,
    pub reason: String,
}

/// The run parked before a gate; a decision on it is recorded against `attempt`, the step's
/// next attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateParked {
    pub step: String,
    pub attempt: u32,
}

/// A person's decision (G23): what, on which step and attempt (none for a stop of the whole
/// run), by whom, through which door, with what note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonDecided {
    #[serde(with = "by_name")]
    pub decision: DecisionKind,
    pub step: Option<String>,
    pub attempt: Option<u32>,
    #[serde(with = "actor")]
    pub who: Actor,
    #[serde(with = "by_name")]
    pub door: Door,
    pub note: String,
    /// A retry's new inputs, each replacing the step's input of its name (scrubbed, as every
    /// payload): what the decision was on. Recovery runs the step with them (a crash between
    /// the decision and the attempt never runs the inputs the person corrected), and on a
    /// gated step they need a new gate decision (G23).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_inputs: Option<Value>,
}

/// An attempt recorded as running, with its network mode, before the executor was called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptStarted {
    pub step: String,
    pub attempt: u32,
    #[serde(with = "by_name")]
    pub network: NetworkMode,
    /// The inputs the attempt runs with, scrubbed (a value under a forbidden key masked).
    pub inputs: Value,
}

/// An attempt ended, as observed from outside the sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptFinished {
    pub step: String,
    pub attempt: u32,
    #[serde(with = "by_name")]
    pub status: AttemptStatus,
    /// The step's output, for a succeeded attempt (a step may return JSON `null`, which reads
    /// back as no output, as the store's row does).
    pub output: Option<Value>,
    /// What the step's code raised, for a failure the executor reported.
    pub error: Option<StepFailure>,
    /// Why the attempt failed, was refused or is unknown.
    pub reason: Option<String>,
    /// The exact interpreter version (G8), when the interpreter started.
    pub interpreter_version: Option<String>,
    /// The backend's name.
    pub backend: Option<String>,
    /// What the backend chose or could not use.
    pub isolation_notes: Option<String>,
}

/// An error the step's code raised, scrubbed and bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFailure {
    pub kind: String,
    pub message: String,
    pub traceback: String,
    /// Whether the step's own code had started (G14: a networked step's failure after that is
    /// `unknown`).
    pub code_started: bool,
}

/// What a step printed on one stream: scrubbed, then bounded (G17).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPrinted {
    pub step: String,
    pub attempt: u32,
    pub stream: PrintedStream,
    /// The text kept.
    pub text: String,
    /// How many bytes the step printed, before scrubbing and bounding.
    pub printed_bytes: u64,
}

/// The stream a step printed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrintedStream {
    Stdout,
    Stderr,
}

/// A copy-back refused (G12): one file, or a whole revision the workspace would not write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyBackRefused {
    pub step: String,
    pub attempt: u32,
    #[serde(flatten)]
    pub refused: RefusedFiles,
    pub reason: String,
    pub by: RefusedBy,
}

/// What a copy-back refusal refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RefusedFiles {
    /// One file, by its path in the folder (withheld when the path holds a value).
    File { path: String },
    /// Every file of a revision the workspace refused, nothing of it written.
    Revision { files: Vec<FileWritten> },
}

/// Who refused a copy-back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedBy {
    /// The sandbox's copy-back filter (links, devices, sizes, protected paths).
    Sandbox,
    /// The engine's screen (a value of the account in a file or its path, a path it refuses).
    Engine,
    /// The workspace, refusing the whole revision.
    Workspace,
}

/// A file of a copy-back, by path and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWritten {
    pub path: String,
    pub bytes: u64,
}

/// The copy-back written as a workspace revision authored by the step (G25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRevision {
    pub step: String,
    pub attempt: u32,
    /// The revision's id in the account's history.
    pub revision: String,
    pub files: Vec<FileWritten>,
}

/// What the supervisor decided after a failed attempt (G15): what, who (the provider and
/// model, or why no model decided), its note, and which inputs a retry changed.
///
/// `note`, `by` and `changed` were added to version 1 as optional fields: an event written
/// before them reads with none, and a reader that does not know them ignores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupervisorDecided {
    pub step: String,
    pub attempt: u32,
    #[serde(flatten)]
    pub decision: SupervisorChoice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<SupervisorBy>,
    /// The input names whose value a retry changed, in the step's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

/// Who took a supervisor decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SupervisorBy {
    /// The account's assistant on this provider and model.
    Model { provider: String, model: String },
    /// No model: why the failure went to a person.
    NoModel { why: String },
}

/// The supervisor's choice, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum SupervisorChoice {
    /// Run the step again with these inputs (a value under a forbidden key masked).
    Retry { inputs: Value },
    /// Stop the run, for this reason (scrubbed).
    Stop { reason: String },
    /// Bring the run to a person.
    AskPerson,
}

/// A person accepted the assistant's repair of a step that needed repair (G9): from `step`
/// on, the run runs workflow version `version` (its text's SHA-256 `hash`); the outputs of the
/// steps before stand. `attempt` is the attempt that needed repair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairAccepted {
    pub step: String,
    pub attempt: u32,
    pub version: u32,
    pub hash: String,
    /// Who wrote it: the assistant's provider and model.
    pub provider: String,
    pub model: String,
    #[serde(with = "actor")]
    pub accepted_by: Actor,
    #[serde(with = "by_name")]
    pub door: Door,
    pub note: String,
}

/// The assistant proposed new code for a step that needed repair (G9), after the proposal
/// passed every check (parsed with the workflow, only that step's code changed, imports
/// against the pinned standard library). `for_hash` is the SHA-256 of the run's workflow text
/// it was made for; `refused` the earlier proposals refused before anything was shown, with
/// why. Nothing is saved until a person accepts it (`repair.accepted`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairProposed {
    pub step: String,
    pub attempt: u32,
    /// The proposed code; empty when an earlier proposal of the run holds the same code
    /// (`code_sha256`), which is stored once (journal version 4). Read through
    /// `Engine::repair_proposal`, which fills it in.
    pub code: String,
    /// The SHA-256 (hex) of the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_sha256: Option<String>,
    pub note: String,
    pub provider: String,
    pub model: String,
    pub for_hash: String,
    #[serde(default)]
    pub refused: Vec<String>,
}

/// A supervisor's retry the engine refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupervisorRetryRefused {
    pub step: String,
    pub attempt: u32,
    pub reason: String,
}

/// Recovery after a restart found an attempt in `found` (running) and finished it as `now`
/// (`unknown` with network, `failed` without, G14).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    pub step: String,
    pub attempt: u32,
    #[serde(with = "by_name")]
    pub found: AttemptStatus,
    #[serde(with = "by_name")]
    pub now: AttemptStatus,
}

/// A storage vocabulary by its stable name (`Display` writes it, `FromStr` reads it).
mod by_name {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<T: Display, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub(super) fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// An actor as `{"kind", "id", "name"}`, the parts the decisions table stores.
mod actor {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use storage::Actor;

    #[derive(Serialize)]
    struct Parts<'a> {
        kind: &'a str,
        id: &'a str,
        name: &'a str,
    }

    pub(super) fn serialize<S: Serializer>(
        actor: &Actor,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        Parts {
            kind: actor.kind(),
            id: actor.id(),
            name: actor.display_name(),
        }
        .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Actor, D::Error> {
        #[derive(Deserialize)]
        struct Owned {
            kind: String,
            id: String,
            name: String,
        }
        let parts = Owned::deserialize(deserializer)?;
        Actor::from_parts(&parts.kind, &parts.id, &parts.name).map_err(serde::de::Error::custom)
    }
}

/// One turn of an agent step's model (issue 16): the tokens it cost and why it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTurn {
    pub step: String,
    pub attempt: u32,
    pub turn: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub stop_reason: String,
}

/// A tool call of an agent step, written before the call runs (G14, G25); arguments scrubbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCalled {
    pub step: String,
    pub attempt: u32,
    pub turn: u64,
    pub call: String,
    pub tool: String,
    pub arguments: Value,
}

/// How a tool call ended, written after it ran: `ok`, `error` or `refused` (a path the file
/// tools refused, with the path the agent probably meant); the result scrubbed and bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFinished {
    pub step: String,
    pub attempt: u32,
    pub call: String,
    pub tool: String,
    pub outcome: String,
    pub result: String,
    pub refused_path: Option<String>,
    pub suggestion: Option<String>,
}

/// A call refused before it could run: a tool the agent file does not name, or arguments that
/// do not fit the tool's (G21). Nothing ran; the model was told why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRefused {
    pub step: String,
    pub attempt: u32,
    pub turn: u64,
    pub call: String,
    pub tool: String,
    pub reason: String,
}

/// A `loop:` limit of an agent step tripped (turns, tokens, step time, per-call time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLimit {
    pub step: String,
    pub attempt: u32,
    pub limit: String,
    pub detail: String,
}
