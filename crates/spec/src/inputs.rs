//! Step inputs: `{from: ...}` references to declared inputs and earlier steps, and literals,
//! which are checked for templating and credential keys (G4) after alias and merge expansion.

use std::collections::HashSet;

use crate::diagnostic::{Diagnostics, Position};
use crate::forbidden::is_forbidden_key;
use crate::lower::is_snake_name;
use crate::model::{InputSource, WorkflowInput};
use crate::suggest::closest;
use crate::workflow::StepId;
use crate::yaml::{Node, NodeValue, Resolved};

/// What a step's inputs may refer to.
pub(crate) struct StepContext<'workflow> {
    /// The position of the step being read among all steps.
    pub(crate) index: usize,
    /// Every step's id, `None` where the id was missing or invalid.
    pub(crate) ids: &'workflow [Option<StepId>],
    pub(crate) inputs: &'workflow [WorkflowInput],
    /// The same names, for lookups that stay fast however many inputs there are.
    pub(crate) input_names: &'workflow HashSet<&'workflow str>,
    /// The operator's maxima that declared `limits` are held to.
    pub(crate) maxima: &'workflow crate::LimitMaxima,
    /// The workflow's text, for the origins of values (`crate::origin`).
    pub(crate) text: &'workflow str,
}

/// Words Python will not accept as a keyword argument name.
const PYTHON_KEYWORDS: &[&str] = &[
    "false", "none", "true", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Checks the name of a workflow input or a step input: `main` receives step inputs as
/// keyword arguments, and both kinds are stored verbatim, so G4 applies to the name too.
pub(crate) fn check_input_name(
    name: &str,
    position: Position,
    what: &str,
    diagnostics: &mut Diagnostics,
) -> bool {
    if is_forbidden_key(name) {
        report_forbidden_key(name, position, None, diagnostics);
        return false;
    }
    if !is_snake_name(name) || PYTHON_KEYWORDS.contains(&name) {
        diagnostics.report(
            position,
            "invalid-input-name",
            format!("`{name}` is not a valid name for {what}"),
            "an input name is lower case letters, digits and `_`, starting with a letter, and \
             not a Python keyword: `main` receives it as a keyword argument",
        );
        return false;
    }
    true
}

/// Reads one step input: a `{from: ...}` reference or a literal.
pub(crate) fn lower_step_input(
    node: &Node,
    context: &StepContext<'_>,
    diagnostics: &mut Diagnostics,
) -> Option<InputSource> {
    if let NodeValue::Mapping(entries) = &node.value
        && let Some(from) = entries
            .iter()
            .find(|entry| entry.key.scalar_text() == Some("from"))
    {
        if entries.len() != 1 {
            diagnostics.report(
                node.position,
                "from-with-other-keys",
                "a `from:` reference must be the only key of its mapping",
                "write `{ from: input.NAME }` or `{ from: STEP_ID }` alone; to pass a \
                     literal mapping, do not use the key `from` in it",
            );
            return None;
        }
        return lower_reference(&from.value, context, diagnostics);
    }
    let mut literal = LiteralChecker {
        diagnostics,
        all_ok: true,
    };
    let value = literal.convert(node);
    literal.all_ok.then_some(InputSource::Literal(value))
}

fn lower_reference(
    node: &Node,
    context: &StepContext<'_>,
    diagnostics: &mut Diagnostics,
) -> Option<InputSource> {
    let text = match &node.value {
        NodeValue::Scalar(scalar) => match scalar.resolve() {
            Resolved::String(text) => Some(text),
            _ => None,
        },
        _ => None,
    };
    let Some(text) = text else {
        diagnostics.report(
            node.position,
            "invalid-reference",
            format!(
                "`from` must name a workflow input or a step, found {}",
                node.describe()
            ),
            "write `from: input.NAME` or `from: STEP_ID`",
        );
        return None;
    };
    if let Some(name) = text.strip_prefix("input.") {
        if context.input_names.contains(name) {
            return Some(InputSource::WorkflowInput(name.to_string()));
        }
        let suggestion = diagnostics
            .wants_suggestions()
            .then(|| closest(name, context.inputs.iter().map(|input| input.name.as_str())))
            .flatten();
        diagnostics.report(
            node.position,
            "unknown-workflow-input",
            format!("`{text}` refers to a workflow input `{name}` that is not declared"),
            match suggestion {
                Some(known) => format!("did you mean `input.{known}`?"),
                None => format!("declare it under the workflow's `inputs:` (`{name}: string`)"),
            },
        );
        return None;
    }
    let earlier: Vec<&StepId> = context
        .ids
        .get(..context.index)
        .unwrap_or_default()
        .iter()
        .flatten()
        .collect();
    let all: Vec<(usize, &StepId)> = context
        .ids
        .iter()
        .enumerate()
        .filter_map(|(index, id)| id.as_ref().map(|id| (index, id)))
        .collect();
    if let Some(id) = text.strip_suffix('!')
        && all.iter().any(|(_, step)| step.id == id)
    {
        diagnostics.report(
            node.position,
            "gate-mark-in-reference",
            format!("`{text}` includes the gate mark `!`"),
            format!("the `!` marks a gate and is not part of the id: write `from: {id}`"),
        );
        return None;
    }
    if earlier.iter().any(|step| step.id == text) {
        return Some(InputSource::StepOutput(text.to_string()));
    }
    let current = context.ids.get(context.index).and_then(Option::as_ref);
    if current.is_some_and(|step| step.id == text) {
        diagnostics.report(
            node.position,
            "self-reference",
            format!("the step `{text}` cannot take its own output as an input"),
            "refer to an earlier step or to `input.NAME`",
        );
        return None;
    }
    if all.iter().any(|(_, step)| step.id == text) {
        diagnostics.report(
            node.position,
            "forward-reference",
            format!("`{text}` is a later step; its output does not exist yet when this step runs"),
            "steps run in file order: move this step after it, or refer to an earlier step",
        );
        return None;
    }
    let candidates = if diagnostics.wants_suggestions() {
        earlier
            .iter()
            .map(|step| step.id.clone())
            .chain(
                context
                    .inputs
                    .iter()
                    .take(256)
                    .map(|input| format!("input.{}", input.name)),
            )
            .collect::<Vec<_>>()
    } else {
        Vec::new()
    };
    let suggestion = closest(text, candidates.iter().map(String::as_str));
    diagnostics.report(
        node.position,
        "unknown-step-reference",
        format!("`{text}` is neither an earlier step nor a workflow input"),
        match suggestion {
            Some(known) => format!("did you mean `{known}`?"),
            None if context.input_names.contains(text) => {
                format!("workflow inputs are written `input.{text}`")
            }
            None => "write `from: input.NAME` for a workflow input or `from: STEP_ID` for an \
                     earlier step"
                .to_string(),
        },
    );
    None
}

fn report_forbidden_key(
    key: &str,
    position: Position,
    through_alias: Option<Position>,
    diagnostics: &mut Diagnostics,
) {
    let (at, message) = match through_alias {
        Some(alias) => (
            alias,
            format!(
                "this alias brings in the key `{}` (written at {position}), which names a \
                 credential; inputs are stored verbatim",
                key.escape_debug()
            ),
        ),
        None => (
            position,
            format!(
                "the key `{}` names a credential; inputs are stored verbatim",
                key.escape_debug()
            ),
        ),
    };
    let rename = match crate::forbidden::suggested_rename(key) {
        Some(renamed) => format!(
            "; if it holds no credential (a pagination token is a cursor), rename it, such as \
             `{renamed}`"
        ),
        None => "; rename the key if it holds no credential".to_owned(),
    };
    diagnostics.report(
        at,
        "forbidden-key",
        message,
        format!(
            "never put credentials in a workflow: store them in the vault and grant them to the \
             step with `connections: [alias]`, then read `CONN_ALIAS_FIELD` from the \
             environment{rename}"
        ),
    );
}

/// Converts a literal into JSON, reporting every templated string, credential key and number
/// JSON cannot hold.
struct LiteralChecker<'diagnostics> {
    diagnostics: &'diagnostics mut Diagnostics,
    all_ok: bool,
}

