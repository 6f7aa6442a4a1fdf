//! Repairs (G9) and the supervisor's setting (G15) through the real router: who may look, ask
//! and accept; what a refusal says. The whole flow with the assistant (the fake model proposing
//! `urllib.request` for `import requests`, a member accepting it) runs against the real binary
//! in `crates/stepward/tests/it/repair_console.rs` and in the browser.

use auth::Role;
use serde_json::json;

use crate::support::{ACCOUNT, Caller, Credentials, Harness};

fn note(text: &str) -> Option<(&'static str, String)> {
    Some(("application/json", json!({ "note": text }).to_string()))
}

/// G9: a viewer may look but not ask or accept (403, API and console); a key never accepts,
/// whatever its role (a version is accepted by a person, by name); a member's request reaches
/// the engine, which refuses a run that does not need repair in its own words.
#[tokio::test(flavor = "multi_thread")]
async fn g9_viewers_look_members_ask_and_accept_keys_never_accept() {
    let harness = Harness::new();
    let run = harness.parked_run(ACCOUNT);
    let base = format!("/api/runs/{}/steps/ship/repair", run.as_str());
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let member = harness.credentials(Caller::Person(Role::Member));
    // Looking is a viewer's: there is no proposal for this run (it is not in repair).
    let looked = harness.call("GET", &base, &viewer, None).await;
    assert_eq!(looked.status, 404, "{}", looked.text());
    for (method, path, body) in [
        ("POST", base.clone(), None),
        ("POST", format!("{base}/accept"), note("looks right")),
    ] {
        let refused = harness.call(method, &path, &viewer, body).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text());
    }
    for path in [
        format!("/runs/{}/steps/ship/repair", run.as_str()),
        format!("/runs/{}/steps/ship/repair/accept", run.as_str()),
    ] {
        let refused = harness
            .call(
                "POST",
                &path,
                &viewer,
                Some(("application/x-www-form-urlencoded", "note=x".into())),
            )
            .await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text());
    }
    for role in [Role::Member, Role::Admin] {
        let key = harness.credentials(Caller::Key(role));
        let refused = harness
            .call("POST", &format!("{base}/accept"), &key, note("as a key"))
            .await;
        assert_eq!(refused.status, 403, "{role:?} key: {}", refused.text());
    }
    // A member gets through to the engine, which refuses: the run waits at a gate.
    let asked = harness.call("POST", &base, &member, None).await;
    assert_eq!(asked.status, 409, "{}", asked.text());
    assert_eq!(asked.json()["code"], "repair_refused");
    assert!(
        asked.json()["error"]
            .as_str()
            .unwrap()
            .contains("not needs_repair"),
        "{}",
        asked.text()
    );
    let accepted = harness
        .call("POST", &format!("{base}/accept"), &member, note("ok"))
        .await;
    assert_eq!(accepted.status, 409, "{}", accepted.text());
    // Nothing was saved and the run still waits at its gate.
    let shown = harness
        .call("GET", &format!("/api/runs/{}", run.as_str()), &member, None)
        .await;
    assert_eq!(shown.json()["status"], "waiting_approval");
}

/// G15: anyone of the account reads who sees failures and the retries; only an admin sets
/// them (0 to 5, or the default), each change audited; the models page shows the block and
/// its form to admins only.
#[tokio::test(flavor = "multi_thread")]
async fn g15_the_supervisors_retries_are_read_by_all_set_by_admins_and_audited() {
    let harness = Harness::new();
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let member = harness.credentials(Caller::Person(Role::Member));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let read = harness.call("GET", "/api/supervisor", &viewer, None).await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["effective_retries"], 2);
    assert_eq!(read.json()["max_retries"], 5);
    assert!(read.json().get("retries").is_none());
    assert!(
        read.json()["failures_go_to"]
            .as_str()
            .unwrap()
            .starts_with("A person"),
        "{}",
        read.text()
    );
    let body = |retries: serde_json::Value| {
        Some((
            "application/json",
            json!({ "retries": retries }).to_string(),
        ))
    };
    let refused = harness
        .call("PUT", "/api/supervisor", &member, body(json!(3)))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let set = harness
        .call("PUT", "/api/supervisor", &admin, body(json!(3)))
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    assert_eq!(set.json()["retries"], 3);
    assert_eq!(set.json()["effective_retries"], 3);
    let too_many = harness
        .call("PUT", "/api/supervisor", &admin, body(json!(6)))
        .await;
    assert_eq!(too_many.status, 400, "{}", too_many.text());
    assert_eq!(
        harness
            .call("GET", "/api/supervisor", &viewer, None)
            .await
            .json()["retries"],
        3,
        "a refused number changes nothing"
    );
    let audit = harness.call("GET", "/api/audit", &admin, None).await;
    assert!(
        audit.text().contains("supervisor.retries"),
        "{}",
        audit.text()
    );

    // The console: the block on the models page, its form for admins, back to the default.
    let page = harness.call("GET", "/models", &admin, None).await;
    assert_eq!(page.status, 200);
    let text = page.text();
    assert!(text.contains("id=\"supervisor\""), "{text}");
    assert!(text.contains("one step of one run 3 times"), "{text}");
    assert!(text.contains("action=\"/models/supervisor\""), "{text}");
    let Credentials::Session { cookie, csrf, .. } = &admin else {
        panic!("a person has a session");
    };
    let posted = harness
        .send(
            axum::http::Request::builder()
                .method("POST")
                .uri("/models/supervisor")
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(axum::body::Body::from(format!(
                    "csrf={csrf}&retries=default"
                )))
                .unwrap(),
        )
        .await;
    assert_eq!(posted.status, 303, "{}", posted.text());
    let after = harness.call("GET", "/api/supervisor", &viewer, None).await;
    assert!(after.json().get("retries").is_none(), "{}", after.text());
    assert_eq!(after.json()["effective_retries"], 2);
}
