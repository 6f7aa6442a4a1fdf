//! Every number a tenant or a model controls has a maximum (agents review, finding 2:
//! `tool_timeout_s: 18446744073709551615` passed `check`, then panicked the platform). The
//! numbers are read from the format's own descriptions, the workflow's JSON Schema and the
//! agent file's key table, so a new number is covered the day it is added: each has a maximum,
//! and a file with the maximum plus one is refused at the value's `file:line:col`, naming the
//! maximum and the operator's flag.

use serde_json::Value;
use spec::{AGENT_FILE_KEYS, KeyValue, LimitMaxima};

/// Every integer of `schema` below `path`, with its JSON pointer-like path and its maximum.
fn integers(schema: &Value, path: &str, found: &mut Vec<(String, Option<u64>)>) {
    match schema {
        Value::Object(map) => {
            if map.get("type") == Some(&Value::String("integer".into())) {
                found.push((path.to_owned(), map.get("maximum").and_then(Value::as_u64)));
            }
            for (key, value) in map {
                integers(value, &format!("{path}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                integers(item, &format!("{path}/{index}"), found);
            }
        }
        _ => {}
    }
}

/// Where `needle` starts in `text`, as 1-based line and column.
fn line_and_column(text: &str, needle: &str) -> (u32, u32) {
    let at = text.find(needle).unwrap();
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |newline| newline + 1) + 1;
    (line as u32, column as u32)
}

fn assert_refused_at(diagnostics: &[spec::Diagnostic], text: &str, value: &str, flag: &str) {
    let (line, column) = line_and_column(text, value);
    let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(
        diagnostics.iter().any(|diagnostic| {
            diagnostic.code == "limit-above-maximum"
                && diagnostic.line == line
                && diagnostic.column == column
                && diagnostic.to_string().contains(flag)
        }),
        "{value} at {line}:{column} not refused naming {flag}: {shown:#?}"
    );
}

#[test]
fn g5_every_number_of_a_workflow_has_a_maximum_and_one_past_it_is_refused_where_it_is() {
    let maxima = LimitMaxima::BUILT_IN;
    let schema = spec::workflow_json_schema_within(&maxima);
    let mut found = Vec::new();
    integers(&schema, "", &mut found);
    assert!(!found.is_empty());
    for (path, maximum) in found {
        let maximum = maximum.unwrap_or_else(|| panic!("{path} has no maximum"));
        let key = path.rsplit('/').next().unwrap();
        assert_eq!(maximum, maxima.of(key).0, "{path}");
        let value = (maximum + 1).to_string();
        let text = format!(
            "name: w\npython: \"3.11\"\nsteps:\n  - id: s\n    explain: Does it.\n    limits: {{ {key}: {value} }}\n    code: |\n      def main():\n          return 1\n"
        );
        let diagnostics = spec::parse_workflow_within("w.yaml", &text, &maxima).unwrap_err();
        assert_refused_at(&diagnostics, &text, &value, maxima.of(key).1);
    }
}

/// The agent file of the review (every `loop` number `u64::MAX`) and each number of the key
/// table one past its maximum.
#[test]
fn g5_every_number_of_an_agent_file_has_a_maximum_and_one_past_it_is_refused_where_it_is() {
    let maxima = LimitMaxima::BUILT_IN;
    let numbers: Vec<&str> = AGENT_FILE_KEYS
        .iter()
        .filter(|key| key.value == KeyValue::Number)
        .map(|key| key.key)
        .collect();
    assert!(numbers.contains(&"loop.tool_timeout_s"), "{numbers:?}");
    for key in numbers {
        let (block, name) = key.split_once('.').unwrap();
        let (maximum, flag) = maxima.of(name);
        assert!(maximum < u64::MAX, "{key} has no maximum");
        let value = (maximum + 1).to_string();
        let text = format!(
            "---\nname: v\ndescription: V.\nmodel: fm/m\ntools: [Read]\n{block}:\n  {name}: {value}\n---\nV prompt.\n"
        );
        let diagnostics = spec::parse_agent_within("AGENT.md", &text, &maxima).unwrap_err();
        assert_refused_at(&diagnostics, &text, &value, flag);
    }
    let review = "---\nname: v\ndescription: V.\nmodel: fm/m\ntools: [Read]\nnetwork: none\nloop:\n  turns: 18446744073709551615\n  tokens: 18446744073709551615\n  step_timeout_s: 18446744073709551615\n  tool_timeout_s: 18446744073709551615\n---\nV prompt.\n";
    let diagnostics = spec::parse_agent("AGENT.md", review).unwrap_err();
    assert_eq!(diagnostics.len(), 4, "{diagnostics:#?}");
}

/// `tool_timeout_s ≤ step_timeout_s`: a tool call runs inside its step.
#[test]
fn g5_a_tool_call_may_not_outlast_its_step() {
    let text = "---\nname: v\ndescription: V.\nmodel: fm/m\ntools: [Read]\nloop:\n  step_timeout_s: 60\n  tool_timeout_s: 61\n---\nV prompt.\n";
    let diagnostics = spec::parse_agent("AGENT.md", text).unwrap_err();
    let (line, column) = line_and_column(text, "61");
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (line, column));
    assert!(diagnostics[0].to_string().contains("step_timeout_s"));
    let default = "---\nname: v\ndescription: V.\nmodel: fm/m\ntools: [Read]\nloop:\n  tool_timeout_s: 901\n---\nV prompt.\n";
    assert!(spec::parse_agent("AGENT.md", default).is_err());
    let fits = "---\nname: v\ndescription: V.\nmodel: fm/m\ntools: [Read]\nloop:\n  step_timeout_s: 1800\n  tool_timeout_s: 1800\n---\nV prompt.\n";
    assert!(spec::parse_agent("AGENT.md", fits).is_ok());
    // The operator's lower maxima lower what is in force, never raise it.
    let maxima = LimitMaxima {
        agent_step_timeout_s: 300,
        timeout_s: 30,
        ..LimitMaxima::BUILT_IN
    };
    let in_force = spec::LoopLimits::default().in_force(&maxima);
    assert_eq!(
        (in_force.step_timeout_s, in_force.tool_timeout_s),
        (300, 30)
    );
}

