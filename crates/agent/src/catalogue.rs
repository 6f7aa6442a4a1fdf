//! What the model is offered: exactly the tools the agent file names (G21), each with a JSON
//! Schema of its arguments, and the check every call passes before anything runs.
//!
//! There is no allow or deny layer: a tool the file does not name is not in the catalogue,
//! so a call of it finds nothing and is refused. Arguments are checked against the tool's own
//! parameters (every required one present with its type, nothing else), and a call that fails
//! is refused with every problem named, so the model can correct itself.

use serde_json::{Map, Value, json};

/// What a tool does when called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    Run,
    /// `Consult`: a sub-loop of one of the file's colleagues, with that colleague's own file,
    /// tools and secrets (offered only to an agent that names colleagues).
    Consult,
    /// A custom tool: its script's path relative to the agent's folder.
    Custom {
        script: String,
    },
}

impl ToolKind {
    /// Whether calling the tool runs a script in the sandbox (the step's code has started).
    pub fn runs_script(&self) -> bool {
        matches!(self, ToolKind::Run | ToolKind::Custom { .. })
    }
}

/// The type of one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
}

impl ParamKind {
    fn schema_type(self) -> &'static str {
        match self {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Number => "number",
            ParamKind::Boolean => "boolean",
            ParamKind::Object => "object",
            ParamKind::Array => "array",
        }
    }

    fn accepts(self, value: &Value) -> bool {
        match self {
            ParamKind::String => value.is_string(),
            ParamKind::Integer => value.is_i64() || value.is_u64(),
            ParamKind::Number => value.is_number(),
            ParamKind::Boolean => value.is_boolean(),
            ParamKind::Object => value.is_object(),
            ParamKind::Array => value.is_array(),
        }
    }

    fn of(kind: spec::InputKind) -> ParamKind {
        match kind {
            spec::InputKind::String => ParamKind::String,
            spec::InputKind::Integer => ParamKind::Integer,
            spec::InputKind::Number => ParamKind::Number,
            spec::InputKind::Boolean => ParamKind::Boolean,
            spec::InputKind::Object => ParamKind::Object,
            spec::InputKind::Array => ParamKind::Array,
        }
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub required: bool,
    pub description: String,
    /// The only values the parameter takes (a JSON Schema `enum`); empty: any of its type.
    pub choices: Vec<String>,
}

fn param(name: &str, kind: ParamKind, required: bool, description: &str) -> Param {
    Param {
        name: name.to_owned(),
        kind,
        required,
        description: description.to_owned(),
        choices: Vec::new(),
    }
}

/// The name of the tool that consults a colleague.
pub const CONSULT: &str = "Consult";

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    pub name: String,
    pub description: String,
    pub kind: ToolKind,
    pub params: Vec<Param>,
}

