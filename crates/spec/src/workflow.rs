//! Workflow files: the rules that turn the raw node tree into a validated [`Workflow`].

use std::collections::HashSet;

use crate::declared_limits::{LimitMaxima, lower_limits};
use crate::diagnostic::{Diagnostic, Diagnostics, Position};
use crate::inputs::{StepContext, check_input_name, lower_step_input};
use crate::lower::{
    Fields, Seen, check_unique, fields, is_agent_name, is_snake_name, network, non_blank_string,
    snake_suggestion, string, string_list,
};
use crate::model::{
    InputKind, PythonVersion, Step, StepBody, Supervision, Workflow, WorkflowInput,
};
use crate::yaml::{self, Node, NodeValue, Resolved};

/// Most steps a workflow may have.
pub(crate) const MAX_STEPS: usize = 200;

/// The keys of a workflow file; the JSON Schema names exactly these.
pub(crate) const WORKFLOW_KEYS: &[&str] =
    &["name", "python", "supervisor", "notify", "inputs", "steps"];
/// The keys of a step; the JSON Schema names exactly these.
pub(crate) const STEP_KEYS: &[&str] = &[
    "id",
    "explain",
    "code",
    "agent",
    "task",
    "output",
    "network",
    "connections",
    "inputs",
    "limits",
];

/// Parses and validates a workflow file, holding declared `limits` to the built-in maxima
/// ([`LimitMaxima::BUILT_IN`]). Every rule runs, and every violation is returned at once, in
/// file order. Never panics, whatever `text` holds.
pub fn parse_workflow(file_name: &str, text: &str) -> Result<Workflow, Vec<Diagnostic>> {
    parse_workflow_within(file_name, text, &LimitMaxima::BUILT_IN)
}

/// [`parse_workflow`] with the operator's maxima: a declared limit above one is an error.
pub fn parse_workflow_within(
    file_name: &str,
    text: &str,
    maxima: &LimitMaxima,
) -> Result<Workflow, Vec<Diagnostic>> {
    let mut diagnostics = Diagnostics::new(file_name);
    if crate::diagnostic::report_unshowable(text, &mut diagnostics) {
        return Err(diagnostics.finish(text));
    }
    let workflow = yaml::parse(text, 0, &mut diagnostics)
        .and_then(|root| lower_workflow(&root, file_name, text, maxima, &mut diagnostics));
    match workflow {
        Some(workflow) if diagnostics.is_empty() => Ok(workflow),
        _ => {
            if diagnostics.is_empty() {
                // Every path that yields no value reports why; this guards that promise.
                diagnostics.report(
                    Position::START,
                    "invalid-workflow",
                    "the workflow could not be read",
                    "check the file against `stepward schema`",
                );
            }
            Err(diagnostics.finish(text))
        }
    }
}

fn lower_workflow(
    root: &Node,
    file_name: &str,
    text: &str,
    maxima: &LimitMaxima,
    diagnostics: &mut Diagnostics,
) -> Option<Workflow> {
    let fields = fields(root, "the workflow", WORKFLOW_KEYS, diagnostics)?;
    let name = lower_name(&fields, diagnostics);
    let python = lower_python(&fields, diagnostics);
    let supervisor = match fields.get("supervisor") {
        Some(node) => lower_supervisor(node, diagnostics),
        None => Some(Supervision::Assistant),
    };
    let notify = match fields.get("notify") {
        Some(node) => crate::notify::lower_notify(node, diagnostics),
        None => Some(crate::Notify::default()),
    };
    let inputs = match fields.get("inputs") {
        Some(node) => lower_workflow_inputs(node, diagnostics),
        None => Vec::new(),
    };
    let steps = lower_steps(&fields, &inputs, maxima, text, diagnostics);
    Some(Workflow {
        file_name: file_name.to_string(),
        source: text.to_string(),
        name: name?,
        python: python?,
        supervisor: supervisor?,
        notify: notify?,
        inputs,
        steps: steps?,
    })
}

/// `supervisor: none | assistant` (G15): an unknown value is an error, never a silent default.
fn lower_supervisor(node: &Node, diagnostics: &mut Diagnostics) -> Option<Supervision> {
    let text = match &node.value {
        NodeValue::Scalar(scalar) => match scalar.resolve() {
            Resolved::String(text) => Some(text),
            _ => None,
        },
        _ => None,
    };
    match text {
        Some("assistant") => Some(Supervision::Assistant),
        Some("none") => Some(Supervision::None),
        _ => {
            let found = match text {
                Some(text) => format!("`{text}`"),
                None => node.describe(),
            };
            diagnostics.report(
                node.position,
                "unknown-supervisor",
                format!("`supervisor` must be `assistant` or `none`, found {found}"),
                format!(
                    "{}use `assistant` (the default: the account's default model provider sees \
                     a failed step's inputs and printed text) or `none` (every failure goes \
                     straight to a person)",
                    text.map(|text| crate::suggest::did_you_mean(text, ["assistant", "none"]))
                        .unwrap_or_default()
                ),
            );
            None
        }
    }
}

