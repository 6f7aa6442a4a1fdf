//! Colleagues end to end (issue 16 §4, G19, G21): a consult runs the colleague with its own
//! tools and secrets (never the caller's, and the caller never holds the colleague's), an
//! applying colleague makes its caller applying (`apply-before-gate`), a cycle is refused
//! before the model is asked, and `output: json` parses the answer or fails the step in words.
//! Needs root (the local sandbox, the helper's user change).

use fake_model::{Format, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::agents::{MODEL_KEY, TOKEN, put, run_workflow, with_model};
use crate::support::{Home, run_id, stderr, stdout};
use test_support::bytes::contains;

const COLLEAGUE_TOKEN: &str = "chk-colleague-token-91d2e7a4b3";

const LEAD: &str = r#"---
name: digest
description: Writes a short digest, asking a checker.
model: fake/fake-large
tools: [Read, release_notes]
secrets: [RELEASES_API_TOKEN]
colleagues: [checker]
custom_tools:
  release_notes:
    explain: Lists the names in its environment.
    script: tools/release_notes.py
---
You write the weekly digest.
"#;

const ENV_NAMES: &str =
    "import os\n\ndef main(**arguments):\n    return {\"env\": sorted(os.environ)}\n";

const CHECKER: &str = r#"---
name: checker
description: Checks facts with its own tool.
model: fake/fake-small
tools: [probe]
secrets: [CHECKER_TOKEN]
custom_tools:
  probe:
    explain: Lists the names in its environment and returns its token.
    script: tools/probe.py
---
You check facts.
"#;

const PROBE: &str = "import os\n\ndef main(**arguments):\n    return {\"env\": sorted(os.environ), \"token\": os.environ.get(\"CHECKER_TOKEN\", \"\")}\n";

const WORKFLOW: &str = "name: digest_week\npython: \"3.11\"\nsteps:\n  - id: write_digest\n    agent: digest\n    task: Write the digest.\n";

fn home_with(
    format: Format,
    turns: Vec<ScriptTurn>,
) -> (Home, fake_model::BlockingFakeModel, String) {
    let (home, fake, exempt) = with_model(format, Script::new(turns));
    let set = home.stepward_with_stdin(&["secrets", "set", "CHECKER_TOKEN"], COLLEAGUE_TOKEN);
    assert!(set.status.success(), "{}", stderr(&set));
    put(&home, "agents/digest/AGENT.md", LEAD);
    put(&home, "agents/digest/tools/release_notes.py", ENV_NAMES);
    put(&home, "agents/checker/AGENT.md", CHECKER);
    put(&home, "agents/checker/tools/probe.py", PROBE);
    (home, fake, exempt)
}

/// The result the model was sent for the call with `id`, in either wire format.
fn result_of(requests: &[fake_model::RecordedRequest], needle: &str) -> String {
    requests
        .iter()
        .map(|request| request.as_text())
        .find(|text| text.contains(needle))
        .unwrap_or_default()
}

fn a_colleague_works_with_its_own_secrets(format: Format) {
    let (home, fake, exempt) = home_with(
        format,
        vec![
            ScriptTurn::call(
                "Consult",
                json!({"colleague": "checker", "task": "Probe your environment."}),
            ),
            // The colleague's own turns.
            ScriptTurn::call("probe", json!({})),
            ScriptTurn::text("probed"),
            // The lead: its own tool; the colleague's tool does not exist for it.
            ScriptTurn::call("release_notes", json!({})).with_call("probe", json!({})),
            ScriptTurn::text("digest written"),
        ],
    );
    let ran = run_workflow(&home, &exempt, WORKFLOW);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 5, "{format:?}");
    // The colleague's call of its own tool: its secret by name, not the caller's; the value
    // scrubbed before the model saw it.
    let colleague = requests[2].as_text();
    assert!(colleague.contains("CHECKER_TOKEN"), "{colleague}");
    assert!(!colleague.contains("RELEASES_API_TOKEN"), "{colleague}");
    assert!(colleague.contains("[REDACTED]"), "{colleague}");
    // The lead's own tool: its own secret, never the colleague's; the colleague's tool refused.
    let lead = requests[4].as_text();
    assert!(lead.contains("RELEASES_API_TOKEN"), "{lead}");
    assert!(!lead.contains("CHECKER_TOKEN"), "{lead}");
    assert!(
        lead.contains("there is no tool `probe` for this agent"),
        "{lead}"
    );
    assert!(result_of(&requests, "probed").contains("probed"));
    // The bodies: the model key is in each request's auth header, where it belongs.
    let everything: String = requests.iter().map(|r| r.json().to_string()).collect();
    for value in [TOKEN, COLLEAGUE_TOKEN, MODEL_KEY] {
        assert!(!everything.contains(value), "the model saw {value}");
    }
    // G25: the consult and the colleague's call under it are events of the step.
    let events = stdout(&home.stepward(&["runs", "events", &run_id(&ran), "--json"]));
    assert!(events.contains("\"tool\": \"Consult\""), "{events}");
    assert!(events.contains("/checker/"), "{events}");
    let data = home.data_bytes();
    assert!(
        !contains(&data, COLLEAGUE_TOKEN),
        "the data directory holds the colleague's token"
    );
}

