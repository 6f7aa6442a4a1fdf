//! A run pins its definitions when it starts (issue 16 §1): the agent file and the script an
//! agent step runs are the bytes of the run's start, also after a gate, whatever a person
//! changed in the workspace meanwhile. And `stepward run FILE` with a file outside the
//! workspace takes its agents from the workspace.

use fake_model::{Format, Script, ScriptTurn};
use serde_json::json;

use crate::agents::{put, run_workflow, with_model};
use crate::support::{run_id, stderr, stdout};

const AGENT: &str = r#"---
name: digest
description: Writes a short digest of the week's notes.
model: fake/fake-large
tools: [Read, release_notes]
custom_tools:
  release_notes:
    explain: Fetches the titles of the releases between two dates, as a JSON list.
    script: tools/release_notes.py
    arguments: { start: string, end: string }
---
The pinned prompt: you write the weekly digest.
"#;

const TOOL: &str = r#"def main(start, end):
    return {"releases": ["pinned script " + start]}
"#;

const WORKFLOW: &str = r#"name: pinned_digest
python: "3.11"
steps:
  - id: write!
    agent: digest
    task: Write the digest of the week's notes.
"#;

#[test]
fn g1_workflow_agent_file_and_script_edited_after_run_start_keep_the_pinned_bytes_after_a_gate_needs_root()
 {
    let script = Script::new(vec![
        ScriptTurn::call(
            "release_notes",
            json!({"start": "2026-11-23", "end": "2026-11-29"}),
        ),
        ScriptTurn::text("digest written"),
    ]);
    let (home, fake, exempt) = with_model(Format::Anthropic, script);
    put(&home, "agents/digest/AGENT.md", AGENT);
    put(&home, "agents/digest/tools/release_notes.py", TOOL);
    // The workflow file is outside the workspace: its agent comes from the workspace.
    let parked = run_workflow(&home, &exempt, WORKFLOW);
    assert!(
        stdout(&parked).contains("waiting_approval"),
        "{}{}",
        stdout(&parked),
        stderr(&parked)
    );
    let run = run_id(&parked);
    // While the run waits at its gate, a person edits the agent file and the script.
    put(
        &home,
        "agents/digest/AGENT.md",
        &AGENT.replace("The pinned prompt", "An EDITED prompt"),
    );
    put(
        &home,
        "agents/digest/tools/release_notes.py",
        &TOOL.replace("pinned script", "EDITED script"),
    );
    let approved = home.stepward(&[
        "approve",
        &run,
        "write!",
        "--note",
        "read it",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{}", stdout(&approved));
    let everything: String = requests.iter().map(|request| request.as_text()).collect();
    assert!(everything.contains("The pinned prompt"), "{everything}");
    assert!(
        everything.contains("pinned script 2026-11-23"),
        "{everything}"
    );
    assert!(!everything.contains("EDITED"), "{everything}");
    // The record says what was pinned.
    let events = home.stepward(&["runs", "events", &run]);
    assert!(
        stdout(&events).contains("definitions.pinned"),
        "{}",
        stdout(&events)
    );
    // The workspace keeps the person's edit: the run wrote nothing back over it.
    let folder = home
        .data_dir()
        .join("accounts/local/workspace/agents/digest");
    assert!(
        std::fs::read_to_string(folder.join("AGENT.md"))
            .unwrap()
            .contains("An EDITED prompt")
    );
}