fn lower_name(fields: &Fields<'_>, diagnostics: &mut Diagnostics) -> Option<String> {
    let Some(node) = fields.get("name") else {
        diagnostics.report(
            fields.position,
            "missing-name",
            "the workflow has no `name`",
            "add `name: my_workflow` at the top",
        );
        return None;
    };
    non_blank_string(
        node,
        "`name`",
        "blank-name",
        "give the workflow a short name, such as `refund`",
        diagnostics,
    )
    .map(|name| name.trim().to_string())
}

fn lower_python(fields: &Fields<'_>, diagnostics: &mut Diagnostics) -> Option<PythonVersion> {
    let Some(node) = fields.get("python") else {
        diagnostics.report(
            fields.position,
            "missing-python",
            "the workflow does not pin a Python version",
            "add `python: \"3.11\"`; a server without that version refuses to run the \
             workflow rather than run another one",
        );
        return None;
    };
    let scalar = match &node.value {
        NodeValue::Scalar(scalar) => scalar,
        _ => {
            diagnostics.report(
                node.position,
                "python-not-string",
                format!(
                    "`python` must be a quoted \"MAJOR.MINOR\" string, found {}",
                    node.describe()
                ),
                "write `python: \"3.11\"`",
            );
            return None;
        }
    };
    let text = match scalar.resolve() {
        Resolved::String(text) => text,
        Resolved::Float(value) => {
            diagnostics.report(
                node.position,
                "python-not-string",
                format!(
                    "`python` must be a quoted string, but YAML reads the unquoted {} as the \
                     number {value}",
                    scalar.text
                ),
                format!(
                    "quote it: `python: \"{}\"` (unquoted, 3.10 would become 3.1)",
                    scalar.text
                ),
            );
            return None;
        }
        _ => {
            diagnostics.report(
                node.position,
                "python-not-string",
                format!(
                    "`python` must be a quoted \"MAJOR.MINOR\" string, found {}",
                    node.describe()
                ),
                "write it in quotes, for example `python: \"3.11\"`",
            );
            return None;
        }
    };
    let parsed = PythonVersion::parse(text);
    if parsed.is_none() {
        let help = match text.split('.').collect::<Vec<_>>().as_slice() {
            [major, minor, _patch] => format!(
                "pin MAJOR.MINOR only, such as \"{major}.{minor}\"; the server picks the patch \
                 release and records it with each run"
            ),
            _ => "write the version as \"MAJOR.MINOR\", for example \"3.11\"".to_string(),
        };
        diagnostics.report(
            node.position,
            "python-version-format",
            format!("`{text}` is not a \"MAJOR.MINOR\" Python version"),
            help,
        );
    }
    parsed
}

fn lower_workflow_inputs(node: &Node, diagnostics: &mut Diagnostics) -> Vec<WorkflowInput> {
    let NodeValue::Mapping(entries) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-mapping",
            format!(
                "`inputs` must be a mapping of names to types, found {}",
                node.describe()
            ),
            "write `inputs: { ticket_id: string }`",
        );
        return Vec::new();
    };
    let mut inputs = Vec::with_capacity(entries.len());
    for entry in entries {
        let Some(name) = entry.key.scalar_text() else {
            continue;
        };
        let name_ok = check_input_name(name, entry.key.position, "a workflow input", diagnostics);
        let kind = lower_input_kind(&entry.value, diagnostics);
        if let (true, Some(kind)) = (name_ok, kind) {
            inputs.push(WorkflowInput {
                name: name.to_string(),
                kind,
            });
        }
    }
    inputs
}

