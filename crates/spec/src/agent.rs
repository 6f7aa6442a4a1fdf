//! Agent files (`AGENT.md`): YAML front matter between `---` lines, then the prompt. An agent
//! can do only what its file names (G21), so every tool must be built in or declared here.

use std::collections::HashSet;

use crate::diagnostic::{Diagnostic, Diagnostics, Position};
use crate::lower::{
    Fields, Seen, check_unique, fields, is_agent_name, network, non_blank_string, string,
    string_list,
};
use crate::model::{Agent, CustomTool, Tool};
use crate::suggest::closest;
use crate::yaml::{self, MAX_INPUT_BYTES, NodeValue};

/// The keys of an agent file's front matter.
pub(crate) const AGENT_KEYS: &[&str] = &[
    "name",
    "description",
    "model",
    "tools",
    "secrets",
    "colleagues",
    "network",
    "custom_tools",
    "limits",
    "loop",
];

const CUSTOM_TOOL_KEYS: &[&str] = &["explain", "script", "arguments", "applies", "writes"];

const BUILT_IN_TOOLS: &[(&str, Tool)] = &[
    ("Read", Tool::Read),
    ("Write", Tool::Write),
    ("Edit", Tool::Edit),
    ("Glob", Tool::Glob),
    ("Grep", Tool::Grep),
    ("Run", Tool::Run),
];

/// Parses and validates an agent file, holding its `limits` to the built-in maxima. Every rule
/// runs, and every violation is returned at once, in file order. Never panics, whatever
/// `text` holds.
pub fn parse_agent(file_name: &str, text: &str) -> Result<Agent, Vec<Diagnostic>> {
    parse_agent_within(file_name, text, &crate::LimitMaxima::BUILT_IN)
}

/// [`parse_agent`] with the operator's maxima: a declared limit above one is an error.
pub fn parse_agent_within(
    file_name: &str,
    text: &str,
    maxima: &crate::LimitMaxima,
) -> Result<Agent, Vec<Diagnostic>> {
    let mut diagnostics = Diagnostics::new(file_name);
    let agent = lower_agent_file(file_name, text, maxima, &mut diagnostics);
    match agent {
        Some(agent) if diagnostics.is_empty() => Ok(agent),
        _ => {
            if diagnostics.is_empty() {
                diagnostics.report(
                    Position::START,
                    "invalid-agent",
                    "the agent file could not be read",
                    "start the file with `---`, the front matter, `---`, then the prompt",
                );
            }
            Err(diagnostics.finish(text))
        }
    }
}

/// The parts of an agent file: front matter YAML and the prompt after it.
pub(crate) struct Parts<'text> {
    pub(crate) front_matter: &'text str,
    prompt: &'text str,
    /// The line the prompt starts on, for a diagnostic about a blank prompt.
    prompt_line: u32,
}

pub(crate) fn split_front_matter<'text>(
    text: &'text str,
    diagnostics: &mut Diagnostics,
) -> Option<Parts<'text>> {
    let without_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = without_bom.split_inclusive('\n');
    let opening = lines.next().unwrap_or_default();
    if opening.trim_end() != "---" {
        diagnostics.report(
            Position::START,
            "missing-front-matter",
            "an agent file must start with a `---` line opening its front matter",
            "start the file with `---`, then `name:`, `description:` and the other keys, then \
             `---`, then the prompt",
        );
        return None;
    }
    let front_matter_start = opening.len();
    let mut offset = front_matter_start;
    let mut line_number: u32 = 1;
    for line in lines {
        line_number = line_number.saturating_add(1);
        if line.trim_end() == "---" {
            return Some(Parts {
                front_matter: &without_bom[front_matter_start..offset],
                prompt: &without_bom[offset + line.len()..],
                prompt_line: line_number.saturating_add(1),
            });
        }
        offset += line.len();
    }
    diagnostics.report(
        Position::START,
        "unclosed-front-matter",
        "the front matter opened here is never closed",
        "end the front matter with a line holding only `---`, then write the prompt",
    );
    None
}