impl Offered {
    /// The tool as the provider is told of it.
    pub fn definition(&self) -> llm::ToolDefinition {
        let mut properties = Map::new();
        for param in &self.params {
            let mut schema =
                json!({ "type": param.kind.schema_type(), "description": param.description });
            if !param.choices.is_empty() {
                schema["enum"] = json!(param.choices);
            }
            properties.insert(param.name.clone(), schema);
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|param| param.required)
            .map(|param| param.name.as_str())
            .collect();
        llm::ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }),
        }
    }

    /// Every way `arguments` breaks this tool's parameters, in words (empty: valid).
    pub fn problems(&self, arguments: &Map<String, Value>) -> Vec<String> {
        let mut problems = Vec::new();
        for param in &self.params {
            match arguments.get(&param.name) {
                None if param.required => problems.push(format!(
                    "the argument `{}` ({}) is missing",
                    param.name,
                    param.kind.schema_type()
                )),
                None => {}
                Some(value) if !param.kind.accepts(value) => problems.push(format!(
                    "the argument `{}` must be of type {}",
                    param.name,
                    param.kind.schema_type()
                )),
                Some(value)
                    if !param.choices.is_empty()
                        && !param
                            .choices
                            .iter()
                            .any(|choice| value.as_str() == Some(choice.as_str())) =>
                {
                    problems.push(format!(
                        "the argument `{}` must be one of {}",
                        param.name,
                        param.choices.join(", ")
                    ));
                }
                Some(_) => {}
            }
        }
        for name in arguments.keys() {
            if !self.params.iter().any(|param| &param.name == name) {
                let known: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
                problems.push(format!(
                    "`{name}` is not an argument of {} (its arguments: {})",
                    self.name,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
        problems
    }
}

/// Why a call was refused without running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallRefusal {
    /// The agent file does not name the tool: for this agent it does not exist.
    UnknownTool { name: String, offered: Vec<String> },
    /// The arguments do not fit the tool's parameters.
    BadArguments { tool: String, problems: Vec<String> },
}

impl std::fmt::Display for CallRefusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallRefusal::UnknownTool { name, offered } => write!(
                formatter,
                "refused: there is no tool `{name}` for this agent; nothing was run. The tools \
                 you have are: {}",
                offered.join(", ")
            ),
            CallRefusal::BadArguments { tool, problems } => write!(
                formatter,
                "refused: the call of {tool} does not fit its arguments, so nothing was run: {}",
                problems.join("; ")
            ),
        }
    }
}

/// The tools of one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    tools: Vec<Offered>,
}

impl Catalogue {
    /// Exactly the tools `agent`'s file names, in its order, and `Consult` last when it names
    /// colleagues (its `colleague` argument takes exactly their names).
    pub fn for_agent(agent: &spec::Agent) -> Catalogue {
        let mut tools: Vec<Offered> = agent
            .tools()
            .iter()
            .filter_map(|tool| offered(agent, tool))
            .collect();
        if !agent.colleagues().is_empty() {
            let mut colleague = param(
                "colleague",
                ParamKind::String,
                true,
                "The colleague to consult: one of the agents named here.",
            );
            colleague.choices = agent.colleagues().to_vec();
            tools.push(Offered {
                name: CONSULT.to_owned(),
                description: format!(
                    "Hands a task to a colleague (one of: {}), who works on it with its own                      tools and answers in words. One colleague at a time; its turns, tokens                      and time count against yours.",
                    agent.colleagues().join(", ")
                ),
                kind: ToolKind::Consult,
                params: vec![
                    colleague,
                    param(
                        "task",
                        ParamKind::String,
                        true,
                        "What the colleague should do, in plain words, with everything it                          needs to know.",
                    ),
                ],
            });
        }
        Catalogue { tools }
    }

    pub fn tools(&self) -> &[Offered] {
        &self.tools
    }

    pub fn definitions(&self) -> Vec<llm::ToolDefinition> {
        self.tools.iter().map(Offered::definition).collect()
    }

    /// The tool a call names, if its arguments fit; the refusal otherwise.
    pub fn check(&self, call: &llm::ToolCall) -> Result<&Offered, CallRefusal> {
        let Some(tool) = self.tools.iter().find(|tool| tool.name == call.name) else {
            return Err(CallRefusal::UnknownTool {
                name: call.name.clone(),
                offered: self.tools.iter().map(|tool| tool.name.clone()).collect(),
            });
        };
        let problems = tool.problems(&call.arguments);
        if problems.is_empty() {
            Ok(tool)
        } else {
            Err(CallRefusal::BadArguments {
                tool: tool.name.clone(),
                problems,
            })
        }
    }

    /// Whether any tool can write into the agent's tree: without one, `/work` is read-only
    /// and nothing is copied back.
    pub fn writes(&self, agent: &spec::Agent) -> bool {
        self.tools.iter().any(|tool| match &tool.kind {
            ToolKind::Write | ToolKind::Edit | ToolKind::Run => true,
            ToolKind::Custom { .. } => agent
                .custom_tool(&tool.name)
                .is_some_and(spec::CustomTool::writes),
            // A colleague writes in its own tree, through its own copy-back.
            ToolKind::Read | ToolKind::Glob | ToolKind::Grep | ToolKind::Consult => false,
        })
    }
}