pub(crate) fn lower_input_kind(node: &Node, diagnostics: &mut Diagnostics) -> Option<InputKind> {
    const KINDS: &[&str] = &["string", "integer", "number", "boolean", "object", "array"];
    let text = string(node, "an input's type", diagnostics)?;
    let kind = match text {
        "string" => InputKind::String,
        "integer" => InputKind::Integer,
        "number" => InputKind::Number,
        "boolean" => InputKind::Boolean,
        "object" => InputKind::Object,
        "array" => InputKind::Array,
        _ => {
            let familiar = match text {
                "str" | "text" => Some("string"),
                "int" => Some("integer"),
                "float" | "double" | "decimal" => Some("number"),
                "bool" => Some("boolean"),
                "dict" | "map" | "mapping" => Some("object"),
                "list" | "sequence" => Some("array"),
                _ => crate::suggest::closest(text, KINDS.iter().copied()),
            };
            diagnostics.report(
                node.position,
                "unknown-input-type",
                format!("`{text}` is not an input type"),
                format!(
                    "{}the types are: {}",
                    familiar
                        .map(|kind| format!("did you mean `{kind}`? "))
                        .unwrap_or_default(),
                    KINDS.join(", ")
                ),
            );
            return None;
        }
    };
    Some(kind)
}

/// A step's id as first read, so references can tell "a later step" from "no such step".
pub(crate) struct StepId {
    pub(crate) id: String,
    pub(crate) gate: bool,
}

fn lower_steps(
    fields: &Fields<'_>,
    inputs: &[WorkflowInput],
    maxima: &LimitMaxima,
    text: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<Step>> {
    let Some(node) = fields.get("steps") else {
        diagnostics.report(
            fields.position,
            "missing-steps",
            "the workflow has no `steps`",
            "add `steps:` with at least one step (`- id: ...`)",
        );
        return None;
    };
    let NodeValue::Sequence(items) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-list",
            format!("`steps` must be a list of steps, found {}", node.describe()),
            "write each step as a `- id: ...` entry under `steps:`",
        );
        return None;
    };
    if items.is_empty() {
        diagnostics.report(
            node.position,
            "empty-steps",
            "the workflow has no steps",
            "add at least one step under `steps:`",
        );
        return None;
    }
    if let Some(extra) = items.get(MAX_STEPS) {
        diagnostics.report(
            extra.position,
            "too-many-steps",
            format!(
                "the workflow has {} steps, more than the limit of {MAX_STEPS}",
                items.len()
            ),
            "split it into several workflows",
        );
        return None;
    }
    let ids = read_step_ids(items, diagnostics);
    let mut steps = Vec::with_capacity(items.len());
    let input_names: HashSet<&str> = inputs.iter().map(|input| input.name.as_str()).collect();
    let mut all_ok = true;
    for (index, item) in items.iter().enumerate() {
        let context = StepContext {
            index,
            ids: &ids,
            inputs,
            input_names: &input_names,
            maxima,
            text,
        };
        match lower_step(item, &context, diagnostics) {
            Some(step) => steps.push(step),
            None => all_ok = false,
        }
    }
    all_ok.then_some(steps)
}

/// First pass over the steps: every id, valid and unique, or `None` where it is not.
fn read_step_ids(items: &[Node], diagnostics: &mut Diagnostics) -> Vec<Option<StepId>> {
    let mut seen = Seen::default();
    items
        .iter()
        .map(|item| {
            let NodeValue::Mapping(entries) = &item.value else {
                return None;
            };
            let entry = entries
                .iter()
                .find(|entry| entry.key.scalar_text() == Some("id"))?;
            let text = string(&entry.value, "a step's `id`", diagnostics)?;
            let (id, gate) = match text.strip_suffix('!') {
                Some(id) => (id, true),
                None => (text, false),
            };
            if !is_snake_name(id) {
                diagnostics.report(
                    entry.value.position,
                    "invalid-step-id",
                    format!("`{text}` is not a valid step id"),
                    format!(
                        "a step id is lower case letters, digits and `_`, starting with a \
                         letter, optionally followed by `!` to mark a gate, such as `{}`",
                        snake_suggestion(id)
                    ),
                );
                return None;
            }
            if !check_unique(
                &mut seen,
                id,
                entry.value.position,
                "duplicate-step-id",
                "the step id",
                diagnostics,
            ) {
                return None;
            }
            Some(StepId {
                id: id.to_string(),
                gate,
            })
        })
        .collect()
}

