//! One test per promise this crate carries, named after the guarantee it proves.

use std::time::{Duration, Instant};

use spec::{
    Agent, InputSource, Network, REACH_CAPTION, ReachInternet, ReachKind, StepBody, parse_agent,
    parse_workflow, reach, render_reach_table,
};

const REFUND: &str = r#"name: refund
python: "3.11"
inputs: { ticket_id: string }
steps:
  - id: build_request
    explain: Turns the ticket into a request.
    inputs: { ticket_id: { from: input.ticket_id } }
    code: |
      def main(ticket_id):
          return {"ticket": ticket_id}
  - id: ask_agent
    agent: digest
    task: Summarise the ticket.
    inputs: { request: { from: build_request } }
  - id: send_refund!
    explain: Sends it.
    network: public_egress
    connections: [payments]
    inputs: { request: { from: build_request } }
    code: |
      def main(request):
          return request
  - id: quiet
    explain: Reaches nothing at all.
    code: |
      def main():
          return None
"#;

const DIGEST_AGENT: &str = "---\nname: digest\ndescription: Digests.\ntools: [Read]\nsecrets: [NOTES_TOKEN]\nnetwork: public_egress\n---\nDigest things.\n";

fn codes(result: Result<impl std::fmt::Debug, Vec<spec::Diagnostic>>) -> Vec<&'static str> {
    match result {
        Ok(value) => panic!("expected diagnostics, got {value:?}"),
        Err(diagnostics) => diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code)
            .collect(),
    }
}

fn code_step_with_explain(explain_line: &str) -> String {
    format!(
        "name: x\npython: \"3.11\"\nsteps:\n  - id: only\n{explain_line}    code: |\n      def main():\n          return 1\n"
    )
}

#[test]
fn g1_parsing_the_source_again_gives_the_same_value() {
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    let again = parse_workflow(workflow.file_name(), workflow.source()).unwrap();
    assert_eq!(workflow, again);
    assert_eq!(workflow.steps().len(), 4);
    assert_eq!(workflow.python().to_string(), "3.11");
}

#[test]
fn g1_a_file_breaking_any_rule_yields_no_value() {
    let broken = REFUND.replace("    explain: Sends it.\n", "");
    assert_eq!(
        codes(parse_workflow("refund.yaml", &broken)),
        vec!["missing-explain"]
    );
}

#[test]
fn g2_blank_explain_is_an_error() {
    let text = code_step_with_explain("    explain: \"  \\t \"\n");
    assert_eq!(
        codes(parse_workflow("w.yaml", &text)),
        vec!["blank-explain"]
    );
}

#[test]
fn g2_missing_explain_is_an_error() {
    let text = code_step_with_explain("");
    assert_eq!(
        codes(parse_workflow("w.yaml", &text)),
        vec!["missing-explain"]
    );
}

#[test]
fn g2_explain_that_is_not_a_string_is_an_error() {
    let text = code_step_with_explain("    explain: 42\n");
    assert_eq!(
        codes(parse_workflow("w.yaml", &text)),
        vec!["expected-string"]
    );
}

#[test]
fn g3_network_and_connections_default_to_nothing() {
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    let quiet = workflow.step("quiet").unwrap();
    assert_eq!(quiet.network(), Network::None);
    assert!(quiet.connections().is_empty());
    let send = workflow.step("send_refund").unwrap();
    assert_eq!(send.network(), Network::PublicEgress);
    assert_eq!(send.connections(), ["payments".to_string()]);
}

#[test]
fn g3_unknown_network_value_is_an_error_naming_both_allowed_values() {
    for value in ["internet", "true", "[public_egress]", "\"\"", "None"] {
        let text = code_step_with_explain(&format!("    explain: x\n    network: {value}\n"));
        let diagnostics = parse_workflow("w.yaml", &text).unwrap_err();
        assert_eq!(diagnostics.len(), 1, "{value}: {diagnostics:?}");
        assert_eq!(diagnostics[0].code, "unknown-network");
        assert!(diagnostics[0].message.contains("`none` or `public_egress`"));
    }
}

