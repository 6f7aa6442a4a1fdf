//! G14 in the attempt's own words (`crate::attempt` of the engine): before the code starts, a
//! refusal is recorded, with the attempt's network mode, and nothing of the step runs; after
//! it started, what the executor observed is kept whatever the outcome. (The outcome's own
//! table is a unit test beside it.)

use engine::journal::{Event, PrintedStream, RefusedBy};
use engine::{CopyBackRefusal, ExecutionOutcome, ExecutionReport};
use serde_json::json;
use storage::{AttemptStatus, NetworkMode, RunStatus, RunStore};

use crate::support::{FETCH, Harness, SECRET, account, cli, succeeded, workflow};

/// An offline step whose output names a credential key, then a networked step that takes it.
const MINT_THEN_SEND: &str = r#"name: mint
python: "3.11"
steps:
  - id: mint
    explain: Mints a key.
    code: |
      def main():
          return {"api_key": "minted"}
  - id: send
    explain: Sends with it.
    network: public_egress
    connections: [payments]
    inputs: { minted: { from: mint } }
    code: |
      def main(minted):
          return None
"#;

#[test]
fn g14_before_the_code_starts_a_refusal_is_recorded_with_its_network_and_nothing_runs() {
    let harness = Harness::new();
    harness.executor.then("mint", |_| {
        succeeded(json!({"api_key": "minted-by-the-step"}))
    });
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow(MINT_THEN_SEND), json!({}), cli("a"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert!(
        harness.executor.calls_of("send").is_empty(),
        "never executed"
    );
    let send = harness
        .store
        .attempts(&summary.run)
        .unwrap()
        .into_iter()
        .find(|attempt| attempt.step_id == "send")
        .unwrap();
    // Refused, not unknown: nothing of a networked step ran before its code started.
    assert_eq!(
        (send.network, send.status),
        (NetworkMode::PublicEgress, AttemptStatus::Refused)
    );
    assert_eq!(send.inputs, json!({"minted": {"api_key": "[REDACTED]"}}));
    let of_send: Vec<Event> = engine
        .journal(&summary.run)
        .unwrap()
        .into_iter()
        .map(|entry| entry.event)
        .filter(|event| match event {
            Event::AttemptStarted(started) => started.step == "send",
            Event::AttemptFinished(finished) => finished.step == "send",
            Event::StepPrinted(printed) => printed.step == "send",
            _ => false,
        })
        .collect();
    assert!(
        matches!(
            of_send.as_slice(),
            [Event::AttemptStarted(started), Event::AttemptFinished(finished)]
                if started.network == NetworkMode::PublicEgress
                    && finished.status == AttemptStatus::Refused
                    && finished.reason.as_deref().is_some_and(|reason| reason.contains("/minted/api_key"))
        ),
        "{of_send:#?}"
    );
}

#[test]
fn g14_after_the_code_started_what_it_printed_and_wrote_is_kept_whatever_the_outcome() {
    let harness = Harness::new();
    harness.executor.then("fetch", |_| ExecutionReport {
        stdout: format!("fetched with {SECRET}\n").into_bytes().into(),
        stderr: b"warning: slow\n".to_vec().into(),
        file_changes: vec![crate::support::file("out/partial.json", b"[1, 2]".to_vec())],
        copy_back_refusals: vec![CopyBackRefusal {
            path: "out/link".into(),
            reason: "a symbolic link is never copied back".into(),
        }],
        ..ExecutionReport::outcome_only(
            ExecutionOutcome::Unknown {
                reason: "killed at its wall-time limit".into(),
            },
            "fake",
        )
    });
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow(FETCH), json!({}), cli("a"))
        .unwrap();
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    let events: Vec<Event> = engine
        .journal(&summary.run)
        .unwrap()
        .into_iter()
        .map(|entry| entry.event)
        .skip_while(|event| !matches!(event, Event::AttemptStarted(_)))
        .take(6)
        .collect();
    assert!(
        matches!(
            events.as_slice(),
            [
                Event::AttemptStarted(_),
                Event::StepPrinted(stdout),
                Event::StepPrinted(stderr),
                Event::CopyBackRefused(refused),
                Event::WorkspaceRevision(revision),
                Event::AttemptFinished(finished),
            ] if stdout.stream == PrintedStream::Stdout
                && stdout.text == "fetched with [REDACTED]\n"
                && stderr.stream == PrintedStream::Stderr
                && refused.by == RefusedBy::Sandbox
                && revision.files.len() == 1
                && finished.status == AttemptStatus::Unknown
        ),
        "{events:#?}"
    );
    assert_eq!(
        std::fs::read(harness.work_dir().join("out/partial.json")).unwrap(),
        b"[1, 2]"
    );
}
