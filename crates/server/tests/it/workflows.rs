//! G27 and starting runs: the reach panel has a row for every step (also those that reach
//! nothing), internet yes/no and the connections by name, under the caption word for word; a
//! member starts a run from the API or the workflow screen.

use auth::Role;
use storage::{Actor, AuditLog, RunStore};

use crate::support::{Caller, Credentials, Harness, person_id};

const CAPTION: &str =
    "This is what each step is permitted to reach, not a review of what its code does.";

#[tokio::test(flavor = "multi_thread")]
async fn g27_reach_panel_has_every_step_and_the_caption_word_for_word() {
    let harness = Harness::new();
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let report = harness
        .call("GET", "/api/workflows/fetch/reach", &viewer, None)
        .await;
    assert_eq!(report.status, 200, "{}", report.text());
    let body = report.json();
    assert_eq!(body["caption"], CAPTION);
    let rows = body["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        2,
        "one row for every step, also one that reaches nothing"
    );
    assert_eq!(rows[0]["step"], "fetch");
    assert_eq!(rows[0]["internet"], "yes");
    assert_eq!(rows[0]["connections"], serde_json::json!(["payments"]));
    assert_eq!(rows[1]["step"], "summarize");
    assert_eq!(rows[1]["internet"], "no");
    assert_eq!(rows[1]["connections"], serde_json::json!([]));
    let screen = harness.call("GET", "/workflows/fetch", &viewer, None).await;
    assert_eq!(screen.status, 200);
    let text = screen.text();
    assert!(text.contains("What each step can reach"));
    assert!(text.contains(CAPTION), "{text}");
    assert!(text.contains("Fetches the orders."));
    assert!(
        text.contains("<td><code>fetch</code></td><td>yes</td><td>payments</td><td>none</td>"),
        "{text}"
    );
    assert!(
        text.contains("<td><code>summarize</code></td><td>no</td><td>none</td><td>none</td>"),
        "{text}"
    );
    assert!(
        !text.contains("action=\"/runs\""),
        "a viewer cannot start a run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn workflows_list_and_an_invalid_one_has_no_reach() {
    let harness = Harness::new();
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let listed = harness.call("GET", "/api/workflows", &viewer, None).await;
    assert_eq!(listed.status, 200);
    let names: Vec<(String, bool)> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["name"].as_str().unwrap().to_owned(),
                item["valid"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("broken".to_owned(), false),
            ("fetch".to_owned(), true),
            ("gated".to_owned(), true)
        ]
    );
    let broken = harness
        .call("GET", "/api/workflows/broken", &viewer, None)
        .await;
    assert_eq!(broken.json()["valid"], false);
    assert!(!broken.json()["problems"].as_array().unwrap().is_empty());
    let reach = harness
        .call("GET", "/api/workflows/broken/reach", &viewer, None)
        .await;
    assert_eq!(reach.status, 422);
    for path in ["/api/workflows/..%2Fgated", "/api/workflows/nothing"] {
        assert_eq!(
            harness.call("GET", path, &viewer, None).await.status,
            404,
            "{path}"
        );
    }
    let stranger = harness.credentials(Caller::StrangerPerson);
    let theirs = harness
        .call("GET", "/api/workflows/gated", &stranger, None)
        .await;
    assert_eq!(
        theirs.status, 404,
        "another account's workflows are not found"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g23_member_starts_a_run_that_parks_at_its_gate() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let started = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some(("application/json", r#"{"workflow":"gated"}"#.to_owned())),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text());
    let body = started.json();
    assert_eq!(body["status"], "waiting_approval");
    assert_eq!(body["waiting_at"], "ship");
    let run = storage::RunId::parse(body["run"].as_str().unwrap()).unwrap();
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().account.as_str(),
        "acct"
    );
    let started_by = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .find(|entry| entry.action == "run.start")
        .unwrap()
        .actor;
    assert_eq!(
        started_by,
        Actor::Person {
            id: person_id(Role::Member),
            name: "The member".into()
        }
    );
    let refused = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some((
                "application/json",
                r#"{"workflow":"gated","inputs":{"api_key":"x"}}"#.to_owned(),
            )),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    let broken = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some(("application/json", r#"{"workflow":"broken"}"#.to_owned())),
        )
        .await;
    assert_eq!(broken.status, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn g27_workflow_screen_starts_a_run_for_a_member() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let screen = harness.call("GET", "/workflows/gated", &member, None).await;
    assert!(screen.text().contains("action=\"/runs\""));
    let Credentials::Session { cookie, csrf, .. } = &member else {
        panic!("a person has a session");
    };
    let started = harness
        .send(
            axum::http::Request::builder()
                .method("POST")
                .uri("/runs")
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(axum::body::Body::from(format!(
                    "csrf={csrf}&workflow=gated&inputs=%7B%7D"
                )))
                .unwrap(),
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.text());
    let location = started.header("location").unwrap();
    let page = harness.call("GET", &location, &member, None).await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("waiting_approval"));
}

/// The workflow screen says which connections a run needs and whether the vault has them, by
/// name only, so a newcomer knows what to set before starting a run.
#[tokio::test(flavor = "multi_thread")]
async fn g23_workflow_screen_names_the_connections_a_run_needs_and_their_state() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let before = harness.call("GET", "/workflows/fetch", &member, None).await;
    assert_eq!(before.status, 200);
    assert!(
        before
            .text()
            .contains("connection <code>payments</code>: not set"),
        "{}",
        before.text()
    );
    harness
        .vault
        .connections()
        .add(
            &ids::AccountId::parse(crate::support::ACCOUNT).unwrap(),
            "payments",
            vec![(
                "api_key".to_owned(),
                redact::SecretValue::new("sk_test_workflow_screen_value".into()),
            )],
        )
        .unwrap();
    let after = harness.call("GET", "/workflows/fetch", &member, None).await;
    assert!(
        after
            .text()
            .contains("connection <code>payments</code>: set"),
        "{}",
        after.text()
    );
    assert!(!after.text().contains("sk_test_workflow_screen_value"));
}

/// The reach panel of a server whose steps run unisolated says so on the workflow page, in the
/// API's report and on a gate's page, above the caption; a server with sandboxes says nothing
/// of the kind.
#[tokio::test(flavor = "multi_thread")]
async fn g27_an_unisolated_servers_reach_panels_say_not_isolated() {
    const NOTICE: &str = "Not isolated: this server runs steps with --backend unisolated";
    for isolated in [true, false] {
        let harness = Harness::with_options(server::AppOptions::new(
            auth::TlsMode::PlainHttp,
            if isolated {
                server::StepIsolation::Sandboxed
            } else {
                server::StepIsolation::NotIsolated
            },
        ));
        let member = harness.credentials(Caller::Person(Role::Member));
        let screen = harness.call("GET", "/workflows/fetch", &member, None).await;
        assert_eq!(screen.status, 200);
        assert_eq!(
            screen.text().contains(NOTICE),
            !isolated,
            "{}",
            screen.text()
        );
        let report = harness
            .call("GET", "/api/workflows/fetch/reach", &member, None)
            .await
            .json();
        assert_eq!(
            report["isolation"]
                .as_str()
                .is_some_and(|notice| notice.starts_with(NOTICE)),
            !isolated,
            "{report}"
        );
        let run = harness.parked_run("acct");
        let page = harness
            .call("GET", &format!("/runs/{}", run.as_str()), &member, None)
            .await;
        assert_eq!(page.status, 200);
        let text = page.text();
        assert!(text.contains("Waiting for a decision"), "{text}");
        assert_eq!(text.contains(NOTICE), !isolated, "{text}");
    }
}