/// G15: a workflow's failures go to the assistant unless it says `supervisor: none`; any
/// other value is an error naming both, never a silent default.
#[test]
fn g15_supervisor_defaults_to_the_assistant_and_none_is_parsed_and_unknown_is_an_error() {
    use spec::Supervision;
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    assert_eq!(workflow.supervisor(), Supervision::Assistant);
    let none = REFUND.replace("python: \"3.11\"\n", "python: \"3.11\"\nsupervisor: none\n");
    assert_eq!(
        parse_workflow("refund.yaml", &none).unwrap().supervisor(),
        Supervision::None
    );
    for value in ["nobody", "false", "[none]", "None"] {
        let text = REFUND.replace(
            "python: \"3.11\"\n",
            &format!("python: \"3.11\"\nsupervisor: {value}\n"),
        );
        let diagnostics = parse_workflow("w.yaml", &text).unwrap_err();
        assert_eq!(diagnostics.len(), 1, "{value}: {diagnostics:?}");
        assert_eq!(diagnostics[0].code, "unknown-supervisor");
        assert!(diagnostics[0].message.contains("`assistant` or `none`"));
        assert_eq!(diagnostics[0].line, 3, "{value}");
    }
}

#[test]
fn g3_agent_network_defaults_to_none_and_unknown_is_an_error() {
    let agent = parse_agent("AGENT.md", "---\nname: a\ndescription: b\n---\nc\n").unwrap();
    assert_eq!(agent.network(), Network::None);
    let broken = "---\nname: a\ndescription: b\nnetwork: lan\n---\nc\n";
    assert_eq!(
        codes(parse_agent("AGENT.md", broken)),
        vec!["unknown-network"]
    );
}

#[test]
fn g3_colliding_connection_variable_names_are_found() {
    let pairs = vec![
        ("pay_ments".to_string(), "key".to_string()),
        ("pay".to_string(), "ments_key".to_string()),
    ];
    let collisions = spec::env_name_collisions(&pairs);
    assert_eq!(collisions.len(), 1);
    assert_eq!(collisions[0].0, "CONN_PAY_MENTS_KEY");
    assert_eq!(
        spec::connection_env_name("payments", "api_key"),
        "CONN_PAYMENTS_API_KEY"
    );
}

#[test]
fn g4_forbidden_keys_are_found_in_run_time_values() {
    let value = serde_json::json!({"outer": [{"API-KEY": 1}, {"api\u{200b}key": 2}], "Token": 3});
    let mut found = spec::forbidden_keys_in(&value);
    found.sort();
    assert_eq!(
        found,
        ["/Token", "/outer/0/API-KEY", "/outer/1/api\u{200b}key"]
    );
    assert!(spec::is_forbidden_key("apiKey"));
    assert!(!spec::is_forbidden_key("ticket_id"));
}

#[test]
fn g4_forbidden_key_behind_an_alias_is_reported_at_the_alias() {
    let text = "name: x\npython: \"3.11\"\nsteps:\n  - id: a\n    explain: x\n    inputs:\n      one: &c { token: 1 }\n      two: [*c]\n    code: |\n      def main(one, two):\n          return 1\n";
    let diagnostics = parse_workflow("w.yaml", text).unwrap_err();
    let lines: Vec<(u32, u32, &str)> = diagnostics
        .iter()
        .map(|diagnostic| (diagnostic.line, diagnostic.column, diagnostic.code))
        .collect();
    assert_eq!(lines, [(7, 17, "forbidden-key"), (8, 13, "forbidden-key")]);
}

#[test]
fn g4_forbidden_key_behind_a_merge_is_reported() {
    let text = "name: x\npython: \"3.11\"\nsteps:\n  - id: a\n    explain: x\n    inputs:\n      one: { <<: { ApiKey: 1 }, b: 2 }\n    code: |\n      def main(one):\n          return 1\n";
    assert_eq!(codes(parse_workflow("w.yaml", text)), vec!["forbidden-key"]);
}

#[test]
fn g4_literal_values_keep_their_yaml_meaning() {
    let text = "name: x\npython: \"3.11\"\nsteps:\n  - id: a\n    explain: x\n    inputs:\n      v: { n: 3, f: 0.5, b: true, z: null, s: \"3.10\", l: [1, x] }\n    code: |\n      def main(v):\n          return v\n";
    let workflow = parse_workflow("w.yaml", text).unwrap();
    assert_eq!(
        workflow.steps()[0].inputs()[0].1,
        InputSource::Literal(
            serde_json::json!({"n": 3, "f": 0.5, "b": true, "z": null, "s": "3.10", "l": [1, "x"]})
        )
    );
}