#[test]
fn g19_g21_a_colleague_works_with_its_own_tools_and_secrets_anthropic_wire_needs_root() {
    a_colleague_works_with_its_own_secrets(Format::Anthropic);
}

#[test]
fn g19_g21_a_colleague_works_with_its_own_tools_and_secrets_openai_wire_needs_root() {
    a_colleague_works_with_its_own_secrets(Format::OpenAi);
}

const FILER: &str = r#"---
name: checker
description: Files tickets.
model: fake/fake-small
tools: [probe]
network: public_egress
custom_tools:
  probe:
    explain: Files a ticket.
    script: tools/probe.py
---
You file.
"#;

#[test]
fn g21_an_agent_whose_colleague_applies_is_refused_outside_a_gate_needs_root() {
    let (home, fake, exempt) = home_with(Format::Anthropic, vec![ScriptTurn::text("never")]);
    put(&home, "agents/checker/AGENT.md", FILER);
    let ran = run_workflow(&home, &exempt, WORKFLOW);
    let shown = format!("{}{}", stdout(&ran), stderr(&ran));
    assert!(shown.contains("apply-before-gate"), "{shown}");
    assert!(shown.contains("checker: probe"), "{shown}");
    assert!(fake.requests().is_empty(), "the model was asked");
    assert!(!ran.status.success());
}

/// A gate step whose agent consults a `public_egress` colleague needs the egress network (G21:
/// it holds what the colleague holds). On a server without one it is refused when the run
/// starts, before it waits at its gate for a person whose approval could only end in a
/// refusal, and no run is created.
#[test]
fn g21_an_agent_step_whose_colleague_needs_egress_is_refused_at_start_without_one_needs_root() {
    let (home, fake, exempt) = home_with(Format::Anthropic, vec![ScriptTurn::text("never")]);
    put(&home, "agents/checker/AGENT.md", FILER);
    let gated = WORKFLOW.replace("id: write_digest\n", "id: write_digest!\n");
    let ran = run_workflow(&home, &exempt, &gated);
    let said = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{}{said}", stdout(&ran));
    assert!(
        said.contains("no run was started")
            && said.contains("write_digest")
            && said.contains("checker")
            && said.contains("public_egress")
            && said.contains("--egress-resolver IP"),
        "{said}"
    );
    assert!(
        !stdout(&ran).contains("waiting_approval"),
        "{}",
        stdout(&ran)
    );
    let listed = stdout(&home.stepward(&["runs", "list", "--json"]));
    assert_eq!(
        serde_json::from_str::<Value>(&listed).unwrap(),
        json!([]),
        "a refused run is never created"
    );
    assert!(fake.requests().is_empty(), "the model was asked");
}

