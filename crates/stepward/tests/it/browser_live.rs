//! Live updates in a real browser (newcomer 3, workload 5), a child of the browser test: a run
//! page opened while the run waits at its gate shows, without a reload, the decision another
//! person makes through the API, the steps after it and the run's end. The server's `changed`
//! and `ended` events carry data (a browser drops an event whose data is empty, so an empty
//! one left the page at "waiting" and reconnecting every few seconds).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Browser, start_server};
use crate::http::{owner_session, send};
use crate::support::Home;

use test_support::workflows::GATED;

const NOTE: &str = "shipped from the API while the page watched";

/// How long the page may take to show what happened: a few of the stream's one-second looks.
const LIVE_PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn g23_a_run_page_shows_a_decision_and_the_end_without_a_reload_needs_root() {
    let home = Home::new();
    home.put("workflows/gated.yaml", GATED);
    let (_server, address, sign_in_path) = start_server(&home);
    let base = format!("http://{address}");
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
    let (status, run) = as_owner("POST", "/api/runs", json!({"workflow": "gated"}));
    assert_eq!(status, 202, "{run}");
    let run =
        crate::http::until_settled(address, &[("Cookie", &owner)], run["run"].as_str().unwrap());
    assert_eq!(run["status"], "waiting_approval", "{run}");
    let run = run["run"].as_str().unwrap().to_owned();

    let browser = Browser::start();
    browser.sign_in_with_link(
        &format!("{base}{}", invited["sign_in_path"].as_str().unwrap()),
        "Mia Member (member)",
    );
    browser.open(&format!("{base}/runs/{run}"));
    browser.wait_for("the parked run's page", |_, source| {
        source.contains("id=\"gate\"")
    });
    // A mark only this very page holds: a reload would lose it.
    browser.execute("window.stepwardNotReloaded = true; return true;");

    let (status, decided) = as_owner(
        "POST",
        &format!("/api/runs/{run}/steps/ship/approve"),
        json!({ "note": NOTE }),
    );
    assert_eq!(status, 202, "{decided}");
    let decided = crate::http::until_settled(address, &[("Cookie", &owner)], &run);
    assert_eq!(decided["status"], "succeeded", "{decided}");

    let deadline = Instant::now() + LIVE_PATIENCE;
    let shown = loop {
        let shown = browser.execute(
            "return [document.getElementById('run-status').textContent, \
             document.body.textContent, window.stepwardNotReloaded === true];",
        );
        let status = shown[0].as_str().unwrap_or_default();
        let text = shown[1].as_str().unwrap_or_default();
        if status.trim() == "succeeded" && text.contains("The run has ended.") {
            break shown;
        }
        assert!(
            Instant::now() < deadline,
            "the page did not show the decision and the end within {LIVE_PATIENCE:?}: status \
             {status:?}; the page: {text}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(shown[2], json!(true), "the page changed without a reload");
    let text = shown[1].as_str().unwrap();
    assert!(
        text.contains(NOTE),
        "the decision and its note are shown: {text}"
    );
    assert!(!text.contains("Waiting for a decision"), "{text}");
}
