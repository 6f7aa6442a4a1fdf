//! Issue 35, done when: every stored-format change of this round (migration 0014's interviews
//! table, journal versions 3 and 4, the loop maxima) is read from a data directory written by
//! stepward before it (`main` at e284454; `tests/fixtures/make-data-before-round-3` makes it
//! and says how). It holds a run killed mid-step, a run parked at its gate and an agent file
//! above the new maxima: each reads, resumes or is refused with its reason, and nothing
//! panics.
//!
//! Issue 38: a data directory written before the run queue (`main` at 03420bc, the same
//! script with `NEEDS_ATTENTION=1 ABOVE_MAXIMA=0`) holds a run killed mid-step, a run parked
//! at its gate and a run waiting for a person: the queue's migration applies when it is
//! opened, and each run reads, resumes or is recovered.
//!
//! Issue 39: a data directory written before the workspace's ports (`main` at 315b58b,
//! `tests/fixtures/make-data-before-workspace-ports`) opens unchanged: its revisions, a saved
//! workflow's versions and a step's copy-back read through the revision store port, and a run
//! parked at its gate runs its agent with the agent file it pinned, not the later edit.

use serde_json::Value;

use crate::support::{Home, stderr, stdout};

/// A home holding the data directory and configuration of `tests/fixtures/<tarball>`.
fn fixture_home(tarball: &str) -> Home {
    let home = Home::new();
    let tarball = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(tarball);
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
    let home = fixture_home("data-before-round-3.tar.gz");
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
    audit_verifies(&home);
}

/// Every account's audit chain of `home` holds (`stepward audit verify`).
fn audit_verifies(home: &Home) {
    let verified = home.stepward(&["audit", "verify"]);
    assert!(
        verified.status.success(),
        "{}{}",
        stdout(&verified),
        stderr(&verified)
    );
}

/// The store's schema version, read beside the binary (after it closed the database).
fn schema_version(home: &Home) -> i64 {
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .query_row("SELECT max(version) FROM schema_migrations", [], |row| {
            row.get(0)
        })
        .unwrap()
}

#[test]
fn g25_a_data_directory_from_before_the_run_queue_reads_resumes_and_recovers_needs_root() {
    let home = fixture_home("data-before-run-queue.tar.gz");
    assert_eq!(schema_version(&home), 15, "written before the run queue");
    let before = runs(&home);
    let status_in = |listed: &[Value], workflow: &str| {
        listed
            .iter()
            .find(|run| run["workflow"] == workflow)
            .map(|run| run["status"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(before.len(), 3, "{before:?}");
    assert_eq!(status_in(&before, "gated"), "waiting_approval");
    assert_eq!(status_in(&before, "failing"), "needs_attention");
    assert_eq!(status_in(&before, "slow"), "running", "killed mid-step");
    assert_eq!(
        schema_version(&home),
        21,
        "the queue's migration (16), the live view's (17), the tool tests' (18), the mail \
         outbox's (19), the run numbers' (20) and the lists' people (21) apply on open"
    );

    // The parked run resumes with a decision; the command that takes the data directory
    // recovers the run killed mid-step (its offline step runs again).
    let parked = run_of(&before, "gated");
    let approved = home.stepward(&["approve", &parked, "ship", "--note", "after the upgrade"]);
    no_panic(&approved, "approve");
    assert!(
        approved.status.success(),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    assert!(
        stderr(&approved).contains("recovered after an interruption"),
        "{}",
        stderr(&approved)
    );
    // The run waiting for a person is stopped by one.
    let waiting = run_of(&before, "failing");
    let stopped = home.stepward(&["runs", "stop", &waiting, "--note", "not needed any more"]);
    no_panic(&stopped, "runs stop");
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    let after = runs(&home);
    assert_eq!(status_in(&after, "gated"), "succeeded");
    assert_eq!(status_in(&after, "failing"), "stopped");
    assert!(
        ["succeeded", "needs_attention"].contains(&status_in(&after, "slow").as_str()),
        "the interrupted run is resumed or waits for a person: {after:?}"
    );
    audit_verifies(&home);
}

/// Where the fixture's model provider points: the test starts its fake model there.
const FIXTURE_MODEL: &str = "127.0.0.1:47611";

#[test]
fn g25_a_data_directory_from_before_the_workspace_ports_reads_its_revisions_and_pins_needs_root() {
    let home = fixture_home("data-before-workspace-ports.tar.gz");
    let history = home.stepward(&["files", "history", "--json"]);
    no_panic(&history, "files history");
    assert!(history.status.success(), "{}", stderr(&history));
    let history: Vec<Value> = serde_json::from_str(&stdout(&history)).unwrap();
    let authored = |kind: &str, path: &str| {
        history
            .iter()
            .filter(|revision| {
                revision["author_kind"] == kind
                    && revision["changes"][0]["path"].as_str() == Some(path)
            })
            .count()
    };
    assert_eq!(authored("cli", "notes/plan.md"), 2, "{history:?}");
    assert_eq!(authored("cli", "agents/digest/AGENT.md"), 2);
    assert_eq!(authored("run_step", "out/report.txt"), 1);
    // A saved workflow's first version reads its bytes from the store's blobs.
    let shown = home.stepward(&["workflows", "show", "writer", "--version", "1"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("Writes the weekly report"),
        "{}",
        stdout(&shown)
    );
    let listed = home.stepward(&["files", "list"]);
    assert!(
        stdout(&listed).contains("out/report.txt"),
        "{}",
        stdout(&listed)
    );

    // The parked run's agent step runs with the agent file it pinned before the edit.
    let fake = fake_model::BlockingFakeModel::start_on(
        FIXTURE_MODEL.parse().unwrap(),
        fake_model::Script::new(vec![fake_model::ScriptTurn::text("digest written")]),
    )
    .unwrap_or_else(|error| panic!("the fixture's model address {FIXTURE_MODEL}: {error}"));
    let parked = run_of(&runs(&home), "digest");
    let approved = home.stepward(&[
        "approve",
        &parked,
        "check",
        "--note",
        "after the upgrade",
        "--allow-model-endpoint",
        FIXTURE_MODEL,
    ]);
    no_panic(&approved, "approve");
    assert!(
        approved.status.success(),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    let everything: String = fake
        .requests()
        .iter()
        .map(fake_model::RecordedRequest::as_text)
        .collect();
    assert!(everything.contains("The pinned prompt"), "{everything}");
    assert!(!everything.contains("EDITED"), "{everything}");
    let status = runs(&home)
        .into_iter()
        .find(|run| run["run"] == parked.as_str())
        .map(|run| run["status"].clone());
    assert_eq!(status, Some(Value::from("succeeded")));
    audit_verifies(&home);
}