#[test]
fn g5_diagnostics_name_file_line_column_what_is_wrong_and_what_would_be_right() {
    let text = "name: x\npython: 3.10\nsteps:\n  - id: a\n    explain: x\n    code: |\n      def main():\n          return 1\n";
    let diagnostics = parse_workflow("flows/x.yaml", text).unwrap_err();
    assert_eq!(diagnostics.len(), 1);
    let diagnostic = &diagnostics[0];
    assert_eq!(
        diagnostic.to_string(),
        "flows/x.yaml:2:9: error[python-not-string]: `python` must be a quoted string, but YAML reads the unquoted 3.10 as the number 3.1\n  = help: quote it: `python: \"3.10\"` (unquoted, 3.10 would become 3.1)"
    );
    assert_eq!(
        diagnostic.render_with_source(text),
        "error[python-not-string]: `python` must be a quoted string, but YAML reads the unquoted 3.10 as the number 3.1\n --> flows/x.yaml:2:9\n  |\n2 | python: 3.10\n  |         ^\n  = help: quote it: `python: \"3.10\"` (unquoted, 3.10 would become 3.1)\n"
    );
}

#[test]
fn g5_every_violation_is_reported_at_once_in_file_order() {
    let text = "name: x\nsteps:\n  - id: Bad\n    code: x\n  - id: b\n    explain: y\n    network: lan\n    code: |\n      def main():\n          return 1\n";
    let diagnostics = parse_workflow("w.yaml", text).unwrap_err();
    let found: Vec<&str> = diagnostics
        .iter()
        .map(|diagnostic| diagnostic.code)
        .collect();
    assert_eq!(
        found,
        [
            "missing-python",
            "missing-explain",
            "invalid-step-id",
            "missing-main",
            "unknown-network"
        ]
    );
    let mut positions: Vec<(u32, u32)> = diagnostics.iter().map(|d| (d.line, d.column)).collect();
    let sorted = positions.clone();
    positions.sort();
    assert_eq!(positions, sorted);
}

#[test]
fn g8_an_unquoted_python_version_is_rejected_with_quoting_help() {
    let text = "name: x\npython: 3.10\nsteps: []\n";
    let diagnostics = parse_workflow("w.yaml", text).unwrap_err();
    let pin = diagnostics
        .iter()
        .find(|d| d.code == "python-not-string")
        .unwrap();
    assert!(pin.help.contains("\"3.10\""), "{}", pin.help);
}

#[test]
fn g23_the_gate_mark_is_not_part_of_the_id_and_references_use_the_bare_id() {
    let text = "name: x\npython: \"3.11\"\nsteps:\n  - id: send!\n    explain: x\n    code: |\n      def main():\n          return 1\n  - id: after\n    explain: y\n    inputs: { sent: { from: send } }\n    code: |\n      def main(sent):\n          return sent\n";
    let workflow = parse_workflow("w.yaml", text).unwrap();
    let send = workflow.step("send").unwrap();
    assert!(send.is_gate());
    assert_eq!(send.id(), "send");
    assert!(!workflow.step("after").unwrap().is_gate());
    assert_eq!(
        workflow.step("after").unwrap().inputs()[0].1,
        InputSource::StepOutput("send".to_string())
    );
}

fn digest_agent(name: &str) -> Option<Agent> {
    (name == "digest").then(|| parse_agent("agents/digest/AGENT.md", DIGEST_AGENT).unwrap())
}

#[test]
fn g27_reach_has_a_row_for_every_step() {
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    let rows = reach(&workflow, &digest_agent);
    let steps: Vec<&str> = rows.iter().map(|row| row.step.as_str()).collect();
    assert_eq!(
        steps,
        ["build_request", "ask_agent", "send_refund", "quiet"]
    );
    assert_eq!(rows[0].internet, ReachInternet::No);
    assert_eq!(
        rows[1].kind,
        ReachKind::Agent {
            agent: "digest".to_string()
        }
    );
    assert_eq!(rows[1].internet, ReachInternet::Yes);
    assert_eq!(rows[1].secrets, ["NOTES_TOKEN".to_string()]);
    assert!(rows[2].gate);
    assert_eq!(rows[2].internet, ReachInternet::Yes);
    assert_eq!(rows[2].connections, ["payments".to_string()]);
    assert_eq!(rows[3].kind, ReachKind::Code);
    assert_eq!(rows[3].internet, ReachInternet::No);
    assert!(rows[3].connections.is_empty() && rows[3].secrets.is_empty());
}

#[test]
fn g27_an_agent_step_without_its_agent_file_is_unknown_not_no() {
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    let rows = reach(&workflow, &|_| None);
    assert_eq!(rows.len(), 4);
    match &rows[1].internet {
        ReachInternet::Unknown { reason } => assert!(reason.contains("agents/digest/AGENT.md")),
        other => panic!("expected unknown, got {other:?}"),
    }
    assert!(render_reach_table(&rows).contains("unknown (the agent file agents/digest/AGENT.md"));
}

