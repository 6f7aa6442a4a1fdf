//! Run-time input values: checked against the workflow's declarations and the forbidden-key
//! rule (G4), and turned into each step's keyword inputs.

use std::collections::BTreeMap;

use serde_json::Value;
use spec::{InputKind, InputSource, Step, Workflow};

/// What is wrong with the run-time inputs, one sentence each.
pub(crate) fn check_run_inputs(workflow: &Workflow, inputs: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(object) = inputs.as_object() else {
        problems.push("the run's inputs must be a JSON object of name: value".to_owned());
        return problems;
    };
    for declared in workflow.inputs() {
        match object.get(declared.name()) {
            None => problems.push(format!(
                "input `{}` is declared as {} but was not given",
                declared.name(),
                declared.kind().as_str()
            )),
            Some(value) if !matches_kind(value, declared.kind()) => problems.push(format!(
                "input `{}` must be {}, got {}",
                declared.name(),
                declared.kind().as_str(),
                json_kind(value)
            )),
            Some(_) => {}
        }
    }
    for name in object.keys() {
        if !workflow
            .inputs()
            .iter()
            .any(|declared| declared.name() == name)
        {
            problems.push(format!(
                "input `{name}` is not declared by the workflow `{}`",
                workflow.name()
            ));
        }
    }
    problems
}

fn matches_kind(value: &Value, kind: InputKind) -> bool {
    match kind {
        InputKind::String => value.is_string(),
        InputKind::Integer => value.is_i64() || value.is_u64(),
        InputKind::Number => value.is_number(),
        InputKind::Boolean => value.is_boolean(),
        InputKind::Object => value.is_object(),
        InputKind::Array => value.is_array(),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The step's keyword inputs from literals, workflow inputs and earlier outputs, with
/// `overrides` (a retry's new inputs) laid over them key by key.
pub(crate) fn step_inputs(
    step: &Step,
    run_inputs: &Value,
    outputs: &BTreeMap<String, Value>,
    overrides: Option<&Value>,
) -> Result<Value, String> {
    let mut built = serde_json::Map::new();
    for (name, source) in step.inputs() {
        let value = match source {
            InputSource::Literal(value) => value.clone(),
            InputSource::WorkflowInput(input) => {
                run_inputs.get(input).cloned().ok_or_else(|| {
                    format!("input `{name}` needs the run input `{input}`, which is missing")
                })?
            }
            InputSource::StepOutput(from) => outputs.get(from).cloned().ok_or_else(|| {
                format!("input `{name}` needs the output of step `{from}`, which has none")
            })?,
        };
        built.insert(name.clone(), value);
    }
    if let Some(overrides) = overrides {
        match overrides {
            Value::Object(fields) => {
                for (name, value) in fields {
                    built.insert(name.clone(), value.clone());
                }
            }
            Value::Null => {}
            _ => return Err("new inputs for a retry must be a JSON object".to_owned()),
        }
    }
    Ok(Value::Object(built))
}

/// `value` with whatever sits under a forbidden key (G4) replaced by the mask: a refused
/// attempt's record names the key but never holds what was under it.
pub(crate) fn without_forbidden_values(value: &Value) -> Value {
    match value {
        Value::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(key, inner)| {
                    let kept = if spec::is_forbidden_key(key) {
                        Value::String(redact::MASK.to_owned())
                    } else {
                        without_forbidden_values(inner)
                    };
                    (key.clone(), kept)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_forbidden_values).collect()),
        other => other.clone(),
    }
}

/// What is wrong with a supervisor's new inputs for `step` (G15), one sentence each: they
/// must be an object with exactly the step's input names (none added, none missing), hold no
/// credential key at any depth (G4), and where an input is `from: input.X`, match the
/// workflow's declared type of X. Empty when they are acceptable.
pub(crate) fn check_supervisor_retry_inputs(
    workflow: &Workflow,
    step: &Step,
    inputs: &Value,
) -> Vec<String> {
    check_retry_inputs(workflow, step, inputs, Given::Every)
}

/// What is wrong with a person's new inputs for `step` (G15): as a supervisor's, except that
/// a person gives only the inputs that change (each replaces the input of its name).
pub(crate) fn check_person_retry_inputs(
    workflow: &Workflow,
    step: &Step,
    inputs: &Value,
) -> Vec<String> {
    check_retry_inputs(workflow, step, inputs, Given::Changed)
}

/// Which of a step's inputs a retry gives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Given {
    /// Every one (the supervisor's).
    Every,
    /// Those that change (a person's).
    Changed,
}

