//! Colleagues (G21, G27): the closure of an agent under `colleagues:` (what a step can reach
//! through `Consult`), its problems (a cycle, a chain too deep, a colleague that cannot be
//! used), and an agent step's `output: json`.

use spec::{ColleagueProblem, Network, OutputKind, colleague_closure, parse_agent, parse_workflow};

fn agent(name: &str, front: &str) -> spec::Agent {
    let text = format!("---\nname: {name}\ndescription: An agent.\n{front}---\nYou work.\n");
    parse_agent(&format!("agents/{name}/AGENT.md"), &text).unwrap()
}

fn lookup(agents: Vec<spec::Agent>) -> impl Fn(&str) -> Result<spec::Agent, String> {
    move |name| {
        agents
            .iter()
            .find(|agent| agent.name() == name)
            .cloned()
            .ok_or_else(|| format!("agents/{name}/AGENT.md is missing"))
    }
}

#[test]
fn g21_an_agent_holds_whatever_any_colleague_it_can_consult_holds() {
    let lead = agent("lead", "tools: [Read]\ncolleagues: [checker]\n");
    let others = vec![
        agent(
            "checker",
            "tools: [Read]\ncolleagues: [filer]\nsecrets: [CHECK_KEY]\n",
        ),
        agent(
            "filer",
            "tools: [file]\nnetwork: public_egress\nsecrets: [TRACKER_TOKEN]\ncustom_tools:\n  \
             file:\n    explain: Files.\n    script: tools/file.py\n",
        ),
    ];
    let closure = colleague_closure(&lead, &lookup(others));
    assert!(closure.problems.is_empty(), "{:?}", closure.problems);
    let names: Vec<&str> = closure.agents.iter().map(|agent| agent.name()).collect();
    assert_eq!(names, ["lead", "checker", "filer"]);
    assert_eq!(closure.network(), Network::PublicEgress);
    assert_eq!(closure.applying_tools(), ["filer: file"]);
    assert_eq!(
        closure.secrets(),
        [
            ("CHECK_KEY".to_owned(), "checker".to_owned()),
            ("TRACKER_TOKEN".to_owned(), "filer".to_owned())
        ]
    );
}

#[test]
fn g21_a_cycle_a_chain_deeper_than_three_and_a_missing_colleague_are_problems() {
    let a = agent("a", "colleagues: [b]\n");
    let cycle = colleague_closure(&a, &lookup(vec![agent("b", "colleagues: [a]\n")]));
    assert_eq!(
        cycle.problems,
        [ColleagueProblem::Cycle {
            path: vec!["a".into(), "b".into(), "a".into()]
        }]
    );
    assert_eq!(
        cycle.problems[0].to_string(),
        "the colleagues form a cycle: a → b → a"
    );
    let chain = vec![
        agent("b", "colleagues: [c]\n"),
        agent("c", "colleagues: [d]\n"),
        agent("d", "colleagues: [e]\n"),
        agent("e", ""),
    ];
    let deep = colleague_closure(&a, &lookup(chain));
    assert!(
        matches!(&deep.problems[..], [ColleagueProblem::TooDeep { path }] if path.len() == 5),
        "{:?}",
        deep.problems
    );
    let missing = colleague_closure(&a, &lookup(Vec::new()));
    assert!(
        matches!(&missing.problems[..], [ColleagueProblem::Unavailable { by, name, .. }] if by == "a" && name == "b"),
        "{:?}",
        missing.problems
    );
}

#[test]
fn g21_consult_is_not_a_name_a_custom_tool_may_take() {
    let text = "---\nname: a\ndescription: b\ntools: [Consult]\ncustom_tools:\n  Consult:\n    \
                explain: x\n    script: t.py\n---\nc\n";
    let codes: Vec<&str> = parse_agent("AGENT.md", text)
        .unwrap_err()
        .iter()
        .map(|d| d.code)
        .collect();
    assert!(codes.contains(&"custom-tool-shadows-built-in"), "{codes:?}");
}

const AGENT_STEP: &str =
    "name: w\npython: \"3.11\"\nsteps:\n  - id: triage\n    agent: triage\n    task: Sort.\n";

#[test]
fn an_agent_step_may_declare_output_json_and_nothing_else() {
    let plain = parse_workflow("w.yaml", AGENT_STEP).unwrap();
    assert_eq!(plain.steps()[0].output(), OutputKind::Text);
    let json = parse_workflow("w.yaml", &format!("{AGENT_STEP}    output: json\n")).unwrap();
    assert_eq!(json.steps()[0].output(), OutputKind::Json);
    let wrong = parse_workflow("w.yaml", &format!("{AGENT_STEP}    output: yaml\n")).unwrap_err();
    assert_eq!(wrong[0].code, "invalid-output");
    assert_eq!((wrong[0].line, wrong[0].column), (7, 13));
    let code = "name: w\npython: \"3.11\"\nsteps:\n  - id: s\n    explain: x\n    output: json\n    code: |\n      def main():\n          return 1\n";
    let on_code = parse_workflow("w.yaml", code).unwrap_err();
    assert_eq!(on_code[0].code, "output-on-code-step");
    assert_eq!((on_code[0].line, on_code[0].column), (6, 5));
}

#[test]
fn g27_an_agent_steps_row_is_the_union_over_its_colleagues_with_each_secret_holder_and_model() {
    let lead = agent(
        "lead",
        "model: claude/sonnet\ntools: [Read]\ncolleagues: [checker]\nsecrets: [LEAD_KEY]\n",
    );
    let checker = agent(
        "checker",
        "model: small-model\ntools: [Run]\nnetwork: public_egress\nsecrets: [CHECK_KEY]\n",
    );
    let workflow = parse_workflow(
        "w.yaml",
        "name: w\npython: \"3.11\"\nsteps:\n  - id: ask!\n    agent: lead\n    task: Ask.\n",
    )
    .unwrap();
    let agents = [lead, checker];
    let lookup = |name: &str| agents.iter().find(|agent| agent.name() == name).cloned();
    let mut rows = spec::reach(&workflow, &lookup);
    let row = &rows[0];
    assert_eq!(
        row.internet,
        spec::ReachInternet::Yes,
        "the colleague's network"
    );
    assert_eq!(row.secrets, ["LEAD_KEY", "CHECK_KEY"]);
    assert_eq!(row.colleagues, ["checker"]);
    assert_eq!(
        spec::secrets_cell(row),
        "LEAD_KEY (lead), CHECK_KEY (checker)"
    );
    spec::fill_model_hosts(&mut rows, &|provider| match provider {
        Some("claude") => Some(("claude".into(), "api.anthropic.com".into())),
        None => Some(("local".into(), "127.0.0.1:8081".into())),
        Some(_) => None,
    });
    assert_eq!(
        spec::model_cell(&rows[0].models),
        "claude/sonnet at api.anthropic.com (lead), local/small-model at 127.0.0.1:8081 (checker)"
    );
    let table = spec::render_reach_table(&rows);
    assert!(table.contains("COLLEAGUES  MODEL"), "{table}");
    assert!(table.contains("CHECK_KEY (checker)"), "{table}");
    // A colleague that cannot be read makes the row unknown, never "no".
    let only_lead = |name: &str| {
        agents
            .iter()
            .find(|a| a.name() == name && name == "lead")
            .cloned()
    };
    let rows = spec::reach(&workflow, &only_lead);
    assert!(
        matches!(&rows[0].internet, spec::ReachInternet::Unknown { reason } if reason.contains("checker")),
        "{:?}",
        rows[0].internet
    );
}
