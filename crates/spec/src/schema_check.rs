//! Tests that the JSON Schema describes the files the parser accepts: every ok fixture and
//! bundled example validates against it, and files with structural mistakes do not.
//!
//! A small validator for exactly the keywords the schema uses lives here (with a small regular
//! expression matcher for its `pattern`s); an unknown keyword fails the test, so the schema
//! cannot quietly grow a keyword that nothing checks.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diagnostic::Diagnostics;
use crate::schema::workflow_json_schema;
use crate::yaml::{self, Node, NodeValue, Resolved};

/// The raw YAML as JSON, as an editor's language server would see it.
fn node_to_json(node: &Node) -> Value {
    match &node.value {
        NodeValue::Scalar(scalar) => match scalar.resolve() {
            Resolved::Null => Value::Null,
            Resolved::Boolean(value) => Value::Bool(value),
            Resolved::Integer(number) => Value::Number(number),
            Resolved::Float(value) => serde_json::Number::from_f64(value)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Resolved::String(text) => Value::String(text.to_string()),
        },
        NodeValue::Sequence(items) => Value::Array(items.iter().map(node_to_json).collect()),
        NodeValue::Mapping(entries) => Value::Object(
            entries
                .iter()
                .map(|entry| {
                    (
                        entry.key.scalar_text().unwrap_or_default().to_string(),
                        node_to_json(&entry.value),
                    )
                })
                .collect(),
        ),
    }
}

