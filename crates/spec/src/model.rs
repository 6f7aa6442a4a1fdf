//! The validated values: immutable, built only by this crate's parser.
//!
//! Every field is private and every constructor is `pub(crate)`, so a `Workflow` or an `Agent`
//! in another crate is proof that the text it came from passed every rule (G1).

use std::fmt;

/// A workflow that passed every rule. Holds its source text so the engine can parse it again
/// right before a run (G1).
///
/// No other crate can build one: its fields are private (G1).
///
/// ```compile_fail,E0451
/// let forged = spec::Workflow {
///     file_name: String::new(),
///     source: String::new(),
///     name: String::new(),
///     python: spec::PythonVersion { major: 3, minor: 11 },
///     inputs: Vec::new(),
///     steps: Vec::new(),
/// };
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub(crate) file_name: String,
    pub(crate) source: String,
    pub(crate) name: String,
    pub(crate) python: PythonVersion,
    pub(crate) supervisor: Supervision,
    pub(crate) notify: crate::Notify,
    pub(crate) inputs: Vec<WorkflowInput>,
    pub(crate) steps: Vec<Step>,
}

/// Who sees a failed step of a workflow (G15): `supervisor: assistant` (the default) or
/// `supervisor: none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Supervision {
    /// The account's assistant, on its default provider and assistant model; with no provider
    /// configured, a person.
    #[default]
    Assistant,
    /// Every failure goes straight to a person; no model sees it.
    None,
}

impl Supervision {
    pub fn as_str(self) -> &'static str {
        match self {
            Supervision::Assistant => "assistant",
            Supervision::None => "none",
        }
    }
}

impl Workflow {
    /// The name the file was parsed under; diagnostics of a re-parse use it.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// The exact text this value was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pinned interpreter version (G8); the sandbox refuses any other.
    pub fn python(&self) -> PythonVersion {
        self.python
    }

    /// Who sees a failed step (`supervisor:`, G15).
    pub fn supervisor(&self) -> Supervision {
        self.supervisor
    }

    /// Who is mailed when a run waits at a gate (`notify:`).
    pub fn notify(&self) -> &crate::Notify {
        &self.notify
    }

    /// The declared workflow inputs, in file order.
    pub fn inputs(&self) -> &[WorkflowInput] {
        &self.inputs
    }

    /// The steps, in file order; that is the order they run in.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The step with this id (without any gate mark).
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }
}

/// A `"MAJOR.MINOR"` Python pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PythonVersion {
    pub major: u16,
    pub minor: u16,
}

impl PythonVersion {
    /// `MAJOR.MINOR`, each digits only (`3.11`); `None` for anything else (a patch release,
    /// a sign, a space). What a workflow's `python:` and a tool test's version are read with.
    pub fn parse(text: &str) -> Option<PythonVersion> {
        let (major, minor) = text.split_once('.')?;
        let digits = |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit());
        if !(digits(major) && digits(minor)) {
            return None;
        }
        Some(PythonVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One declared workflow input (`inputs: { ticket_id: string }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowInput {
    pub(crate) name: String,
    pub(crate) kind: InputKind,
}

impl WorkflowInput {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> InputKind {
        self.kind
    }
}

/// The declared type of a workflow input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
}

impl InputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::String => "string",
            InputKind::Integer => "integer",
            InputKind::Number => "number",
            InputKind::Boolean => "boolean",
            InputKind::Object => "object",
            InputKind::Array => "array",
        }
    }
}

/// What a step, or an agent's scripts and tools, may reach on the network (G3, G11): the one
/// network type of every layer (`ids::Network`).
pub use ids::Network;

/// One step of a workflow.
///
/// ```compile_fail,E0451
/// let forged = spec::Step {
///     id: String::new(),
///     gate: false,
///     explain: String::new(),
///     network: spec::Network::PublicEgress,
///     connections: Vec::new(),
///     inputs: Vec::new(),
///     body: spec::StepBody::Code { source: String::new() },
/// };
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub(crate) id: String,
    pub(crate) gate: bool,
    pub(crate) explain: String,
    pub(crate) network: Network,
    pub(crate) connections: Vec<String>,
    pub(crate) inputs: Vec<(String, InputSource)>,
    pub(crate) body: StepBody,
    pub(crate) limits: crate::StepLimits,
    /// Where the `code` or `agent` value is written.
    pub(crate) body_origin: crate::Origin,
    /// How an agent step's answer becomes its output (`output:`).
    pub(crate) output: OutputKind,
}

/// How an agent step's answer becomes the step's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputKind {
    /// The answer as a JSON string (the default).
    #[default]
    Text,
    /// `output: json`: the answer parsed as JSON; an answer that is not JSON fails the step.
    Json,
}

impl Step {
    /// The limits a code step declared (an agent step declares none: its agent file does).
    pub fn limits(&self) -> &crate::StepLimits {
        &self.limits
    }

