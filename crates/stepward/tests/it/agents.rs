//! Agent steps end to end (issue 16), against the fake model in both wire formats: the binary
//! runs the loop, the file tools in their helper, the custom tool in the sandbox, and the
//! record says what happened. Needs root (the local sandbox, the helper's user change).

use fake_model::{BlockingFakeModel, Format, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{Home, run_id, stderr, stdout};
use test_support::bytes::contains;

pub const MODEL_KEY: &str = "sk-agent-test-model-key-0123456789";
pub const TOKEN: &str = "rel-token-3f9a1c77e2b04d6d9a51";

const AGENT: &str = r#"---
name: digest
description: Writes a short digest of the week's notes.
model: fake/fake-large
tools: [Read, Grep, Glob, Write, release_notes]
secrets: [RELEASES_API_TOKEN]
custom_tools:
  release_notes:
    explain: Fetches the titles of the releases between two dates, as a JSON list.
    script: tools/release_notes.py
    arguments: { start: string, end: string, limit?: integer }
---
You write the weekly digest.
"#;

/// The tool prints its secret raw and in every encoding, and returns it too: none of it may
/// reach the model.
const TOOL: &str = r#"import base64, os

def main(start, end, limit=10):
    token = os.environ["RELEASES_API_TOKEN"]
    print("token", token, base64.b64encode(token.encode()).decode(), token.encode().hex())
    return {"releases": ["v1.2 shipped " + start], "echo": token,
            "b64": base64.b64encode(token.encode()).decode(), "hex": token.encode().hex(),
            "env": sorted(os.environ)}
"#;

const WORKFLOW: &str = r#"name: digest_week
python: "3.11"
steps:
  - id: write_digest
    agent: digest
    task: Write the digest of the week's notes.
    inputs:
      period: { start: "2026-11-23", end: "2026-11-29" }
"#;

fn script() -> Script {
    Script::new(vec![
        ScriptTurn::call("Glob", json!({"pattern": "shared/notes/*.md"})).with_usage(100, 10),
        // An invented absolute path outside the tree: refused, with the probable path named.
        ScriptTurn::call("Read", json!({"path": "/tmp/notes/week.md"})).with_usage(110, 10),
        ScriptTurn::call("Read", json!({"path": "shared/notes/week.md"})).with_usage(120, 10),
        // A tool the file does not name, and a call with arguments that do not fit.
        ScriptTurn::call("Bash", json!({"command": "cat /etc/passwd"}))
            .with_call("Read", json!({"file": "shared/notes/week.md"}))
            .with_usage(130, 10),
        ScriptTurn::call(
            "release_notes",
            json!({"start": "2026-11-23", "end": "2026-11-29"}),
        )
        .with_usage(140, 10),
        // Its own agent file, a tool's script, and the library: refused; a note: written.
        ScriptTurn::call(
            "Write",
            json!({"path": "AGENT.md", "content": "---\nname: x\n"}),
        )
        .with_call(
            "Write",
            json!({"path": "tools/release_notes.py", "content": "def main(**a):\n  return 1\n"}),
        )
        .with_call(
            "Write",
            json!({"path": "drafts/digest.md", "content": "- v1.2 shipped\n"}),
        )
        .with_usage(150, 10),
        ScriptTurn::text(
            "- v1.2 shipped (release_notes)\n- week notes read (shared/notes/week.md)",
        )
        .with_usage(160, 20),
    ])
}

pub fn put(home: &Home, path: &str, contents: &str) {
    let file = home.dir.path().join("upload");
    std::fs::write(&file, contents).unwrap();
    let put = home.stepward(&["files", "put", path, "--from", file.to_str().unwrap()]);
    assert!(put.status.success(), "{}", stderr(&put));
}

fn setup(format: Format) -> (Home, BlockingFakeModel, String) {
    let (home, fake, exempt) = with_model(format, script());
    put(&home, "agents/digest/AGENT.md", AGENT);
    put(&home, "agents/digest/tools/release_notes.py", TOOL);
    put(
        &home,
        "shared/notes/week.md",
        "Monday: v1.2 shipped.\nTuesday: retro.\n",
    );
    (home, fake, exempt)
}

/// A home whose account has the fake as its model provider `fake` and the secret
/// `RELEASES_API_TOKEN`.
pub fn with_model(format: Format, script: Script) -> (Home, BlockingFakeModel, String) {
    let fake = BlockingFakeModel::start(script).unwrap();
    let home = Home::new();
    let exempt = fake.endpoint();
    let (provider, url) = match format {
        Format::Anthropic => ("anthropic", fake.url()),
        Format::OpenAi => ("openai", fake.openai_base_url()),
    };
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            provider,
            "--base-url",
            &url,
            "--allow-model-endpoint",
            &exempt,
        ],
        MODEL_KEY,
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let set = home.stepward_with_stdin(&["secrets", "set", "RELEASES_API_TOKEN"], TOKEN);
    assert!(set.status.success(), "{}", stderr(&set));
    put(&home, "agents/digest/AGENT.md", AGENT);
    put(&home, "agents/digest/tools/release_notes.py", TOOL);
    put(
        &home,
        "shared/notes/week.md",
        "Monday: v1.2 shipped.\nTuesday: retro.\n",
    );
    (home, fake, exempt)
}