fn lower_agent_file(
    file_name: &str,
    text: &str,
    maxima: &crate::LimitMaxima,
    diagnostics: &mut Diagnostics,
) -> Option<Agent> {
    if text.len() > MAX_INPUT_BYTES {
        diagnostics.report(
            Position::START,
            "file-too-large",
            format!(
                "the file is {} bytes, more than the limit of {MAX_INPUT_BYTES} bytes",
                text.len()
            ),
            "keep the prompt short and move reference material into files in the agent's \
             folder, which its tools can read",
        );
        return None;
    }
    if crate::diagnostic::report_unshowable(text, diagnostics) {
        return None;
    }
    let parts = split_front_matter(text, diagnostics)?;
    // The front matter starts on line 2, after the opening `---`.
    let root = yaml::parse(parts.front_matter, 1, diagnostics)?;
    let fields = fields(&root, "the agent's front matter", AGENT_KEYS, diagnostics)?;
    let name = lower_agent_name(&fields, file_name, diagnostics);
    let description = match fields.get("description") {
        Some(node) => non_blank_string(
            node,
            "`description`",
            "blank-description",
            "say in one sentence what this agent is for",
            diagnostics,
        ),
        None => {
            diagnostics.report(
                fields.position,
                "missing-description",
                "the agent has no `description`",
                "add `description:` saying in one sentence what this agent is for",
            );
            None
        }
    };
    let model = match fields.get("model") {
        Some(node) => non_blank_string(
            node,
            "`model`",
            "blank-model",
            "name a model the account's provider offers, or remove `model`",
            diagnostics,
        )
        .map(|model| Some(model.trim().to_string())),
        None => Some(None),
    };
    let custom_tools = lower_custom_tools(&fields, parts.front_matter, diagnostics);
    let tools = lower_tools(
        &fields,
        custom_tools.as_deref().unwrap_or_default(),
        diagnostics,
    );
    let secrets = lower_secrets(&fields, diagnostics);
    let colleagues = lower_colleagues(&fields, name.as_deref(), diagnostics);
    let network = match fields.get("network") {
        Some(node) => network(node, diagnostics),
        None => Some(crate::Network::None),
    };
    let limits = match fields.get("limits") {
        Some(node) => crate::declared_limits::lower_limits(node, maxima, diagnostics),
        None => Some(crate::StepLimits::default()),
    };
    let loop_limits = match fields.get("loop") {
        Some(node) => crate::declared_limits::lower_loop(node, maxima, diagnostics),
        None => Some(crate::LoopLimits::default()),
    };
    if parts.prompt.trim().is_empty() {
        diagnostics.report(
            Position {
                line: parts.prompt_line,
                column: 1,
            },
            "blank-prompt",
            "the agent file has no prompt after its front matter",
            "write the agent's instructions after the closing `---`",
        );
    }
    Some(Agent {
        file_name: file_name.to_string(),
        source: text.to_string(),
        name: name?,
        description: description?.trim().to_string(),
        model: model?,
        tools: tools?,
        secrets: secrets?,
        colleagues: colleagues?,
        network: network?,
        prompt: parts.prompt.to_string(),
        custom_tools: custom_tools?,
        limits: limits?,
        loop_limits: loop_limits?,
    })
}

fn lower_agent_name(
    fields: &Fields<'_>,
    file_name: &str,
    diagnostics: &mut Diagnostics,
) -> Option<String> {
    let Some(node) = fields.get("name") else {
        diagnostics.report(
            fields.position,
            "missing-agent-name",
            "the agent has no `name`",
            "add `name:` with the agent's folder name, such as `digest`",
        );
        return None;
    };
    let name = string(node, "`name`", diagnostics)?;
    if !is_agent_name(name) {
        diagnostics.report(
            node.position,
            "invalid-agent-name",
            format!("`{name}` is not a valid agent name"),
            "an agent name is lower case letters, digits, `_` and `-`, starting with a letter: \
             the folder `agents/<name>/` holds this file",
        );
        return None;
    }
    // Workflows find an agent by its folder (`agents/<name>/AGENT.md`); a file whose name
    // differs from its folder would be one agent to the reader and another to the engine.
    if let Some(folder) = agent_folder_of(file_name)
        && folder != name
    {
        diagnostics.report(
            node.position,
            "agent-name-mismatch",
            format!("the agent is named `{name}` but its file is in the folder `{folder}`"),
            format!("name it `{folder}`, or move the file to `agents/{name}/AGENT.md`"),
        );
        return None;
    }
    Some(name.to_string())
}

/// The folder name in a path of the shape `.../agents/<folder>/AGENT.md`, if it has that shape.
fn agent_folder_of(file_name: &str) -> Option<&str> {
    let mut parts = file_name.rsplit(['/', '\\']);
    let file = parts.next()?;
    let folder = parts.next()?;
    let parent = parts.next()?;
    (file == "AGENT.md" && parent == "agents").then_some(folder)
}