impl LiteralChecker<'_> {
    fn convert(&mut self, node: &Node) -> serde_json::Value {
        match &node.value {
            NodeValue::Scalar(scalar) => match scalar.resolve() {
                Resolved::Null => serde_json::Value::Null,
                Resolved::Boolean(value) => serde_json::Value::Bool(value),
                Resolved::Integer(number) => serde_json::Value::Number(number),
                Resolved::Float(value) => match serde_json::Number::from_f64(value) {
                    Some(number) => serde_json::Value::Number(number),
                    None => {
                        self.fail(
                            node,
                            "non-finite-number",
                            format!("`{}` is not a finite number", scalar.text),
                            "inputs are JSON, which has no infinity or NaN: quote it to pass \
                             a string",
                        );
                        serde_json::Value::Null
                    }
                },
                Resolved::String(text) => {
                    self.check_templating(text, node);
                    serde_json::Value::String(text.to_string())
                }
            },
            NodeValue::Sequence(items) => {
                serde_json::Value::Array(items.iter().map(|item| self.convert(item)).collect())
            }
            NodeValue::Mapping(entries) => {
                let mut object = serde_json::Map::new();
                for entry in entries {
                    let Some(key) = entry.key.scalar_text() else {
                        self.all_ok = false;
                        continue;
                    };
                    if is_forbidden_key(key) {
                        report_forbidden_key(
                            key,
                            entry.key.position,
                            entry.key.through_alias,
                            self.diagnostics,
                        );
                        self.all_ok = false;
                    }
                    self.check_templating(key, &entry.key);
                    let value = self.convert(&entry.value);
                    object.insert(key.to_string(), value);
                }
                serde_json::Value::Object(object)
            }
        }
    }

    fn check_templating(&mut self, text: &str, node: &Node) {
        let Some(marker) = ["{{", "${", "{%"]
            .into_iter()
            .find(|marker| text.contains(marker))
        else {
            return;
        };
        self.fail(
            node,
            "templating",
            format!("`{marker}` looks like string templating, which step inputs do not have"),
            "pass values with `{ from: input.NAME }` or `{ from: STEP_ID }` and build strings \
             inside the step's code; templating is how injection gets into other workflow \
             systems",
        );
    }

    fn fail(&mut self, node: &Node, code: &'static str, message: String, help: &str) {
        let message = match node.through_alias {
            Some(_) => format!(
                "{message} (brought in by this alias, written at {})",
                node.position
            ),
            None => message,
        };
        self.diagnostics.report(
            node.through_alias.unwrap_or(node.position),
            code,
            message,
            help,
        );
        self.all_ok = false;
    }
}