#[test]
fn g27_the_table_starts_with_the_caption_word_for_word_and_lists_every_step() {
    assert_eq!(
        REACH_CAPTION,
        "This is what each step is permitted to reach, not a review of what its code does."
    );
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    let table = render_reach_table(&reach(&workflow, &digest_agent));
    insta::assert_snapshot!("g27_reach_table", table);
    assert!(table.starts_with(REACH_CAPTION));
    for step in workflow.steps() {
        assert!(
            table.lines().any(|line| line.starts_with(step.id())),
            "{}",
            step.id()
        );
    }
}

#[test]
fn limits_an_oversized_file_is_an_error() {
    let mut text = code_step_with_explain("    explain: x\n");
    text.push_str(&"# padding\n".repeat(30_000));
    assert_eq!(
        codes(parse_workflow("w.yaml", &text)),
        vec!["file-too-large"]
    );
    let agent = format!("---\nname: a\ndescription: b\n---\n{}", "x".repeat(300_000));
    assert_eq!(
        codes(parse_agent("AGENT.md", &agent)),
        vec!["file-too-large"]
    );
}

#[test]
fn limits_an_alias_bomb_is_refused_quickly() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..12 {
        let previous = format!("*a{}", level - 1);
        text.push_str(&format!(
            "a{level}: &a{level} [{}]\n",
            vec![previous; 10].join(", ")
        ));
    }
    let started = Instant::now();
    assert_eq!(
        codes(parse_workflow("w.yaml", &text)),
        vec!["too-many-nodes"]
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn limits_deep_nesting_is_refused_in_block_and_flow_style() {
    let flow = format!("name: {}{}\n", "[".repeat(5_000), "]".repeat(5_000));
    assert_eq!(codes(parse_workflow("w.yaml", &flow)), vec!["too-deep"]);
    let mut block = String::new();
    for level in 0..40 {
        block.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
    }
    assert_eq!(codes(parse_workflow("w.yaml", &block)), vec!["too-deep"]);
}

#[test]
fn agent_files_keep_their_prompt_and_custom_tools() {
    let text = "---\nname: a\ndescription: b\ntools: [Read, fetch]\ncustom_tools:\n  fetch: { explain: Fetches., script: tools/fetch.py }\n---\nBe brief.\n";
    let agent = parse_agent("agents/a/AGENT.md", text).unwrap();
    assert_eq!(agent.prompt(), "Be brief.\n");
    assert_eq!(agent.tools()[1], spec::Tool::Custom("fetch".to_string()));
    assert_eq!(
        agent.custom_tool("fetch").unwrap().script(),
        "tools/fetch.py"
    );
}

#[test]
fn agent_front_matter_diagnostics_point_at_the_right_line() {
    let text = "---\nname: a\ndescription: b\ntools: [Read, Bash]\n---\nBe brief.\n";
    let diagnostics = parse_agent("AGENT.md", text).unwrap_err();
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (4, 15));
}

#[test]
fn step_bodies_are_code_or_agent() {
    let workflow = parse_workflow("refund.yaml", REFUND).unwrap();
    assert!(
        matches!(workflow.steps()[0].body(), StepBody::Code { source } if source.contains("def main("))
    );
    assert_eq!(
        workflow.steps()[1].body(),
        &StepBody::Agent {
            agent: "digest".to_string(),
            task: "Summarise the ticket.".to_string()
        }
    );
}

#[test]
fn the_schema_is_draft_2020_12_and_names_every_step_key() {
    let schema = spec::workflow_json_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let step = &schema["$defs"]["step"]["properties"];
    for key in [
        "id",
        "explain",
        "code",
        "agent",
        "task",
        "network",
        "connections",
        "inputs",
    ] {
        assert!(step.get(key).is_some(), "{key}");
    }
}

#[test]
fn g21_an_agent_file_must_be_named_after_its_folder() {
    let text = "---\nname: digest\ndescription: b\n---\nc\n";
    assert!(parse_agent("workspace/agents/digest/AGENT.md", text).is_ok());
    assert_eq!(
        codes(parse_agent("workspace/agents/other/AGENT.md", text)),
        vec!["agent-name-mismatch"]
    );
}

#[test]
fn g21_a_tool_that_is_not_built_in_must_be_declared() {
    let undeclared = "---\nname: a\ndescription: b\ntools: [Read, deploy]\n---\nc\n";
    assert_eq!(
        codes(parse_agent("AGENT.md", undeclared)),
        vec!["unknown-tool"]
    );
}