fn lower_custom_tools(
    fields: &Fields<'_>,
    front_matter: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<CustomTool>> {
    let Some(node) = fields.get("custom_tools") else {
        return Some(Vec::new());
    };
    let NodeValue::Mapping(entries) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-mapping",
            format!(
                "`custom_tools` must be a mapping of tool names, found {}",
                node.describe()
            ),
            "write `custom_tools: { fetch_feed: { explain: ..., script: tools/fetch_feed.py } }`",
        );
        return None;
    };
    let mut tools = Vec::with_capacity(entries.len());
    let mut all_ok = true;
    for entry in entries {
        let Some(name) = entry.key.scalar_text() else {
            all_ok = false;
            continue;
        };
        let name_ok = check_custom_tool_name(name, entry.key.position, diagnostics);
        let Some(tool_fields) = fields_of_custom_tool(&entry.value, name, diagnostics) else {
            all_ok = false;
            continue;
        };
        let explain = match tool_fields.get("explain") {
            Some(node) => non_blank_string(
                node,
                "a custom tool's `explain`",
                "blank-explain",
                "say in plain words what the tool does; the model reads it to decide when to \
                 call the tool",
                diagnostics,
            ),
            None => {
                diagnostics.report(
                    entry.key.position,
                    "missing-explain",
                    format!("the custom tool `{name}` has no `explain`"),
                    "add `explain:` saying in plain words what the tool does",
                );
                None
            }
        };
        let script_origin = tool_fields
            .get("script")
            .map(|node| crate::origin::origin_of(node, front_matter, 1));
        let script = match tool_fields.get("script") {
            Some(node) => string(node, "a custom tool's `script`", diagnostics).and_then(|path| {
                if let Some(problem) = script_path_problem(path) {
                    diagnostics.report(
                        node.position,
                        "invalid-script-path",
                        format!("`{path}` is not a path inside the agent's folder: {problem}"),
                        "give the script's path relative to the agent's folder, such as \
                         `tools/fetch_feed.py`",
                    );
                    None
                } else {
                    Some(path)
                }
            }),
            None => {
                diagnostics.report(
                    entry.key.position,
                    "missing-script",
                    format!("the custom tool `{name}` has no `script`"),
                    "add `script:` with the path of the script in the agent's folder",
                );
                None
            }
        };
        let arguments = match tool_fields.get("arguments") {
            Some(node) => lower_tool_arguments(node, name, diagnostics),
            None => Some(Vec::new()),
        };
        let applies = optional_boolean(tool_fields.get("applies"), "`applies`", diagnostics);
        let writes = optional_boolean(tool_fields.get("writes"), "`writes`", diagnostics);
        match (
            name_ok,
            explain,
            script,
            script_origin,
            arguments,
            applies,
            writes,
        ) {
            (
                true,
                Some(explain),
                Some(script),
                Some(script_origin),
                Some(arguments),
                Some(applies),
                Some(writes),
            ) => {
                tools.push(CustomTool {
                    name: name.to_string(),
                    explain: explain.trim().to_string(),
                    script: script.to_string(),
                    script_origin,
                    arguments,
                    applies,
                    writes: writes.unwrap_or(false),
                });
            }
            _ => all_ok = false,
        }
    }
    all_ok.then_some(tools)
}

/// `arguments: { start: string, end?: string }`: each name a snake_case identifier (a `?`
/// after it makes it optional), each type one of the workflow input types.
fn lower_tool_arguments(
    node: &yaml::Node,
    tool: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<crate::model::ToolArgument>> {
    let NodeValue::Mapping(entries) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-mapping",
            format!(
                "the `arguments` of `{tool}` must be a mapping of names to types, found {}",
                node.describe()
            ),
            "write `arguments: { start: string, end: string, limit?: integer }`",
        );
        return None;
    };
    let mut arguments = Vec::with_capacity(entries.len());
    let mut all_ok = true;
    for entry in entries {
        let Some(raw) = entry.key.scalar_text() else {
            all_ok = false;
            continue;
        };
        let (name, optional) = match raw.strip_suffix('?') {
            Some(name) => (name, true),
            None => (raw, false),
        };
        if !crate::lower::is_snake_name(name) {
            diagnostics.report(
                entry.key.position,
                "invalid-argument-name",
                format!("`{raw}` is not a valid argument name of `{tool}`"),
                "an argument name is snake_case (lower case letters, digits and `_`), with `?` \
                 after it when the argument is optional",
            );
            all_ok = false;
            continue;
        }
        if spec_forbidden(name) {
            diagnostics.report(
                entry.key.position,
                "forbidden-argument-name",
                format!("the argument `{name}` of `{tool}` is named like a credential"),
                "a tool's secrets reach its script as environment variables (`secrets:`), \
                 never as arguments the model writes",
            );
            all_ok = false;
            continue;
        }
        match crate::workflow::lower_input_kind(&entry.value, diagnostics) {
            Some(kind) => arguments.push(crate::model::ToolArgument {
                name: name.to_string(),
                kind,
                optional,
            }),
            None => all_ok = false,
        }
    }
    all_ok.then_some(arguments)
}