/// The table lists every key the parser reads, and nothing else.
#[test]
fn the_agent_key_table_is_the_parsers() {
    let text = "---\nname: v\ndescription: V.\nmodel: fm/m\nbogus: 1\n---\nV.\n";
    let diagnostics = spec::parse_agent("AGENT.md", text).unwrap_err();
    let help = diagnostics
        .iter()
        .find(|diagnostic| diagnostic.code == "unknown-key")
        .map(ToString::to_string)
        .unwrap();
    for key in AGENT_FILE_KEYS.iter().filter(|key| !key.key.contains('.')) {
        assert!(
            help.contains(key.key),
            "{} is not a key the parser names: {help}",
            key.key
        );
    }
}

/// Issue 36 §13: `docs/agents.md` has a reference of every `AGENT.md` key, kept in step with
/// the parser: the table between its markers is the one rendered from the key table the parser
/// is checked against, with the built-in maxima.
#[test]
fn the_docs_reference_of_the_agent_file_is_the_parsers_key_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md");
    let docs = std::fs::read_to_string(&path).unwrap();
    let start = "<!-- agent-file-keys: generated from spec::AGENT_FILE_KEYS -->\n";
    let end = "<!-- agent-file-keys: end -->";
    let expected = spec::agent_file_reference(&LimitMaxima::BUILT_IN);
    let shown = docs
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table);
    assert_eq!(
        shown,
        Some(expected.as_str()),
        "docs/agents.md's reference of the agent file differs from the key table; put this \
         between its markers:\n{start}{expected}{end}"
    );
}