fn check_retry_inputs(
    workflow: &Workflow,
    step: &Step,
    inputs: &Value,
    given: Given,
) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(object) = inputs.as_object() else {
        problems.push(format!(
            "the new inputs must be a JSON object of the step's input names, got {}",
            json_kind(inputs)
        ));
        return problems;
    };
    let declared: Vec<&str> = step
        .inputs()
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let added: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|name| !declared.contains(name))
        .collect();
    if !added.is_empty() {
        problems.push(format!(
            "step `{}` has no input named {} (its inputs: {})",
            step.id(),
            quoted(&added),
            names_or_none(&declared)
        ));
    }
    let missing: Vec<&str> = declared
        .iter()
        .copied()
        .filter(|name| !object.contains_key(*name))
        .collect();
    if given == Given::Every && !missing.is_empty() {
        problems.push(format!(
            "the new inputs leave out {} of step `{}`: a retry gives every input of the step",
            quoted(&missing),
            step.id()
        ));
    }
    let forbidden = spec::forbidden_keys_in(inputs);
    if !forbidden.is_empty() {
        problems.push(format!(
            "the new inputs hold forbidden keys (credentials are never inputs): {}",
            forbidden.join(", ")
        ));
    }
    for (name, source) in step.inputs() {
        let (InputSource::WorkflowInput(input), Some(value)) = (source, object.get(name)) else {
            continue;
        };
        let Some(kind) = workflow
            .inputs()
            .iter()
            .find(|declared| declared.name() == input)
            .map(|declared| declared.kind())
        else {
            continue;
        };
        if !matches_kind(value, kind) {
            problems.push(format!(
                "input `{name}` comes from the workflow input `{input}`, declared as {}, but \
                 the new value is {}",
                kind.as_str(),
                json_kind(value)
            ));
        }
    }
    problems
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn names_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        quoted(names)
    }
}

/// The step's declaration as a supervisor is shown it (G15): what the workflow states about
/// the step, never a value (a workflow holds none, G1).
pub(crate) fn declaration(workflow: &Workflow, step: &Step) -> Value {
    let inputs: serde_json::Map<String, Value> = step
        .inputs()
        .iter()
        .map(|(name, source)| {
            let shown = match source {
                InputSource::Literal(value) => serde_json::json!({ "literal": value }),
                InputSource::WorkflowInput(input) => {
                    let kind = workflow
                        .inputs()
                        .iter()
                        .find(|declared| declared.name() == input)
                        .map(|declared| declared.kind().as_str());
                    serde_json::json!({ "from": format!("input.{input}"), "type": kind })
                }
                InputSource::StepOutput(from) => serde_json::json!({ "from": from }),
            };
            (name.clone(), shown)
        })
        .collect();
    let mut shown = serde_json::json!({
        "id": step.id(),
        "gate": step.is_gate(),
        "explain": step.explain(),
        "network": step.network().as_str(),
        "connections": step.connections(),
        "inputs": inputs,
    });
    if let Value::Object(fields) = &mut shown {
        match step.body() {
            spec::StepBody::Code { source } => {
                fields.insert("code".to_owned(), Value::from(source.as_str()));
            }
            spec::StepBody::Agent { agent, task } => {
                fields.insert("agent".to_owned(), Value::from(agent.as_str()));
                fields.insert("task".to_owned(), Value::from(task.as_str()));
            }
        }
    }
    shown
}