fn spec_forbidden(name: &str) -> bool {
    crate::forbidden::is_forbidden_key(name)
}

/// An optional boolean key: `None` inside when absent.
fn optional_boolean(
    node: Option<&yaml::Node>,
    what: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Option<bool>> {
    let Some(node) = node else {
        return Some(None);
    };
    if let NodeValue::Scalar(scalar) = &node.value
        && let yaml::Resolved::Boolean(value) = scalar.resolve()
    {
        return Some(Some(value));
    }
    diagnostics.report(
        node.position,
        "expected-boolean",
        format!(
            "{what} must be `true` or `false`, found {}",
            node.describe()
        ),
        format!("write {what} as `true` or `false`"),
    );
    None
}

fn fields_of_custom_tool<'node>(
    node: &'node yaml::Node,
    name: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Fields<'node>> {
    fields(
        node,
        &format!("the custom tool `{name}`"),
        CUSTOM_TOOL_KEYS,
        diagnostics,
    )
}

fn check_custom_tool_name(name: &str, position: Position, diagnostics: &mut Diagnostics) -> bool {
    if BUILT_IN_TOOLS
        .iter()
        .any(|(built_in, _)| built_in.eq_ignore_ascii_case(name))
        || name.eq_ignore_ascii_case("Consult")
    {
        diagnostics.report(
            position,
            "custom-tool-shadows-built-in",
            format!("the custom tool `{name}` has the name of a built-in tool"),
            "give the custom tool a name of its own",
        );
        return false;
    }
    let mut characters = name.chars();
    let valid = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_');
    if !valid {
        diagnostics.report(
            position,
            "invalid-tool-name",
            format!("`{name}` is not a valid tool name"),
            "a tool name is ASCII letters, digits and `_`, starting with a letter",
        );
    }
    valid
}

/// Why `path` is not a plain relative path inside the agent's folder, if it is not.
fn script_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("it is empty");
    }
    if path.starts_with('/') {
        return Some("it is absolute");
    }
    if path.contains('\\') {
        return Some("it uses `\\`; separate folders with `/`");
    }
    if path.chars().any(char::is_control) {
        return Some("it holds control characters");
    }
    let mut components = path.split('/');
    if components
        .clone()
        .any(|component| component.is_empty() || component == "." || component == "..")
    {
        return Some("it has an empty, `.` or `..` part");
    }
    let first = components.next().unwrap_or_default();
    if first == ".secrets" || first == ".journal" {
        return Some("it is a protected path");
    }
    // In an agent's view, `shared/` and `library/` are the workspace's folders, not the
    // agent's own: a script there is not one the agent's folder holds, and the run pins none.
    if first.eq_ignore_ascii_case("shared") || first.eq_ignore_ascii_case("library") {
        return Some(
            "`shared/` and `library/` are the workspace's folders in the agent's view, not its \
             own folder",
        );
    }
    None
}