    /// The id, without the gate mark (`send!` is the step `send`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether a person must decide before this step runs (a trailing `!`, G23).
    pub fn is_gate(&self) -> bool {
        self.gate
    }

    /// The plain-language explanation. Never blank for a code step (G2); may be empty for an
    /// agent step, whose agent file describes it.
    pub fn explain(&self) -> &str {
        &self.explain
    }

    /// For a code step, what the step declared; for an agent step, `None` here: the agent
    /// file's `network` governs (see [`crate::Agent::network`]).
    pub fn network(&self) -> Network {
        self.network
    }

    /// The connection aliases granted to this step, unique, in file order.
    pub fn connections(&self) -> &[String] {
        &self.connections
    }

    /// The step's inputs: keyword name and where its value comes from, in file order.
    pub fn inputs(&self) -> &[(String, InputSource)] {
        &self.inputs
    }

    pub fn body(&self) -> &StepBody {
        &self.body
    }

    /// A code step's Python source; `None` for an agent step.
    pub fn code(&self) -> Option<&str> {
        match &self.body {
            StepBody::Code { source } => Some(source),
            StepBody::Agent { .. } => None,
        }
    }

    /// How an agent step's answer becomes its output (`output: json` parses it).
    pub fn output(&self) -> OutputKind {
        self.output
    }

    /// Where the step's `code` (or `agent`) value is written: a report about a place in the
    /// code (a Python syntax error) is placed at the file's line and column with it.
    pub fn body_origin(&self) -> crate::Origin {
        self.body_origin
    }
}

/// What a step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepBody {
    /// Python source that defines `def main(`.
    Code { source: String },
    /// A task handed to the named agent (`agents/<agent>/AGENT.md`).
    Agent { agent: String, task: String },
}

/// Where one step input's value comes from. No string templating exists, on purpose.
#[derive(Debug, Clone, PartialEq)]
pub enum InputSource {
    /// A literal value, checked for forbidden keys at parse time (G4).
    Literal(serde_json::Value),
    /// `{ from: input.NAME }`: a declared workflow input.
    WorkflowInput(String),
    /// `{ from: STEP_ID }`: the output of an earlier step.
    StepOutput(String),
}

/// An agent file (`AGENT.md`) that passed every rule.
///
/// No other crate can build one: its fields are private (G1, G21).
///
/// ```compile_fail,E0451
/// let forged = spec::Agent {
///     file_name: String::new(),
///     source: String::new(),
///     name: String::new(),
///     description: String::new(),
///     model: None,
///     tools: vec![spec::Tool::Run],
///     secrets: Vec::new(),
///     colleagues: Vec::new(),
///     network: spec::Network::PublicEgress,
///     prompt: String::new(),
///     custom_tools: Vec::new(),
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub(crate) file_name: String,
    pub(crate) source: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) model: Option<String>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) secrets: Vec<String>,
    pub(crate) colleagues: Vec<String>,
    pub(crate) network: Network,
    pub(crate) prompt: String,
    pub(crate) custom_tools: Vec<CustomTool>,
    pub(crate) limits: crate::StepLimits,
    pub(crate) loop_limits: crate::LoopLimits,
}

