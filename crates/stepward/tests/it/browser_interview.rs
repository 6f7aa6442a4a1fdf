//! The interview in a real browser (issue 17 §4), a child of the browser test (its WebDriver
//! client, processes and axe-core check): the assistant (the fake model on loopback, the
//! server's endpoint exempted by the operator) first proposes an invalid workflow, whose
//! diagnostics the page shows, then a valid one, shown with its reach rows under the caption
//! and the authoring lints (the examples hold a `refund` already, so it is named
//! `ticket_refund`); the owner confirms it, and it is the workflow's first version,
//! authored by the assistant and accepted by them.

use std::process::Command;

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use super::{Browser, Process, REACH_CAPTION, http, look_at};
use crate::support::{Home, repo_root};

const INVALID: &str = "name: ticket_refund\npython: \"3.11\"\nsteps:\n  - id: build\n    code: |\n      def main():\n          return 1\n";

const VALID: &str = "name: ticket_refund\npython: \"3.11\"\ninputs: { ticket: string }\nsteps:\n  - id: build\n    explain: Builds the refund request from the ticket.\n    inputs: { ticket: { from: input.ticket } }\n    code: |\n      def main(ticket):\n          return {\"ticket\": ticket, \"amount_cents\": 1250}\n  - id: send\n    explain: Sends the refund request to the payments provider.\n    network: public_egress\n    connections: [payments]\n    inputs: { request: { from: build } }\n    code: |\n      import json, urllib.request\n      def main(request):\n          data = json.dumps(request).encode()\n          sent = urllib.request.Request(\"https://payments.example/refunds\", data=data, method=\"POST\")\n          return urllib.request.urlopen(sent).status\n";

#[test]
fn g27_an_interview_in_a_real_browser_shows_checked_proposals_and_confirms_one_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![
        ScriptTurn::call("propose", json!({"workflow": INVALID, "note": "first"})),
        ScriptTurn::call(
            "propose",
            json!({"workflow": VALID, "note": "Builds the request, then sends it."}),
        ),
    ]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-browser-interview-key-3344");
    let mut server = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_stepward"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(["--owner-email", "ada@example.test"])
            .args(["--allow-model-endpoint", &exempt])
            .arg("--data-dir")
            .arg(home.data_dir())
            .arg("--sandbox-state-dir")
            .arg(home.dir.path().join("sandbox"))
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", home.dir.path().join("config"))
            .stderr(
                std::fs::File::create(home.dir.path().join("serve-stderr.txt"))
                    .expect("a file for stderr"),
            ),
    );
    let serving = server.line_containing("stepward serves http://");
    let address: std::net::SocketAddr = serving
        .trim_start_matches("stepward serves http://")
        .split(' ')
        .next()
        .and_then(|address| address.parse().ok())
        .unwrap_or_else(|| panic!("no address in {serving:?}"));
    let base = format!("http://{address}");
    let link = server.line_containing("/welcome/");
    let browser = Browser::start();
    browser.sign_in_with_link(&link, "ada (owner)");

    browser.open(&format!("{base}/interview"));
    browser.wait_for("the interview's start page", |_, source| {
        source.contains("Interview the assistant")
    });
    look_at(&browser, "interview-start");
    browser.type_into(
        &browser.find("textarea[name=message]"),
        "Refund a support ticket through the payments API.",
    );
    browser.click(&browser.find("form[action='/interview'] button[type=submit]"));
    browser.wait_for("the interview with a proposal", |url, source| {
        url.starts_with(&format!("{base}/interview/iv_")) && source.contains("id=\"proposal\"")
    });
    // The invalid proposal: its diagnostics, never its confirm form.
    let chat = browser.text(&browser.find("ol.chat"));
    assert!(chat.contains("did not pass the checks"), "{chat}");
    assert!(chat.contains("explain"), "{chat}");
    // The valid one: its reach under the caption word for word, and the lints.
    let proposal = browser.text(&browser.find("#proposal"));
    assert!(proposal.contains("Proposal 1: ticket_refund"), "{proposal}");
    assert_eq!(
        browser.text(&browser.find("#proposal .caption")),
        REACH_CAPTION
    );
    let rows: Vec<String> = browser
        .find_all("#proposal tbody tr")
        .iter()
        .map(|row| browser.text(row))
        .collect();
    assert_eq!(rows, ["build no none none", "send yes payments none"]);
    assert!(
        proposal.contains("networked-write-ungated"),
        "the lints: {proposal}"
    );
    look_at(&browser, "interview");

    let interview_url = browser.current_url();
    browser.click(&browser.find("#proposal form button[type=submit]"));
    browser.wait_for("the saved version", |url, source| {
        url.starts_with(&interview_url) && source.contains("Saved as version 1 of")
    });
    let session = format!("stepward_session={}", browser.cookie("stepward_session"));
    let answer = http(
        address,
        "GET",
        "/api/workflows/ticket_refund/versions",
        &[("Cookie", &session)],
        "",
    )
    .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    let versions: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(versions[0]["number"], 1, "{versions}");
    assert_eq!(versions[0]["author_kind"], "assistant", "{versions}");
    assert!(
        versions[0]["message"]
            .as_str()
            .unwrap()
            .contains("accepted by ada"),
        "{versions}"
    );
    drop(browser);
    drop(server);
}
