//! The model provider is pinned with the run (agents review, finding 7): its kind, base URL and
//! model id, never its key. A gated agent step approved after the account changed its provider
//! refuses to talk to the new endpoint, and a person decides; a provider removed while the run
//! waited refuses too; a key rotated while it waited is used (G18). Needs root (the sandbox).

use fake_model::{BlockingFakeModel, Format, Script, ScriptTurn};

use crate::agents::{MODEL_KEY, put, run_workflow, with_model};
use crate::support::{Home, run_id, stderr, stdout};

const NOTER: &str = r#"---
name: noter
description: Answers.
model: fake/fake-large
tools: [Read]
---
You answer.
"#;

const GATED: &str =
    "name: gated\npython: \"3.11\"\nsteps:\n  - id: apply!\n    agent: noter\n    task: Answer.\n";

fn parked() -> (Home, BlockingFakeModel, String, String) {
    let (home, fake, exempt) = with_model(
        Format::Anthropic,
        Script::new(vec![ScriptTurn::text("answered")]),
    );
    put(&home, "agents/noter/AGENT.md", NOTER);
    let ran = run_workflow(&home, &exempt, GATED);
    assert!(
        stdout(&ran).contains("waiting_approval"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = run_id(&ran);
    (home, fake, exempt, run)
}

fn approve(home: &Home, run: &str, exempts: &[&str]) -> std::process::Output {
    let mut args = vec!["approve", run, "apply", "--note", "go"];
    for exempt in exempts {
        args.extend(["--allow-model-endpoint", exempt]);
    }
    home.stepward(&args)
}

#[test]
fn g27_a_provider_changed_while_the_run_waited_is_refused_and_the_new_endpoint_gets_nothing_needs_root()
 {
    let (home, first, first_exempt, run) = parked();
    let second =
        BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("the other endpoint")]))
            .unwrap();
    let moved = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            "anthropic",
            "--base-url",
            &second.url(),
            "--allow-model-endpoint",
            &second.endpoint(),
        ],
        MODEL_KEY,
    );
    assert!(moved.status.success(), "{}", stderr(&moved));
    let approved = approve(&home, &run, &[&first_exempt, &second.endpoint()]);
    let shown = format!("{}{}", stdout(&approved), stderr(&approved));
    assert!(shown.contains("refused"), "{shown}");
    assert!(
        shown.contains(&first.url()) || shown.contains("changed"),
        "{shown}"
    );
    assert_eq!(
        second.requests().len(),
        0,
        "the approved run talked to the new endpoint"
    );
    assert_eq!(first.requests().len(), 0);
}

#[test]
fn g27_a_provider_removed_while_the_run_waited_is_refused_needs_root() {
    let (home, fake, exempt, run) = parked();
    let removed = home.stepward(&["models", "rm", "fake"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    let approved = approve(&home, &run, &[&exempt]);
    let shown = format!("{}{}", stdout(&approved), stderr(&approved));
    assert!(
        shown.contains("refused") && shown.contains("removed"),
        "{shown}"
    );
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn g18_a_model_key_rotated_while_the_run_waited_is_used_needs_root() {
    let (home, fake, exempt, run) = parked();
    let rotated_key = "sk-agent-test-rotated-key-9876543210";
    let rotated = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.url(),
            "--allow-model-endpoint",
            &exempt,
        ],
        rotated_key,
    );
    assert!(rotated.status.success(), "{}", stderr(&rotated));
    let approved = approve(&home, &run, &[&exempt]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some(rotated_key));
}