#[test]
fn limits_a_file_full_of_names_and_typos_still_parses_quickly() {
    let inputs: Vec<String> = (0..4000).map(|index| format!("i{index}: string")).collect();
    let connections: Vec<String> = (0..8000).map(|index| format!("c{index}")).collect();
    let references: String = (0..3000)
        .map(|index| format!("      x{index}: {{from: input.j{index}}}\n"))
        .collect();
    let text = format!(
        "name: big\npython: \"3.11\"\ninputs: {{{}}}\nsteps:\n  - id: only\n    explain: x\n    connections: [{}]\n    inputs:\n{references}    code: |\n      def main(**inputs):\n          return 1\n",
        inputs.join(", "),
        connections.join(", ")
    );
    assert!(text.len() < spec::limits::MAX_FILE_BYTES, "{}", text.len());
    let started = Instant::now();
    let diagnostics = parse_workflow("big.yaml", &text).unwrap_err();
    assert_eq!(diagnostics.len(), 3000);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

const LIMITED: &str = "name: limited\npython: \"3.11\"\nsteps:\n  - id: crunch\n    explain: Crunches.\n    limits: { memory_mib: 1024, timeout_s: 120 }\n    code: |\n      def main():\n          return 1\n";

#[test]
fn g5_declared_limits_are_held_to_the_maxima_the_parse_is_given() {
    // The built-in maxima allow it; the declared values are kept exactly, never lowered.
    let workflow = parse_workflow("limited.yaml", LIMITED).unwrap();
    assert_eq!(
        workflow.steps()[0].limits().declared(),
        vec![("memory_mib", 1024), ("timeout_s", 120)]
    );
    // An operator with lower maxima refuses the same text, naming the limit and the maximum.
    let maxima = spec::LimitMaxima {
        memory_mib: 512,
        timeout_s: 60,
        ..spec::LimitMaxima::BUILT_IN
    };
    let diagnostics = spec::parse_workflow_within("limited.yaml", LIMITED, &maxima).unwrap_err();
    let messages: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(diagnostics.len(), 2, "{messages:#?}");
    assert!(messages[0].contains("`memory_mib: 1024` is above this server's maximum of 512"));
    assert!(messages[0].contains("--max-step-memory-mib"));
    assert!(messages[1].contains("`timeout_s: 120` is above this server's maximum of 60"));
    assert!(
        diagnostics
            .iter()
            .all(|diagnostic| diagnostic.code == "limit-above-maximum")
    );
}

#[test]
fn g27_the_reach_panel_shows_only_non_default_limits() {
    let workflow = parse_workflow("limited.yaml", LIMITED).unwrap();
    let rows = reach(&workflow, &|_| None);
    assert_eq!(
        rows[0].limits,
        vec![
            ("memory_mib".to_owned(), 1024),
            ("timeout_s".to_owned(), 120)
        ]
    );
    let table = render_reach_table(&rows);
    assert!(table.contains("LIMITS"), "{table}");
    assert!(
        table.contains("memory_mib: 1024, timeout_s: 120"),
        "{table}"
    );
    // A workflow without declared limits shows no limits column at all.
    let plain = parse_workflow(
        "plain.yaml",
        "name: plain\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: One.\n    code: |\n      def main():\n          return 1\n",
    )
    .unwrap();
    let rows = reach(&plain, &|_| None);
    assert!(rows[0].limits.is_empty());
    assert!(!render_reach_table(&rows).contains("LIMITS"));
}

/// agents review, finding 10: `check` accepted a custom tool whose script is `shared/t.py` or
/// `library/...`, which the run then refused (a view's `shared/` and `library/` are the
/// workspace's, not the agent's folder). The parser refuses both, where the script is named.
#[test]
fn g22_a_custom_tools_script_is_in_the_agents_own_folder() {
    for script in ["shared/t.py", "library/t.py", "Shared/t.py", "shared"] {
        let text = format!(
            "---\nname: z\ndescription: Z.\nmodel: fm/m\ntools: [t]\ncustom_tools:\n  t:\n    explain: T.\n    script: {script}\n---\nZ.\n"
        );
        let diagnostics = parse_agent("AGENT.md", &text).unwrap_err();
        let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        assert!(
            shown
                .iter()
                .any(|line| line.contains("AGENT.md:9:13") && line.contains("folder")),
            "{script}: {shown:#?}"
        );
    }
}
