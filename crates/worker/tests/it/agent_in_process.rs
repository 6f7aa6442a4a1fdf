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

/// The executor's refusals before a run say what kind they are (issue 37, typed seams): a
/// Python this host lacks is `Unavailable`, an agent file that cannot be read is
/// `Definition`, a model endpoint this process may not reach is `Setting`.
#[test]
fn a_refusal_before_a_run_says_what_kind_it_is() {
    use engine::{NetworkQuery, PinnedDefinitions, StepExecutor as _, StepRefusal};
    // Only another endpoint is exempted: the provider's plain-http loopback one is not.
    let harness = Harness::new("127.0.0.1:9");
    harness.add_provider("http://127.0.0.1:1", "fake-assistant", KEY);
    harness.write(&[("agents/summarise/AGENT.md", AGENT)]);
    let executor = harness.executor();
    let workspace = harness.options.workspaces.for_account(&account()).unwrap();
    let unpinned = PinnedDefinitions::unpinned();
    let local = account();
    let files = workspace.step_files();
    let query = |step| NetworkQuery {
        account: &local,
        step,
        files: &files,
        definitions: &unpinned,
    };
    let agent_step = spec::parse_workflow("workflows/summary.yaml", WORKFLOW).unwrap();
    let models = executor.models_of(query(&agent_step.steps()[0]));
    assert!(matches!(models, Err(StepRefusal::Setting(_))), "{models:?}");

    let missing = spec::parse_workflow(
        "workflows/other.yaml",
        &WORKFLOW.replace("agent: summarise", "agent: nobody"),
    )
    .unwrap();
    let network = executor.network_of(query(&missing.steps()[0]));
    assert!(
        matches!(network, Err(StepRefusal::Definition(_))),
        "{network:?}"
    );

    let pinned_away = spec::parse_workflow(
        "workflows/old.yaml",
        "name: old\npython: \"3.99\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n",
    )
    .unwrap();
    let available = executor.availability(query(&pinned_away.steps()[0]), pinned_away.python());
    assert!(
        matches!(available, Err(StepRefusal::Unavailable(_))),
        "{available:?}"
    );
}
