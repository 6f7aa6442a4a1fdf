//! The repair port answers in types (issue 37: it answered a `String`): why no proposal was
//! made and why a proposal is refused are told apart by the engine and the doors.

use engine::{NoProposal, RepairAssistant, RepairRequest};
use redact::ScrubSets;
use storage::RunId;
use worker::repair::ModelRepairs;

use crate::support::{Harness, account};

const QUOTE: &str = "name: quote\npython: \"3.11\"\ninputs: { word: string }\nsteps:\n  - id: quote\n    explain: Quotes a word.\n    inputs: { word: { from: input.word } }\n    code: |\n      import requests\n      def main(word):\n          return word\n";

fn repairs(harness: &Harness) -> ModelRepairs {
    ModelRepairs {
        store: harness.store.clone(),
        secrets: harness.secrets.clone(),
        scrub_sets: ScrubSets::new(harness.secrets.clone()),
        client: harness.client.clone(),
        maxima: spec::LimitMaxima::BUILT_IN,
    }
}

#[test]
fn an_account_without_an_assistant_gets_no_proposal_and_is_told_why() {
    let harness = Harness::new("127.0.0.1:9");
    let workflow = spec::parse_workflow("quote.yaml", QUOTE).unwrap();
    let run = RunId::parse("run-1").unwrap();
    let refused = repairs(&harness)
        .propose(&RepairRequest {
            account: &account(),
            run: &run,
            workflow: &workflow,
            step: "quote",
            problem: "imports requests",
        })
        .unwrap_err();
    let NoProposal::NoAssistant { why } = &refused else {
        panic!("not the missing assistant: {refused:?}");
    };
    assert!(!why.is_empty());
    assert!(
        refused.to_string().contains("fix the step's code yourself"),
        "{refused}"
    );
}

#[test]
fn an_agent_step_is_not_repairable_and_a_changed_main_is_refused() {
    let harness = Harness::new("127.0.0.1:9");
    let fake = "http://127.0.0.1:9";
    harness.add_provider(fake, "fake-assistant", "sk-test-key-0123456789");
    let agent_step = "name: ask\npython: \"3.11\"\nsteps:\n  - id: ask\n    explain: Asks.\n    agent: helper\n    task: Say hello.\n";
    let workflow = spec::parse_workflow("ask.yaml", agent_step).unwrap();
    let run = RunId::parse("run-1").unwrap();
    let repairs = repairs(&harness);
    let refused = repairs
        .propose(&RepairRequest {
            account: &account(),
            run: &run,
            workflow: &workflow,
            step: "ask",
            problem: "broken",
        })
        .unwrap_err();
    assert!(
        matches!(refused, NoProposal::NotRepairable { .. }),
        "{refused:?}"
    );
    let quote = spec::parse_workflow("quote.yaml", QUOTE).unwrap();
    let refusal = repairs
        .check(&quote, "quote", "def main(other):\n    return other\n")
        .unwrap_err();
    assert!(refusal.reason.contains("main"), "{refusal}");
}