fn lower_step(
    node: &Node,
    context: &StepContext<'_>,
    diagnostics: &mut Diagnostics,
) -> Option<Step> {
    let fields = fields(node, "a step", STEP_KEYS, diagnostics)?;
    if fields.get("id").is_none() {
        diagnostics.report(
            fields.position,
            "missing-step-id",
            "this step has no `id`",
            "add `id: short_name` (append `!` to make it a gate: `id: send!`)",
        );
    }
    let body = lower_body(&fields, diagnostics);
    let is_agent_step =
        matches!(body, Some(StepBody::Agent { .. })) || fields.get("agent").is_some();
    let explain = lower_explain(&fields, is_agent_step, diagnostics);
    let (network, connections) = if is_agent_step {
        reject_agent_step_reach(&fields, diagnostics);
        (Some(crate::Network::None), Some(Vec::new()))
    } else {
        let network = match fields.get("network") {
            Some(node) => network(node, diagnostics),
            None => Some(crate::Network::None),
        };
        let connections = match fields.get("connections") {
            Some(node) => lower_connections(node, diagnostics),
            None => Some(Vec::new()),
        };
        (network, connections)
    };
    let inputs = lower_step_inputs(&fields, context, diagnostics);
    let limits = match fields.get("limits") {
        Some(node) if is_agent_step => {
            let at = fields.key_position("limits").unwrap_or(node.position);
            diagnostics.report(
                at,
                "agent-step-limits",
                "an agent step cannot declare `limits`",
                "declare `limits` (each script and tool call) and `loop` (the agent loop) in \
                 the agent's AGENT.md front matter",
            );
            None
        }
        Some(node) => lower_limits(node, context.maxima, diagnostics),
        None => Some(crate::StepLimits::default()),
    };
    let output = lower_output(&fields, is_agent_step, diagnostics);
    let step_id = context.ids.get(context.index).and_then(Option::as_ref)?;
    let body_node = fields.get("code").or_else(|| fields.get("agent"))?;
    Some(Step {
        body_origin: crate::origin::origin_of(body_node, context.text, 0),
        id: step_id.id.clone(),
        gate: step_id.gate,
        explain: explain?,
        network: network?,
        connections: connections?,
        inputs: inputs?,
        body: body?,
        limits: limits?,
        output: output?,
    })
}

/// `output: text | json` (agent steps): how the agent's answer becomes the step's output.
fn lower_output(
    fields: &Fields<'_>,
    is_agent_step: bool,
    diagnostics: &mut Diagnostics,
) -> Option<crate::OutputKind> {
    let Some(node) = fields.get("output") else {
        return Some(crate::OutputKind::Text);
    };
    let at = fields.key_position("output").unwrap_or(node.position);
    if !is_agent_step {
        diagnostics.report(
            at,
            "output-on-code-step",
            "`output` belongs to agent steps; a code step's output is what its `main` returns, \
             which is JSON already",
            "remove `output`",
        );
        return None;
    }
    match node.scalar_text() {
        Some("text") => Some(crate::OutputKind::Text),
        Some("json") => Some(crate::OutputKind::Json),
        _ => {
            diagnostics.report(
                node.position,
                "invalid-output",
                format!(
                    "`output` must be `text` or `json`, found {}",
                    node.describe()
                ),
                "write `output: json` to have the agent's answer parsed as JSON (an answer that \
                 is not JSON fails the step), or leave `output` out to keep the answer as text",
            );
            None
        }
    }
}

fn lower_body(fields: &Fields<'_>, diagnostics: &mut Diagnostics) -> Option<StepBody> {
    match (fields.get("code"), fields.get("agent")) {
        (Some(_), Some(_)) => {
            let at = fields.key_position("agent").unwrap_or(fields.position);
            diagnostics.report(
                at,
                "code-and-agent",
                "this step has both `code` and `agent`",
                "a step either runs its own code or hands a task to an agent: keep one and \
                 make the other a step of its own",
            );
            None
        }
        (None, None) => {
            diagnostics.report(
                fields.position,
                "missing-code-or-agent",
                "this step has neither `code` nor `agent`",
                "add `code:` with a `def main(...)`, or `agent:` with a `task:`",
            );
            None
        }
        (Some(code), None) => {
            if let Some(at) = fields.key_position("task") {
                diagnostics.report(
                    at,
                    "task-without-agent",
                    "`task` belongs to agent steps, and this step runs code",
                    "remove `task`, or replace `code` with `agent:` to hand the task to an agent",
                );
            }
            let source = non_blank_string(
                code,
                "`code`",
                "missing-main",
                "write Python code that defines `def main(...)`",
                diagnostics,
            )?;
            if !defines_main(source) {
                diagnostics.report(
                    code.position,
                    "missing-main",
                    "the code does not define a top-level `def main(`",
                    "define `def main(...)` at the start of a line: it is called with the \
                     step's inputs as keyword arguments and its return value is the output",
                );
                return None;
            }
            Some(StepBody::Code {
                source: source.to_string(),
            })
        }
        (None, Some(agent)) => {
            let name = string(agent, "`agent`", diagnostics).and_then(|name| {
                if is_agent_name(name) {
                    Some(name.to_string())
                } else {
                    diagnostics.report(
                        agent.position,
                        "invalid-agent-name",
                        format!("`{name}` is not a valid agent name"),
                        "an agent name is lower case letters, digits, `_` and `-`, starting \
                         with a letter: the folder `agents/<name>/` holds its AGENT.md",
                    );
                    None
                }
            });
            let task = match fields.get("task") {
                Some(task) => non_blank_string(
                    task,
                    "`task`",
                    "blank-task",
                    "say in plain words what the agent should do in this step",
                    diagnostics,
                ),
                None => {
                    diagnostics.report(
                        fields.position,
                        "missing-task",
                        "this agent step has no `task`",
                        "add `task:` saying in plain words what the agent should do",
                    );
                    None
                }
            };
            Some(StepBody::Agent {
                agent: name?,
                task: task?.to_string(),
            })
        }
    }
}

