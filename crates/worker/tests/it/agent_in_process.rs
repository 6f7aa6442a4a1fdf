//! An agent step and a supervised failure, run by this crate in-process.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::json;
use storage::{EventLog as _, RunStatus};

use crate::support::{Harness, account, cli};

const KEY: &str = "sk-in-process-model-key-7731";

const AGENT: &str = "---\nname: summarise\ndescription: Summarises.\nmodel: fake/fake-large\ntools: []\n---\nSummarise the notes you are given.\n";

const WORKFLOW: &str = "name: summary\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: summarise\n    task: Summarise the notes.\n";

#[test]
fn an_agent_step_runs_against_the_model_in_process_and_its_answer_is_the_output() {
    let fake =
        BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("three notes, all done")]))
            .unwrap();
    let harness = Harness::new(&fake.endpoint());
    harness.add_provider(&fake.url(), "fake-assistant", KEY);
    harness.write(&[
        ("agents/summarise/AGENT.md", AGENT),
        ("workflows/summary.yaml", WORKFLOW),
    ]);
    let workflow = spec::parse_workflow("workflows/summary.yaml", WORKFLOW).unwrap();
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow, json!({}), cli())
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded, "{summary:?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "one model turn");
    let events = harness.store.events(&summary.run).unwrap();
    let record: String = events
        .iter()
        .map(|event| event.payload.to_string())
        .collect();
    assert!(record.contains("three notes, all done"), "{record}");
    assert!(
        !record.contains(KEY),
        "the model key never reaches the record"
    );
}

#[test]
fn g15_a_failed_code_step_is_seen_by_the_accounts_assistant_in_process() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "stop",
        json!({"note": "the divisor is zero; fix the data"}),
    )]))
    .unwrap();
    let harness = Harness::new(&fake.endpoint());
    harness.add_provider(&fake.url(), "fake-assistant", KEY);
    let text = "name: divide\npython: \"3.11\"\nsteps:\n  - id: divide\n    explain: Divides by zero.\n    code: |\n      def main():\n          return 1 / 0\n";
    let workflow = spec::parse_workflow("workflows/divide.yaml", text).unwrap();
    let engine = harness.engine();
    let summary = engine
        .start_run(&account(), &workflow, json!({}), cli())
        .unwrap();
    assert_eq!(fake.requests().len(), 1, "the assistant was asked once");
    let record: String = harness
        .store
        .events(&summary.run)
        .unwrap()
        .iter()
        .map(|event| event.payload.to_string())
        .collect();
    assert!(record.contains("the divisor is zero"), "{record}");
    assert_eq!(
        summary.status,
        RunStatus::Stopped,
        "the assistant stopped it"
    );
}