fn lower_tools(
    fields: &Fields<'_>,
    custom_tools: &[CustomTool],
    diagnostics: &mut Diagnostics,
) -> Option<Vec<Tool>> {
    let listed = match fields.get("tools") {
        Some(node) => {
            let listed = string_list(node, "`tools`", diagnostics);
            if !matches!(node.value, NodeValue::Sequence(_)) {
                return None;
            }
            listed
        }
        None => Vec::new(),
    };
    let valid_custom: HashSet<&str> = custom_tools.iter().map(|tool| tool.name.as_str()).collect();
    // Declared names, valid or not: a broken declaration was reported where it is written.
    let declared_custom: HashSet<&str> = match fields.get("custom_tools").map(|node| &node.value) {
        Some(NodeValue::Mapping(entries)) => entries
            .iter()
            .filter_map(|entry| entry.key.scalar_text())
            .collect(),
        _ => HashSet::new(),
    };
    let mut seen = Seen::default();
    let mut tools = Vec::with_capacity(listed.len());
    let mut all_ok = true;
    for (name, position) in listed {
        if !check_unique(
            &mut seen,
            name,
            position,
            "duplicate-tool",
            "the tool",
            diagnostics,
        ) {
            all_ok = false;
            continue;
        }
        if let Some((_, tool)) = BUILT_IN_TOOLS
            .iter()
            .find(|(built_in, _)| *built_in == name)
        {
            tools.push(tool.clone());
        } else if valid_custom.contains(name) {
            tools.push(Tool::Custom(name.to_string()));
        } else if !declared_custom.contains(name) {
            // Neither built in nor declared; a broken declaration was reported where it is.
            let candidates = BUILT_IN_TOOLS
                .iter()
                .map(|(built_in, _)| *built_in)
                .chain(custom_tools.iter().map(|tool| tool.name.as_str()));
            let suggestion = diagnostics
                .wants_suggestions()
                .then(|| closest(name, candidates))
                .flatten()
                .map(|known| format!("did you mean `{known}`? "))
                .unwrap_or_default();
            diagnostics.report(
                position,
                "unknown-tool",
                format!("`{name}` is not a built-in tool and is not declared under `custom_tools`"),
                format!(
                    "{suggestion}the built-in tools are Read, Write, Edit, Glob, Grep and Run; \
                     declare any other tool under `custom_tools:` with `explain` and `script`"
                ),
            );
            all_ok = false;
        } else {
            all_ok = false;
        }
    }
    for tool in custom_tools {
        if !seen.contains(&tool.name) {
            let at = custom_tool_key_position(fields, &tool.name).unwrap_or(fields.position);
            diagnostics.report(
                at,
                "unused-custom-tool",
                format!(
                    "the custom tool `{}` is declared but not listed in `tools`",
                    tool.name
                ),
                "add it to `tools:` so the agent has it, or remove its declaration: a tool that \
                 is not listed does not exist for the agent",
            );
            all_ok = false;
        }
    }
    all_ok.then_some(tools)
}

fn custom_tool_key_position(fields: &Fields<'_>, name: &str) -> Option<Position> {
    match &fields.get("custom_tools")?.value {
        NodeValue::Mapping(entries) => entries
            .iter()
            .find(|entry| entry.key.scalar_text() == Some(name))
            .map(|entry| entry.key.position),
        _ => None,
    }
}

fn lower_secrets(fields: &Fields<'_>, diagnostics: &mut Diagnostics) -> Option<Vec<String>> {
    let Some(node) = fields.get("secrets") else {
        return Some(Vec::new());
    };
    let listed = string_list(node, "`secrets`", diagnostics);
    let mut all_ok = matches!(node.value, NodeValue::Sequence(_));
    let mut seen = Seen::default();
    for (name, position) in &listed {
        let mut characters = name.chars();
        let valid = characters
            .next()
            .is_some_and(|first| first.is_ascii_uppercase())
            && characters.all(|character| {
                character.is_ascii_uppercase() || character.is_ascii_digit() || character == '_'
            });
        if !valid {
            diagnostics.report(
                *position,
                "invalid-secret-name",
                format!("`{name}` is not a valid secret name"),
                format!(
                    "a secret reaches scripts as an environment variable of the same name: \
                     upper case letters, digits and `_`, starting with a letter, such as `{}`",
                    env_style(name)
                ),
            );
            all_ok = false;
            continue;
        }
        all_ok &= check_unique(
            &mut seen,
            name,
            *position,
            "duplicate-secret",
            "the secret",
            diagnostics,
        );
    }
    all_ok.then(|| seen.into_names())
}

fn env_style(name: &str) -> String {
    let mut suggestion: String = name
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if !suggestion.starts_with(|character: char| character.is_ascii_uppercase()) {
        suggestion.insert(0, 'X');
    }
    suggestion
}

fn lower_colleagues(
    fields: &Fields<'_>,
    own_name: Option<&str>,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<String>> {
    let Some(node) = fields.get("colleagues") else {
        return Some(Vec::new());
    };
    let listed = string_list(node, "`colleagues`", diagnostics);
    let mut all_ok = matches!(node.value, NodeValue::Sequence(_));
    let mut seen = Seen::default();
    for (name, position) in &listed {
        if !is_agent_name(name) {
            diagnostics.report(
                *position,
                "invalid-agent-name",
                format!("`{name}` is not a valid agent name"),
                "a colleague is named by its agent name: lower case letters, digits, `_` and \
                 `-`, starting with a letter",
            );
            all_ok = false;
            continue;
        }
        if own_name == Some(*name) {
            diagnostics.report(
                *position,
                "self-colleague",
                format!("the agent `{name}` lists itself as a colleague"),
                "list other agents only",
            );
            all_ok = false;
            continue;
        }
        all_ok &= check_unique(
            &mut seen,
            name,
            *position,
            "duplicate-colleague",
            "the colleague",
            diagnostics,
        );
    }
    all_ok.then(|| seen.into_names())
}