/// Whether the code defines `main` at the top level, the function the runner calls.
fn defines_main(source: &str) -> bool {
    source
        .lines()
        .any(|line| line.starts_with("def main(") || line.starts_with("async def main("))
}

fn lower_explain(
    fields: &Fields<'_>,
    is_agent_step: bool,
    diagnostics: &mut Diagnostics,
) -> Option<String> {
    const HELP: &str = "say in one or two plain sentences what this step does, for the person \
                        who approves the workflow";
    match fields.get("explain") {
        Some(node) => non_blank_string(node, "`explain`", "blank-explain", HELP, diagnostics)
            .map(|text| text.trim().to_string()),
        None if is_agent_step => Some(String::new()),
        None => {
            diagnostics.report(
                fields.position,
                "missing-explain",
                "this code step has no `explain`",
                format!("add `explain:`: {HELP}"),
            );
            None
        }
    }
}

/// An agent step's reach is its agent file's, so the step may not widen or narrow it.
fn reject_agent_step_reach(fields: &Fields<'_>, diagnostics: &mut Diagnostics) {
    if let Some(at) = fields.key_position("network") {
        diagnostics.report(
            at,
            "agent-step-reach",
            "an agent step cannot declare `network`",
            "declare `network` in the agent's AGENT.md front matter: an agent's reach is the \
             same in every workflow that uses it",
        );
    }
    if let Some(at) = fields.key_position("connections") {
        diagnostics.report(
            at,
            "agent-step-reach",
            "an agent step cannot declare `connections`",
            "connections are granted to code steps only; an agent reaches services through \
             the `secrets` its AGENT.md names, or hand the call to a code step after it",
        );
    }
}

fn lower_connections(node: &Node, diagnostics: &mut Diagnostics) -> Option<Vec<String>> {
    let entries = string_list(node, "`connections`", diagnostics);
    let mut seen = Seen::default();
    let mut all_ok = matches!(node.value, NodeValue::Sequence(_));
    for (alias, position) in entries {
        if !is_snake_name(alias) {
            diagnostics.report(
                position,
                "invalid-connection-alias",
                format!("`{alias}` is not a valid connection alias"),
                format!(
                    "an alias is lower case letters, digits and `_`, starting with a letter, \
                     such as `{}`",
                    snake_suggestion(alias)
                ),
            );
            all_ok = false;
            continue;
        }
        all_ok &= check_unique(
            &mut seen,
            alias,
            position,
            "duplicate-connection",
            "the connection",
            diagnostics,
        );
    }
    if let NodeValue::Sequence(items) = &node.value {
        all_ok &= seen.len() == items.len();
    }
    all_ok.then(|| seen.into_names())
}

fn lower_step_inputs(
    fields: &Fields<'_>,
    context: &StepContext<'_>,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<(String, crate::InputSource)>> {
    let Some(node) = fields.get("inputs") else {
        return Some(Vec::new());
    };
    let NodeValue::Mapping(entries) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-mapping",
            format!(
                "a step's `inputs` must be a mapping, found {}",
                node.describe()
            ),
            "write `inputs: { name: { from: input.name } }` or literal values",
        );
        return None;
    };
    let mut inputs = Vec::with_capacity(entries.len());
    let mut all_ok = true;
    for entry in entries {
        let Some(name) = entry.key.scalar_text() else {
            all_ok = false;
            continue;
        };
        let name_ok = check_input_name(name, entry.key.position, "a step input", diagnostics);
        match (
            name_ok,
            lower_step_input(&entry.value, context, diagnostics),
        ) {
            (true, Some(source)) => inputs.push((name.to_string(), source)),
            _ => all_ok = false,
        }
    }
    all_ok.then_some(inputs)
}