fn validate(schema: &Value, root: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        errors.push(format!("{path}: schema is not an object"));
        return;
    };
    for (keyword, argument) in keywords {
        match keyword.as_str() {
            "$schema" | "$id" | "title" | "description" | "$defs" => {}
            "$ref" => {
                let target = argument
                    .as_str()
                    .and_then(|reference| reference.strip_prefix("#"))
                    .and_then(|pointer| root.pointer(pointer));
                match target {
                    Some(target) => validate(target, root, value, path, errors),
                    None => errors.push(format!("{path}: unresolved $ref {argument}")),
                }
            }
            "type" => {
                let matches = match argument.as_str().unwrap_or_default() {
                    "object" => value.is_object(),
                    "array" => value.is_array(),
                    "string" => value.is_string(),
                    "boolean" => value.is_boolean(),
                    "null" => value.is_null(),
                    "number" => value.is_number(),
                    "integer" => value.is_i64() || value.is_u64(),
                    other => {
                        errors.push(format!("{path}: unknown type {other}"));
                        true
                    }
                };
                if !matches {
                    errors.push(format!("{path}: not of type {argument}"));
                }
            }
            "enum" => {
                let allowed = argument.as_array().cloned().unwrap_or_default();
                if !allowed.contains(value) {
                    errors.push(format!("{path}: {value} not in {argument}"));
                }
            }
            "required" => {
                if let Some(object) = value.as_object() {
                    for key in argument.as_array().into_iter().flatten() {
                        if !object.contains_key(key.as_str().unwrap_or_default()) {
                            errors.push(format!("{path}: missing {key}"));
                        }
                    }
                }
            }
            "properties" => {
                if let (Some(object), Some(properties)) = (value.as_object(), argument.as_object())
                {
                    for (key, inner) in object {
                        if let Some(property) = properties.get(key) {
                            validate(property, root, inner, &format!("{path}/{key}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(object) = value.as_object() {
                    let known = schema.get("properties").and_then(Value::as_object);
                    for (key, inner) in object {
                        if known.is_some_and(|known| known.contains_key(key)) {
                            continue;
                        }
                        match argument {
                            Value::Bool(false) => {
                                errors.push(format!("{path}: unexpected key {key}"));
                            }
                            Value::Bool(true) => {}
                            additional => {
                                validate(additional, root, inner, &format!("{path}/{key}"), errors)
                            }
                        }
                    }
                }
            }
            "propertyNames" => {
                if let Some(object) = value.as_object() {
                    for key in object.keys() {
                        let key_value = Value::String(key.clone());
                        validate(argument, root, &key_value, &format!("{path}/{key}"), errors);
                    }
                }
            }
            "items" => {
                for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                    validate(argument, root, item, &format!("{path}/{index}"), errors);
                }
            }
            "minItems" | "maxItems" => {
                if let (Some(items), Some(bound)) = (value.as_array(), argument.as_u64()) {
                    let length = u64::try_from(items.len()).unwrap_or(u64::MAX);
                    let broken = if keyword == "minItems" {
                        length < bound
                    } else {
                        length > bound
                    };
                    if broken {
                        errors.push(format!("{path}: {keyword} {bound}"));
                    }
                }
            }
            "uniqueItems" => {
                if let Some(items) = value.as_array() {
                    for (index, item) in items.iter().enumerate() {
                        if items[..index].contains(item) {
                            errors.push(format!("{path}: duplicate item {item}"));
                        }
                    }
                }
            }
            "minimum" => {
                if let (Some(number), Some(bound)) = (value.as_f64(), argument.as_f64())
                    && number < bound
                {
                    errors.push(format!("{path}: below {bound}"));
                }
            }
            "maximum" => {
                if let (Some(number), Some(bound)) = (value.as_f64(), argument.as_f64())
                    && number > bound
                {
                    errors.push(format!("{path}: above {bound}"));
                }
            }
            "minLength" => {
                if let (Some(text), Some(bound)) = (value.as_str(), argument.as_u64())
                    && u64::try_from(text.chars().count()).unwrap_or(u64::MAX) < bound
                {
                    errors.push(format!("{path}: shorter than {bound}"));
                }
            }
            "pattern" => {
                if let Some(text) = value.as_str()
                    && !pattern_matches(argument.as_str().unwrap_or_default(), text)
                {
                    errors.push(format!("{path}: {text:?} does not match {argument}"));
                }
            }
            "oneOf" | "anyOf" => {
                let passing = argument
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|branch| {
                        let mut branch_errors = Vec::new();
                        validate(branch, root, value, path, &mut branch_errors);
                        branch_errors.is_empty()
                    })
                    .count();
                let ok = if keyword == "oneOf" {
                    passing == 1
                } else {
                    passing >= 1
                };
                if !ok {
                    errors.push(format!("{path}: {keyword} matched {passing} branches"));
                }
            }
            "not" => {
                let mut branch_errors = Vec::new();
                validate(argument, root, value, path, &mut branch_errors);
                if branch_errors.is_empty() {
                    errors.push(format!("{path}: matches a `not`"));
                }
            }
            other => errors.push(format!("{path}: the test validator does not know {other}")),
        }
    }
}

/// A piece of a pattern: an atom repeated between `min` and `max` times.
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

enum Atom {
    Literal(char),
    Class(Vec<(char, char)>),
    Group(Vec<Vec<Piece>>),
}

/// Matches the anchored patterns the schema uses: literals, `\.`, classes with ranges, groups
/// with `|`, and the quantifiers `*`, `+` and `?`.
fn pattern_matches(pattern: &str, text: &str) -> bool {
    let Some(inner) = pattern
        .strip_prefix('^')
        .and_then(|inner| inner.strip_suffix('$'))
    else {
        return false;
    };
    let characters: Vec<char> = inner.chars().collect();
    let mut index = 0;
    let alternatives = parse_alternatives(&characters, &mut index);
    let text: Vec<char> = text.chars().collect();
    alternatives
        .iter()
        .any(|sequence| match_sequence(sequence, &text, 0, &|end| end == text.len()))
}

fn parse_alternatives(pattern: &[char], index: &mut usize) -> Vec<Vec<Piece>> {
    let mut alternatives = vec![Vec::new()];
    while let Some(&character) = pattern.get(*index) {
        *index += 1;
        let atom = match character {
            ')' => break,
            '|' => {
                alternatives.push(Vec::new());
                continue;
            }
            '(' => Atom::Group(parse_alternatives(pattern, index)),
            '\\' => {
                let escaped = pattern.get(*index).copied().unwrap_or('\\');
                *index += 1;
                Atom::Literal(escaped)
            }
            '[' => {
                let mut ranges = Vec::new();
                while let Some(&member) = pattern.get(*index) {
                    *index += 1;
                    if member == ']' {
                        break;
                    }
                    if pattern.get(*index) == Some(&'-') && pattern.get(*index + 1) != Some(&']') {
                        let end = pattern.get(*index + 1).copied().unwrap_or(member);
                        *index += 2;
                        ranges.push((member, end));
                    } else {
                        ranges.push((member, member));
                    }
                }
                Atom::Class(ranges)
            }
            literal => Atom::Literal(literal),
        };
        let (min, max) = match pattern.get(*index) {
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('?') => (0, 1),
            _ => (1, 1),
        };
        if (min, max) != (1, 1) {
            *index += 1;
        }
        if let Some(sequence) = alternatives.last_mut() {
            sequence.push(Piece { atom, min, max });
        }
    }
    alternatives
}

fn match_sequence(
    pieces: &[Piece],
    text: &[char],
    position: usize,
    rest: &dyn Fn(usize) -> bool,
) -> bool {
    match pieces.split_first() {
        None => rest(position),
        Some((piece, others)) => match_repeated(piece, 0, others, text, position, rest),
    }
}

fn match_repeated(
    piece: &Piece,
    count: usize,
    others: &[Piece],
    text: &[char],
    position: usize,
    rest: &dyn Fn(usize) -> bool,
) -> bool {
    let more = count < piece.max
        && match_atom(&piece.atom, text, position, &|next| {
            next != position && match_repeated(piece, count + 1, others, text, next, rest)
        });
    more || (count >= piece.min && match_sequence(others, text, position, rest))
}

fn match_atom(atom: &Atom, text: &[char], position: usize, rest: &dyn Fn(usize) -> bool) -> bool {
    match atom {
        Atom::Literal(expected) => text.get(position) == Some(expected) && rest(position + 1),
        Atom::Class(ranges) => {
            text.get(position).is_some_and(|character| {
                ranges
                    .iter()
                    .any(|(low, high)| (low..=high).contains(&character))
            }) && rest(position + 1)
        }
        Atom::Group(alternatives) => alternatives
            .iter()
            .any(|sequence| match_sequence(sequence, text, position, rest)),
    }
}

fn schema_errors(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut diagnostics = Diagnostics::new("fixture");
    let root = yaml::parse(&text, 0, &mut diagnostics).unwrap();
    let schema = workflow_json_schema();
    let mut errors = Vec::new();
    validate(&schema, &schema, &node_to_json(&root), "", &mut errors);
    errors
}

fn workflow_files(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_pattern_matcher_understands_the_schemas_patterns() {
    assert!(pattern_matches("^[a-z][a-z0-9_]*!?$", "send_refund!"));
    assert!(!pattern_matches("^[a-z][a-z0-9_]*!?$", "Send"));
    assert!(pattern_matches("^[0-9]+\\.[0-9]+$", "3.11"));
    assert!(!pattern_matches("^[0-9]+\\.[0-9]+$", "3.11.2"));
    let reference = "^(input\\.[a-z][a-z0-9_]*|[a-z][a-z0-9_]*)$";
    assert!(pattern_matches(reference, "input.ticket_id"));
    assert!(pattern_matches(reference, "build"));
    assert!(!pattern_matches(reference, "input."));
    assert!(pattern_matches("^[a-z][a-z0-9_-]*$", "digest-writer"));
}

#[test]
fn every_ok_fixture_and_example_validates_against_the_schema() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = workflow_files(&manifest.join("test_data/ok"));
    files.extend(workflow_files(&manifest.join("../../examples/workflows")));
    assert!(files.len() >= 6, "{files:?}");
    for path in files {
        let errors = schema_errors(&path);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

#[test]
fn structural_mistakes_fail_the_schema_too() {
    let err = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/err");
    for name in [
        "0003_missing_python",
        "0004_python_float",
        "0005_python_patch_version",
        "0007_unknown_input_type",
        "0009_empty_steps",
        "0010_invalid_step_id",
        "0012_code_and_agent",
        "0013_missing_code_or_agent",
        "0014_missing_explain",
        "0019_unknown_network",
        "0021_agent_step_network",
        "0022_invalid_connection_alias",
        "0023_duplicate_connection",
        "0029_from_with_other_keys",
        "0039_unknown_top_level_key",
        "0040_unknown_step_key",
        "0058_agent_step_connections",
    ] {
        let errors = schema_errors(&err.join(format!("{name}.yaml")));
        assert!(!errors.is_empty(), "{name} passes the schema");
    }
}
