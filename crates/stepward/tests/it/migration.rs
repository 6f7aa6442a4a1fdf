//! Issue 35, done when: every stored-format change of this round (migration 0014's interviews
//! table, journal versions 3 and 4, the loop maxima) is read from a data directory written by
//! stepward before it (`main` at e284454; `tests/fixtures/make-data-before-round-3` makes it
//! and says how). It holds a run killed mid-step, a run parked at its gate and an agent file
//! above the new maxima: each reads, resumes or is refused with its reason, and nothing
//! panics.

use serde_json::Value;

use crate::support::{Home, stderr, stdout};

fn fixture_home() -> Home {
    let home = Home::new();
    let tarball = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/data-before-round-3.tar.gz");
    let unpacked = std::process::Command::new("tar")
        .arg("-C")
        .arg(home.dir.path())
        .arg("-xzf")
        .arg(&tarball)
        .status()
        .expect("tar runs");
    assert!(unpacked.success(), "the fixture unpacks");
    home
}

fn no_panic(output: &std::process::Output, what: &str) {
    let said = format!("{}{}", stdout(output), stderr(output));
    assert!(!said.contains("panicked"), "{what}: {said}");
}

fn runs(home: &Home) -> Vec<Value> {
    let listed = home.stepward(&["runs", "list", "--json"]);
    no_panic(&listed, "runs list");
    assert!(listed.status.success(), "{}", stderr(&listed));
    serde_json::from_str::<Value>(&stdout(&listed))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn run_of(runs: &[Value], workflow: &str) -> String {
    runs.iter()
        .find(|run| run["workflow"] == workflow)
        .unwrap_or_else(|| panic!("no run of {workflow}: {runs:?}"))["run"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn g25_a_data_directory_from_before_this_round_reads_resumes_and_refuses_with_reasons_needs_root() {
    let home = fixture_home();
    let before = runs(&home);
    assert_eq!(before.len(), 2, "{before:?}");
    let parked = run_of(&before, "gated");
    let interrupted = run_of(&before, "slow");
    for run in [&parked, &interrupted] {
        let shown = home.stepward(&["runs", "show", run]);
        no_panic(&shown, "runs show");
        assert!(shown.status.success(), "{}", stderr(&shown));
        let events = home.stepward(&["runs", "events", run, "--json"]);
        no_panic(&events, "runs events");
        let events: Value = serde_json::from_str(&stdout(&events)).unwrap();
        assert!(
            events
                .as_array()
                .unwrap()
                .iter()
                .all(|event| event["version"].as_u64() == Some(1)),
            "events written before this round are version 1: {events}"
        );
    }

    // The parked run resumes with a person's decision; the interrupted offline step is run
    // again from a fresh start when the engine recovers (an offline step may run again).
    let approved = home.stepward(&["approve", &parked, "ship", "--note", "after the upgrade"]);
    no_panic(&approved, "approve");
    assert!(
        approved.status.success(),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    assert!(
        stdout(&approved).contains("succeeded"),
        "{}",
        stdout(&approved)
    );
    let after = runs(&home);
    let status = |run: &str| {
        after
            .iter()
            .find(|each| each["run"] == run)
            .map(|each| each["status"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(status(&parked), "succeeded");
    assert!(
        ["succeeded", "needs_attention"].contains(&status(&interrupted).as_str()),
        "the interrupted run is resumed or waits for a person: {after:?}"
    );
    assert!(
        stderr(&approved).contains("recovered after an interruption"),
        "{}",
        stderr(&approved)
    );

    // The agent file above this round's maxima is refused with its place and the maximum.
    let agent = home
        .data_dir()
        .join("accounts/local/workspace/agents/greedy/AGENT.md");
    let checked = home.stepward(&["check", agent.to_str().unwrap()]);
    no_panic(&checked, "check");
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("--max-agent-turns"),
        "the refusal names the maximum and how to raise it: {}",
        stderr(&checked)
    );
    let workflow = home
        .data_dir()
        .join("accounts/local/workspace/workflows/greedy.yaml");
    let refused = home.stepward(&["run", workflow.to_str().unwrap()]);
    no_panic(&refused, "run");
    assert!(!refused.status.success(), "{}", stdout(&refused));
    assert!(
        stdout(&refused).contains("refused") && stdout(&refused).contains("--max-agent-turns"),
        "the step is refused with its reason: {}",
        stdout(&refused)
    );

    // The vault written before opens: the secret is listed; the audit chain holds.
    let secrets = home.stepward(&["secrets", "list"]);
    assert!(
        stdout(&secrets).contains("FIXTURE_TOKEN"),
        "{}",
        stdout(&secrets)
    );
    let verified = home.stepward(&["audit", "verify"]);
    assert!(
        verified.status.success(),
        "{}{}",
        stdout(&verified),
        stderr(&verified)
    );
}
