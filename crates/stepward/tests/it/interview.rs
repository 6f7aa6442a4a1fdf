//! `stepward interview` with the fake model (issue 17 §4): each line on stdin is a message; an
//! invalid proposal's diagnostics are shown and the assistant tries again; the valid one is
//! shown with its reach table, the caption and the authoring lints; `confirm` saves it as one
//! version, authored by the assistant and accepted by this user. With no provider there is no
//! interview, and the command says so.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{Home, stderr, stdout};

const INVALID: &str = "name: refund\npython: \"3.11\"\nsteps:\n  - id: build\n    code: |\n      def main():\n          return 1\n";

const VALID: &str = "name: refund\npython: \"3.11\"\ninputs: { ticket: string }\nsteps:\n  - id: build\n    explain: Builds the refund request from the ticket.\n    inputs: { ticket: { from: input.ticket } }\n    code: |\n      def main(ticket):\n          return {\"ticket\": ticket, \"amount_cents\": 1250}\n  - id: send\n    explain: Sends the refund request to the payments provider.\n    network: public_egress\n    connections: [payments]\n    inputs: { request: { from: build } }\n    code: |\n      import json, os, urllib.request\n      def main(request):\n          data = json.dumps(request).encode()\n          sent = urllib.request.Request(\"https://payments.example/refunds\", data=data, method=\"POST\")\n          return urllib.request.urlopen(sent).status\n";

#[test]
fn g1_a_cli_interview_shows_checked_proposals_with_reach_and_lints_and_confirm_saves_one_version() {
    let fake = BlockingFakeModel::start(Script::new(vec![
        ScriptTurn::call("propose", json!({"workflow": INVALID, "note": "first"})),
        ScriptTurn::call(
            "propose",
            json!({"workflow": VALID, "note": "Builds, then sends."}),
        ),
    ]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-interview-test-model-key-7788");
    let talked = home.stepward_with_stdin(
        &["interview", "--allow-model-endpoint", &exempt],
        "Refund a support ticket through the payments API.\nconfirm\n",
    );
    let shown = stdout(&talked);
    assert!(talked.status.success(), "{shown}{}", stderr(&talked));
    assert!(shown.contains("did not pass the checks"), "{shown}");
    assert!(shown.contains("explain"), "{shown}");
    assert!(shown.contains("Proposal 1: refund"), "{shown}");
    assert!(shown.contains(spec::REACH_CAPTION), "{shown}");
    assert!(shown.contains("payments"), "{shown}");
    assert!(shown.contains("networked-write-ungated"), "{shown}");
    assert!(shown.contains("Saved as version 1 of refund"), "{shown}");
    // The diagnostics went back to the assistant.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].as_text().contains("refused"));

    let history = home.stepward(&["files", "history", "--json"]);
    assert!(history.status.success(), "{}", stderr(&history));
    let revisions: Value = serde_json::from_str(&stdout(&history)).unwrap();
    let saved = revisions
        .as_array()
        .unwrap()
        .iter()
        .find(|revision| {
            revision["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|change| change["path"] == "workflows/refund.yaml")
        })
        .expect("the confirmed proposal is a revision");
    assert_eq!(saved["author_kind"], "assistant");
    assert!(
        saved["message"]
            .as_str()
            .unwrap()
            .contains("proposed by the assistant (fake, model fake-assistant)"),
        "{saved}"
    );
    let exported = home.stepward(&["workflows", "export", "refund"]);
    assert_eq!(stdout(&exported).trim_end(), VALID.trim_end());
}

#[test]
fn g15_without_a_provider_the_cli_has_no_interview_and_says_so() {
    let home = Home::new();
    // An installation without a model provider.
    let made = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-value-0000000005\n");
    assert!(made.status.success(), "{}", stderr(&made));
    let talked = home.stepward_with_stdin(&["interview"], "Refund a ticket.\n");
    assert!(!talked.status.success());
    assert!(
        stderr(&talked).contains("there is no assistant to interview you"),
        "{}",
        stderr(&talked)
    );
}
