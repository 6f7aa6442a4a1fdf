//! The repair acceptance (G9) and the workflow's versions (issue 17 §3) in headless Chromium:
//! the fake model is the account's assistant and proposes `urllib` code for a step that
//! imports `requests`; a member signs in with the browser, asks for the proposal on the run
//! page, reads it as a diff of the step's code with its checks, accepts it with a note (a form
//! post, no script), and sees the run go on from that step with version 2; then the versions
//! list names the assistant and the member who accepted it, and the diff shows the change.
//! Each page is looked at as the other browser tests do: a screenshot at a laptop's and a
//! phone's width, and axe-core.

use serde_json::{Value, json};

use crate::browser::{Browser, look_at, start_server_with};
use crate::http::{owner_session, send};
use crate::repair_console::{assistant, home_with_assistant};

#[test]
fn g9_a_member_accepts_the_assistants_repair_in_a_real_browser_needs_root() {
    let fake = assistant();
    let home = home_with_assistant(&fake);
    let endpoint = fake.endpoint();
    let (_server, address, sign_in_path) =
        start_server_with(&home, &["--allow-model-endpoint", &endpoint]);
    let base = format!("http://{address}");
    // The owner (over the API) invites a member and starts the run that needs repair.
    let (owner, csrf) = owner_session(address, &sign_in_path, "local", "ada@example.test");
    let as_owner = |method: &str, path: &str, body: Value| {
        let answer = send(
            address,
            method,
            path,
            &[
                ("Cookie", &owner),
                ("X-CSRF-Token", &csrf),
                ("Content-Type", "application/json"),
            ],
            &body.to_string(),
        );
        (
            answer.status,
            serde_json::from_str::<Value>(&answer.body).unwrap_or(Value::Null),
        )
    };
    let (status, invited) = as_owner(
        "POST",
        "/api/people",
        json!({"display_name": "Mia Member", "email": "mia@example.test", "role": "member"}),
    );
    assert_eq!(status, 201, "{invited}");
    let (status, run) = as_owner(
        "POST",
        "/api/runs",
        json!({"workflow": "quote", "inputs": {"word": " a b "}}),
    );
    assert_eq!(status, 202, "{run}");
    let run =
        crate::http::until_settled(address, &[("Cookie", &owner)], run["run"].as_str().unwrap());
    assert_eq!(run["status"], "needs_repair", "{run}");
    let run = run["run"].as_str().unwrap().to_owned();

    // The member sets a password with the one-time link, which signs them in.
    let browser = Browser::start();
    browser.sign_in_with_link(
        &format!("{base}{}", invited["sign_in_path"].as_str().unwrap()),
        "Mia Member (member)",
    );

    // The run page has the repair panel; the member asks the assistant.
    browser.open(&format!("{base}/runs/{run}"));
    browser.wait_for("the run page with its repair panel", |_, source| {
        source.contains("id=\"repair\"")
    });
    assert_eq!(browser.text(&browser.find("#run-status")), "needs repair");
    assert_eq!(
        browser.text(&browser.find("#repair-title")),
        "Repair of quote"
    );
    browser.click(&browser.find(&format!(
        "form[action='/runs/{run}/steps/quote/repair'] button"
    )));
    browser.wait_for("the proposal", |_, source| {
        source.contains("id=\"repair-diff\"")
    });
    let diff = browser.text(&browser.find("#repair-diff"));
    assert!(diff.contains("-import requests"), "{diff}");
    assert!(diff.contains("+import urllib.parse"), "{diff}");
    let checks = browser.text(&browser.find("#repair-checks"));
    assert!(
        checks.contains("Every import is in Python 3.11's standard library."),
        "{checks}"
    );
    assert!(
        browser
            .text(&browser.find("#repair-by"))
            .contains("fake, model fake-assistant"),
        "who wrote it is said"
    );
    look_at(&browser, "run-repair-proposal");

    // Accepting is a form post with a note.
    browser.type_into(&browser.find("#repair-note"), "urllib does it");
    browser.click(&browser.find(&format!(
        "form[action='/runs/{run}/steps/quote/repair/accept'] button"
    )));
    browser.wait_for("the repaired run", |_, source| {
        source.contains("id=\"run-status\"") && !source.contains("id=\"repair\"")
    });
    // The form answered at once (issue 38): the run page shows the end once the worker ran it.
    let run_url = browser.current_url();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while browser.text(&browser.find("#run-status")) != "succeeded" {
        assert!(
            std::time::Instant::now() < deadline,
            "the repaired run never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        browser.open(&run_url);
    }
    let version = browser.text(&browser.find("#workflow-version"));
    assert!(
        version.contains("version 2 from step quote on")
            && version.contains("accepted by Mia Member")
            && version.contains("outputs of the steps before it standing"),
        "{version}"
    );
    let quote = browser.text(&browser.find("#step-quote"));
    assert!(quote.contains("attempt 2"), "{quote}");
    assert!(quote.contains("a%20b"), "{quote}");
    let timeline = browser.text(&browser.find("ol.timeline"));
    assert!(
        timeline.contains("accepted the assistant's repair of “quote”")
            && timeline.contains("urllib does it"),
        "{timeline}"
    );
    look_at(&browser, "run-repaired");

    // The versions: the assistant's, accepted by the member; the diff of the two.
    browser.open(&format!("{base}/workflows/quote/versions"));
    browser.wait_for("the versions list", |_, source| {
        source.contains("id=\"versions\"")
    });
    let versions = browser.text(&browser.find("#versions"));
    assert!(
        versions.contains("the assistant, accepted by Mia Member (mia@example.test)"),
        "{versions}"
    );
    look_at(&browser, "workflow-versions");
    browser.click(&browser.find("a[href='/workflows/quote/diff?from=1&to=2']"));
    browser.wait_for("the diff", |_, source| source.contains("id=\"diff\""));
    let diff = browser.text(&browser.find("#diff"));
    assert!(diff.contains("+      import urllib.parse"), "{diff}");
    assert!(diff.contains("-      import requests"), "{diff}");
    look_at(&browser, "workflow-diff");
}