fn run(home: &Home, exempt: &str) -> std::process::Output {
    run_workflow(home, exempt, WORKFLOW)
}

pub fn run_workflow(home: &Home, exempt: &str, text: &str) -> std::process::Output {
    run_workflow_with(home, exempt, text, &[])
}

/// [`run_workflow`] with more flags (`--backend unisolated` for a networked agent: the test
/// machine has no egress network configured).
pub fn run_workflow_with(
    home: &Home,
    exempt: &str,
    text: &str,
    flags: &[&str],
) -> std::process::Output {
    let workflow = home.dir.path().join("workflow.yaml");
    std::fs::write(&workflow, text).unwrap();
    let mut args = vec![
        "run",
        workflow.to_str().unwrap(),
        "--json",
        "--allow-model-endpoint",
        exempt,
    ];
    args.extend_from_slice(flags);
    home.stepward(&args)
}

fn tool_names(request: &Value, format: Format) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|tool| match format {
            Format::Anthropic => tool["name"].as_str().unwrap_or("").to_owned(),
            Format::OpenAi => tool["function"]["name"].as_str().unwrap_or("").to_owned(),
        })
        .collect()
}

fn full_agent_step(format: Format) {
    let (home, fake, exempt) = setup(format);
    let ran = run(&home, &exempt);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    assert!(
        stdout(&ran).contains("v1.2 shipped (release_notes)"),
        "{}",
        stdout(&ran)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 7, "one request per turn");
    // G21: exactly the tools the file names, in every request.
    for request in &requests {
        assert_eq!(
            tool_names(&request.json(), format),
            ["Read", "Grep", "Glob", "Write", "release_notes"]
        );
    }
    let everything: String = requests.iter().map(|r| r.as_text()).collect();
    // The refusal names the probable path; the unknown tool and the bad call are refused.
    assert!(
        everything.contains("did you mean `shared/notes/week.md`?"),
        "{everything}"
    );
    assert!(
        everything.contains("there is no tool `Bash`"),
        "{everything}"
    );
    assert!(
        everything.contains("`file` is not an argument of Read"),
        "{everything}"
    );
    assert!(
        everything.contains("Monday: v1.2 shipped."),
        "the Read result reached the model"
    );
    // G19: the tool's secret reached the model in no form (raw, base64, hex).
    let encoded = [
        TOKEN.to_owned(),
        base64_of(TOKEN),
        TOKEN
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>(),
    ];
    for form in &encoded {
        assert!(!everything.contains(form.as_str()), "the model saw {form}");
    }
    assert!(
        everything.contains("v1.2 shipped 2026-11-23"),
        "the tool's value reached the model"
    );
    assert!(
        everything.contains("RELEASES_API_TOKEN"),
        "the tool saw its variable by name"
    );
    // The protected writes were refused, the note was written back to the agent's folder.
    assert!(everything.contains("it is an agent file"), "{everything}");
    assert!(
        everything.contains("script an agent file names"),
        "{everything}"
    );
    let listed = home.stepward(&["files", "list"]);
    assert!(
        stdout(&listed).contains("agents/digest/drafts/digest.md"),
        "{}",
        stdout(&listed)
    );
    let folder = home
        .data_dir()
        .join("accounts/local/workspace/agents/digest");
    assert_eq!(
        std::fs::read_to_string(folder.join("AGENT.md")).unwrap(),
        AGENT
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("tools/release_notes.py")).unwrap(),
        TOOL
    );
    // G25: every call and refusal is an event of the run; the record holds no secret.
    let run = run_id(&ran);
    let events = stdout(&home.stepward(&["runs", "events", &run]));
    if std::env::var_os("SHOW_AGENT_EVENTS").is_some() {
        eprintln!("{events}");
    }
    for kind in ["tool.called", "tool.finished", "tool.refused", "agent.turn"] {
        assert!(events.contains(kind), "no {kind} in {events}");
    }
    let data = home.data_bytes();
    for form in &encoded {
        assert!(!contains(&data, form), "the data directory holds {form}");
    }
    assert!(
        !contains(&data, MODEL_KEY),
        "the data directory holds the model key"
    );
}

pub fn base64_of(text: &str) -> String {
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * index)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn g21_g22_g19_a_full_agent_step_anthropic_wire_needs_root() {
    full_agent_step(Format::Anthropic);
}

#[test]
fn g21_g22_g19_a_full_agent_step_openai_wire_needs_root() {
    full_agent_step(Format::OpenAi);
}