/// Only scripts need the network an agent declares: an agent with file tools alone runs on a
/// server without an egress network, `network: public_egress` or not.
#[test]
fn an_agent_without_scripts_runs_on_a_server_without_egress_needs_root() {
    let (home, fake, exempt) = home_with(Format::Anthropic, vec![ScriptTurn::text("read it")]);
    put(
        &home,
        "agents/reader/AGENT.md",
        "---\nname: reader\ndescription: Reads.\nmodel: fake/fake-small\ntools: [Read]\nnetwork: public_egress\n---\nYou read.\n",
    );
    let workflow = "name: read_it\npython: \"3.11\"\nsteps:\n  - id: read_it\n    agent: reader\n    task: Read it.\n";
    let ran = run_workflow(&home, &exempt, workflow);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    assert_eq!(fake.requests().len(), 1, "the model was asked once");
}

#[test]
fn g21_a_cycle_of_colleagues_is_refused_before_the_model_is_asked_needs_root() {
    let (home, fake, exempt) = home_with(Format::Anthropic, vec![ScriptTurn::text("never")]);
    put(
        &home,
        "agents/checker/AGENT.md",
        &CHECKER.replace("tools: [probe]\n", "tools: [probe]\ncolleagues: [digest]\n"),
    );
    let ran = run_workflow(&home, &exempt, WORKFLOW);
    let shown = format!("{}{}", stdout(&ran), stderr(&ran));
    assert!(
        shown.contains("cycle: digest → checker → digest"),
        "{shown}"
    );
    assert!(fake.requests().is_empty(), "the model was asked");
}

const JSON_WORKFLOW: &str = "name: label\npython: \"3.11\"\nsteps:\n  - id: label\n    agent: checker\n    task: Label it.\n    output: json\n";

#[test]
fn output_json_parses_the_answer_and_an_answer_that_is_not_json_fails_in_words_needs_root() {
    let (home, _fake, exempt) = home_with(
        Format::OpenAi,
        vec![ScriptTurn::text(
            "{\"label\": \"bug\", \"confidence\": 0.9}",
        )],
    );
    let ran = run_workflow(&home, &exempt, JSON_WORKFLOW);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let report: Value = serde_json::from_str(&stdout(&ran)).unwrap();
    let shown = report.to_string();
    assert!(
        shown.contains("\"label\":\"bug\""),
        "the output is an object: {shown}"
    );
    let (home, _fake, exempt) =
        home_with(Format::OpenAi, vec![ScriptTurn::text("The label is: bug")]);
    let ran = run_workflow(&home, &exempt, JSON_WORKFLOW);
    let shown = format!("{}{}", stdout(&ran), stderr(&ran));
    assert!(!ran.status.success(), "{shown}");
    assert!(shown.contains("OutputNotJson"), "{shown}");
    assert!(shown.contains("not JSON"), "{shown}");
    assert!(shown.contains("The label is: bug"), "{shown}");
    assert!(
        shown.contains("\"failed\""),
        "an offline agent's bad answer is failed: {shown}"
    );
}

const NOTER: &str = r#"---
name: checker
description: Keeps notes.
model: fake/fake-small
tools: [Read, Write]
---
You keep notes.
"#;

/// agents review, finding 6: each `Consult` staged a full copy of the colleague's folder,
/// `shared/` and `library/` and kept it to the step's end (20 consults of a 5 MB `shared/`:
/// 101 MB). A colleague has one view for the whole step: what it wrote in one consult is in
/// its tree at the next.
#[test]
fn g22_a_colleague_keeps_one_view_for_the_whole_step_needs_root() {
    let consult =
        |task: &str| ScriptTurn::call("Consult", json!({"colleague": "checker", "task": task}));
    let (home, fake, exempt) = home_with(
        Format::Anthropic,
        vec![
            consult("Write a note."),
            ScriptTurn::call(
                "Write",
                json!({"path": "notes/n.md", "content": "from the first consult"}),
            ),
            ScriptTurn::text("noted"),
            consult("Read your note."),
            ScriptTurn::call("Read", json!({"path": "notes/n.md"})),
            ScriptTurn::text("read it"),
            ScriptTurn::text("digest written"),
        ],
    );
    put(&home, "agents/checker/AGENT.md", NOTER);
    let ran = run_workflow(&home, &exempt, WORKFLOW);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let requests = fake.requests();
    let after_read = requests[5].as_text();
    assert!(
        after_read.contains("from the first consult"),
        "the second consult did not see its own tree: {after_read}"
    );
}