const PATH: &str = "A path relative to the root of your tree, such as `shared/notes/week.md`.";

fn offered(agent: &spec::Agent, tool: &spec::Tool) -> Option<Offered> {
    use ParamKind::{Boolean, Integer, String as Text};
    let built_in = |name: &str, description: &str, kind: ToolKind, params: Vec<Param>| Offered {
        name: name.to_owned(),
        description: description.to_owned(),
        kind,
        params,
    };
    Some(match tool {
        spec::Tool::Read => built_in(
            "Read",
            "Reads a text file of your tree. Large files come in pages of lines: give `offset` \
             (the first line, from 1) and `limit` (how many lines) to read further. A page holds \
             at most 256 KiB; a line longer than that comes in parts, each answer giving the \
             `from_byte` to read on from. A binary file is described, not shown.",
            ToolKind::Read,
            vec![
                param("path", Text, true, PATH),
                param("offset", Integer, false, "The first line to read, from 1."),
                param(
                    "from_byte",
                    Integer,
                    false,
                    "A byte position to read on from, as a cut long line's answer gives it \
                     (instead of `offset`).",
                ),
                param(
                    "limit",
                    Integer,
                    false,
                    "How many lines to read (at most 2000).",
                ),
            ],
        ),
        spec::Tool::Write => built_in(
            "Write",
            "Writes a whole file of your tree (made or replaced), making its folders.",
            ToolKind::Write,
            vec![
                param("path", Text, true, PATH),
                param("content", Text, true, "The file's whole new content."),
            ],
        ),
        spec::Tool::Edit => built_in(
            "Edit",
            "Replaces `old_string` with `new_string` in a file of your tree. `old_string` must \
             occur exactly once unless `replace_all` is true.",
            ToolKind::Edit,
            vec![
                param("path", Text, true, PATH),
                param("old_string", Text, true, "The exact text to replace."),
                param("new_string", Text, true, "The text to put in its place."),
                param("replace_all", Boolean, false, "Replace every occurrence."),
            ],
        ),
        spec::Tool::Glob => built_in(
            "Glob",
            "Lists the files of your tree whose path matches a glob pattern such as \
             `shared/notes/**/*.md`. At most 200 paths; the answer says when it was cut.",
            ToolKind::Glob,
            vec![param("pattern", Text, true, "A glob pattern over paths.")],
        ),
        spec::Tool::Grep => built_in(
            "Grep",
            "Searches the text files of your tree for a regular expression and lists matching \
             lines as `path:line: text`. At most 100 lines; the answer says when it was cut.",
            ToolKind::Grep,
            vec![
                param("pattern", Text, true, "A regular expression (Rust syntax)."),
                param(
                    "path",
                    Text,
                    false,
                    "A folder or file of your tree to search in (default: all of it).",
                ),
                param(
                    "glob",
                    Text,
                    false,
                    "Only files whose path matches this glob.",
                ),
            ],
        ),
        spec::Tool::Run => built_in(
            "Run",
            "Runs Python code (the standard library only, no third-party package) with the \
             working directory at the root of your tree, and returns what it printed. It has \
             no secrets in its environment.",
            ToolKind::Run,
            vec![param("code", Text, true, "The Python source to run.")],
        ),
        spec::Tool::Custom(name) => {
            let custom = agent.custom_tool(name)?;
            Offered {
                name: name.clone(),
                description: custom.explain().to_owned(),
                kind: ToolKind::Custom {
                    script: custom.script().to_owned(),
                },
                params: custom
                    .arguments()
                    .iter()
                    .map(|argument| Param {
                        name: argument.name().to_owned(),
                        kind: ParamKind::of(argument.kind()),
                        required: !argument.optional(),
                        description: format!("{} argument", argument.kind().as_str()),
                        choices: Vec::new(),
                    })
                    .collect(),
            }
        }
    })
}