impl Agent {
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The tools this agent has; a tool not named here does not exist for it (G21).
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Secret names its scripts receive as environment variables (G19).
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub fn colleagues(&self) -> &[String] {
        &self.colleagues
    }

    /// What the agent's scripts and tools may reach (G3).
    pub fn network(&self) -> Network {
        self.network
    }

    /// The body of the file: the agent's prompt.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The tools this file declares under `custom_tools`, in file order; each is also in
    /// [`Agent::tools`] as a [`Tool::Custom`].
    /// The limits of each of this agent's script and tool calls.
    pub fn limits(&self) -> &crate::StepLimits {
        &self.limits
    }

    /// The agent loop's limits (`loop:`).
    pub fn loop_limits(&self) -> &crate::LoopLimits {
        &self.loop_limits
    }

    pub fn custom_tools(&self) -> &[CustomTool] {
        &self.custom_tools
    }

    /// The declaration of the custom tool with this name.
    /// The tools of this file that apply a change rather than propose one (G21): with
    /// `network: public_egress`, `Run`, and every custom tool that does not declare
    /// `applies: false` (the author's claim). An agent holding one may be used only by a
    /// step that is itself a gate (`apply-before-gate`). Colleagues are not counted here.
    pub fn applying_tools(&self) -> Vec<&str> {
        if self.network != Network::PublicEgress {
            return Vec::new();
        }
        self.tools
            .iter()
            .filter(|tool| match tool {
                Tool::Run => true,
                Tool::Custom(name) => self
                    .custom_tool(name)
                    .is_none_or(|custom| custom.applies != Some(false)),
                Tool::Read | Tool::Write | Tool::Edit | Tool::Glob | Tool::Grep => false,
            })
            .map(Tool::name)
            .collect()
    }

    pub fn custom_tool(&self, name: &str) -> Option<&CustomTool> {
        self.custom_tools.iter().find(|tool| tool.name == name)
    }
}

/// A tool an agent file declares itself: a script in the agent's folder, run in the same
/// sandbox as code steps, with the agent's secrets and network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomTool {
    pub(crate) name: String,
    pub(crate) explain: String,
    pub(crate) script: String,
    pub(crate) script_origin: crate::Origin,
    pub(crate) arguments: Vec<ToolArgument>,
    pub(crate) applies: Option<bool>,
    pub(crate) writes: bool,
}

/// One argument a custom tool declares: the model's call must carry it (unless optional) with
/// a value of its type, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolArgument {
    pub(crate) name: String,
    pub(crate) kind: InputKind,
    pub(crate) optional: bool,
}

impl ToolArgument {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> InputKind {
        self.kind
    }

    pub fn optional(&self) -> bool {
        self.optional
    }
}

impl CustomTool {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the tool does, in plain words; the model reads it to decide when to call it.
    pub fn explain(&self) -> &str {
        &self.explain
    }

    /// The script's path relative to the agent's folder: never absolute, never with `..`.
    pub fn script(&self) -> &str {
        &self.script
    }

    /// The arguments the tool declares, in file order.
    pub fn arguments(&self) -> &[ToolArgument] {
        &self.arguments
    }

    /// What the file says of `applies` (`None`: not said).
    pub fn declared_applies(&self) -> Option<bool> {
        self.applies
    }

    /// Whether the tool writes files into the agent's tree (`writes: true`).
    pub fn writes(&self) -> bool {
        self.writes
    }

    /// Where the agent file names the script, for a report about it (`stepward check`).
    pub fn script_origin(&self) -> crate::Origin {
        self.script_origin
    }
}

/// A tool an agent file names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tool {
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    Run,
    /// A tool the agent file itself declares under `custom_tools`.
    Custom(String),
}

impl Tool {
    pub fn name(&self) -> &str {
        match self {
            Tool::Read => "Read",
            Tool::Write => "Write",
            Tool::Edit => "Edit",
            Tool::Glob => "Glob",
            Tool::Grep => "Grep",
            Tool::Run => "Run",
            Tool::Custom(name) => name,
        }
    }
}
