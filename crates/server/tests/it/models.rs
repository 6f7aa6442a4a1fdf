//! The account's model providers over the API and the console, against the fake model on
//! 127.0.0.1 (exempted by the harness's operator settings). The server's model client reaches
//! nothing but exempted endpoints and resolves no name, so no test can leave loopback.

use std::sync::Arc;

use auth::Role;
use fake_model::{FakeModel, Script, ScriptTurn};
use serde_json::json;

use crate::support::{Caller, Harness, VAULT_VALUE};

const KEY: &str = "sk-ant-server-test-0123456789-key";

/// The harness's model client: only the exempted endpoints, names from an empty table.
pub fn client(exempt: &[&str]) -> llm::Client {
    llm::Client::new(llm::ClientOptions {
        endpoints: llm::EndpointPolicy {
            exempt: exempt
                .iter()
                .map(|endpoint| endpoint.parse().unwrap())
                .collect(),
            public: llm::PublicEndpoints::Refused,
            denied: Vec::new(),
        },
        resolver: Arc::new(llm::StaticResolver::new()),
        // A refused connection is not retried here: the route matrix tests providers at a
        // port where nothing listens, and must not wait for backoffs.
        retries: llm::RetryPolicy {
            max_retries: 0,
            ..llm::RetryPolicy::default()
        },
        connect_timeout: std::time::Duration::from_secs(2),
        ..llm::ClientOptions::default()
    })
    .unwrap()
}

fn json_body(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

#[tokio::test(flavor = "multi_thread")]
async fn models_api_add_list_test_default_remove_with_the_fake() {
    let fake = FakeModel::start(Script::new(vec![
        ScriptTurn::text("Hello from the fake.").with_usage(9, 4),
    ]))
    .await
    .unwrap();
    let harness = Harness::with_model_endpoints(&[&fake.endpoint()]);
    let admin = harness.credentials(Caller::Key(Role::Admin));

    let added = harness
        .call(
            "PUT",
            "/api/models/claude",
            &admin,
            json_body(json!({
                "provider": "anthropic",
                "base_url": fake.url(),
                "assistant_model": "fake-large",
                "key": KEY,
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    assert!(!added.text().contains(KEY));
    assert_eq!(added.json()["is_default"], true);
    assert_eq!(added.json()["key_version"], 1);
    let second = harness
        .call(
            "PUT",
            "/api/models/local",
            &admin,
            json_body(json!({
                "provider": "openai",
                "base_url": fake.openai_base_url(),
                "key": "sk-local-server-test-abcdef",
            })),
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.text());
    assert_eq!(second.json()["is_default"], false);

    let listed = harness.call("GET", "/api/models", &admin, None).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let providers = listed.json();
    let names: Vec<&str> = providers
        .as_array()
        .unwrap()
        .iter()
        .map(|provider| provider["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["claude", "local"]);
    assert!(!listed.text().contains(KEY));

    let tested = harness
        .call(
            "POST",
            "/api/models/claude/test",
            &admin,
            json_body(json!({})),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text());
    let result = tested.json();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["answer"], "Hello from the fake.");
    assert_eq!(result["answered_by"], "fake-large");
    assert_eq!(result["input_tokens"], 9);
    let received = fake.requests();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].header("x-api-key"), Some(KEY));

    let made_default = harness
        .call("POST", "/api/models/local/default", &admin, None)
        .await;
    assert_eq!(made_default.status, 204, "{}", made_default.text());
    let listed = harness
        .call("GET", "/api/models", &admin, None)
        .await
        .json();
    assert_eq!(listed[0]["is_default"], false);
    assert_eq!(listed[1]["is_default"], true);

    let removed = harness
        .call("DELETE", "/api/models/claude", &admin, None)
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text());
    let again = harness
        .call("DELETE", "/api/models/claude", &admin, None)
        .await;
    assert_eq!(again.status, 404);

    let audit = harness.call("GET", "/api/audit", &admin, None).await;
    assert_eq!(audit.status, 200);
    for action in ["model.add", "model.test", "model.default", "model.remove"] {
        assert!(
            audit.text().contains(action),
            "{action} missing: {}",
            audit.text()
        );
    }
    assert!(!audit.text().contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn g11_an_admin_cannot_point_a_provider_at_loopback_or_plain_http() {
    let fake = FakeModel::start(Script::new(vec![ScriptTurn::text("never")]))
        .await
        .unwrap();
    // The operator exempted nothing: the admin's base URLs are refused, whatever they say.
    let harness = Harness::with_model_endpoints(&[]);
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let port = fake.address().port();
    for base_url in [
        fake.url(),
        format!("https://127.0.0.1:{port}"),
        "https://10.0.0.1/v1".to_owned(),
        "https://169.254.169.254".to_owned(),
    ] {
        let refused = harness
            .call(
                "PUT",
                "/api/models/claude",
                &admin,
                json_body(json!({ "provider": "anthropic", "base_url": base_url, "key": KEY })),
            )
            .await;
        assert_eq!(refused.status, 400, "{base_url}: {}", refused.text());
        assert!(refused.text().contains("base_url"), "{}", refused.text());
        assert!(!refused.text().contains(KEY));
    }
    let listed = harness.call("GET", "/api/models", &admin, None).await;
    assert_eq!(listed.json(), json!([]));
    assert!(fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_models_page_lists_providers_escaped_and_never_a_key() {
    let harness = Harness::with_model_endpoints(&["127.0.0.1:9"]);
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let added = harness
        .call(
            "PUT",
            "/api/models/claude",
            &admin,
            json_body(json!({
                "provider": "anthropic",
                "base_url": "http://127.0.0.1:9",
                "assistant_model": "<script>alert(1)</script>",
                "key": KEY,
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    let page = harness
        .call(
            "GET",
            "/models",
            &harness.credentials(Caller::Person(Role::Admin)),
            None,
        )
        .await;
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains("claude (default)"), "{html}");
    assert!(html.contains("&#60;script&#62;"), "{html}");
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains(KEY));
    assert!(
        html.contains("action=\"/models\""),
        "an admin gets the form"
    );
    let member_page = harness
        .call(
            "GET",
            "/models",
            &harness.credentials(Caller::Person(Role::Member)),
            None,
        )
        .await;
    // Members see the providers' names in the vault, not this page.
    assert_eq!(member_page.status, 403);
    assert!(!member_page.text().contains("claude"));
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_a_workflow_whose_step_names_a_model_key_does_not_validate_and_cannot_run() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let before = harness
        .call("GET", "/api/workflows/fetch", &admin, None)
        .await;
    assert_eq!(before.json()["valid"], true, "{}", before.text());
    // A provider named like the connection the workflow's step is granted.
    let added = harness
        .call(
            "PUT",
            "/api/models/payments",
            &admin,
            json_body(json!({
                "provider": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "key": KEY,
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    let after = harness
        .call("GET", "/api/workflows/fetch", &admin, None)
        .await;
    let view = after.json();
    assert_eq!(view["valid"], false, "{view}");
    assert!(
        view["problems"][0]
            .as_str()
            .unwrap()
            .contains("names the model key of the provider `payments`"),
        "{view}"
    );
    let started = harness
        .call(
            "POST",
            "/api/runs",
            &admin,
            json_body(json!({ "workflow": "fetch" })),
        )
        .await;
    assert_eq!(started.status, 422, "{}", started.text());
}

/// Model calls in flight are bounded, per account and for the whole server, so that tests
/// fired in parallel cannot hold the memory of many answers at once: beyond 4 at once for
/// one account, a test is answered at once with an error that says so, and never reaches the
/// provider; another account's test still goes through.
#[tokio::test(flavor = "multi_thread")]
async fn parallel_model_tests_beyond_the_limit_are_answered_at_once_and_reach_no_provider() {
    let fake = FakeModel::start(Script {
        turns: vec![ScriptTurn::text("slowly").slow(1_500)],
        repeat: true,
    })
    .await
    .unwrap();
    let harness = Arc::new(Harness::with_model_endpoints(&[&fake.endpoint()]));
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let stranger = harness.credentials(Caller::StrangerKey);
    for credentials in [&admin, &stranger] {
        // Each account's own provider, both at the fake.
        let added = harness
            .call(
                "PUT",
                "/api/models/claude",
                credentials,
                json_body(json!({
                    "provider": "anthropic",
                    "base_url": fake.url(),
                    "assistant_model": "fake-large",
                    "key": KEY,
                })),
            )
            .await;
        assert_eq!(added.status, 200, "{}", added.text());
    }
    let admin = Arc::new(admin);
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let harness = Arc::clone(&harness);
        let admin = Arc::clone(&admin);
        calls.spawn(async move {
            let started = std::time::Instant::now();
            let answer = harness
                .call(
                    "POST",
                    "/api/models/claude/test",
                    &admin,
                    json_body(json!({})),
                )
                .await;
            (answer.status, answer.json(), started.elapsed())
        });
    }
    // The stranger's one test starts while the account's are in flight.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let other = harness
        .call(
            "POST",
            "/api/models/claude/test",
            &stranger,
            json_body(json!({})),
        )
        .await;
    let (mut answered, mut busy) = (0, 0);
    while let Some(joined) = calls.join_next().await {
        let (status, result, took) = joined.unwrap();
        assert_eq!(status, 200, "{result}");
        if result["ok"] == true {
            answered += 1;
        } else {
            assert_eq!(result["error_kind"], "busy", "{result}");
            let error = result["error"].as_str().unwrap();
            assert!(error.contains("at once"), "{error}");
            assert!(
                took < std::time::Duration::from_secs(1),
                "busy after {took:?}"
            );
            busy += 1;
        }
    }
    assert_eq!((answered, busy), (4, 6));
    assert_eq!(other.json()["ok"], true, "{}", other.text());
    assert_eq!(
        fake.requests().len(),
        5,
        "the refused tests reached no provider"
    );
}

/// What the endpoint says goes out scrubbed of the account's values: its answer, its
/// error, and the model name it reports (`answered_by`), which the endpoint chooses too.
#[tokio::test(flavor = "multi_thread")]
async fn g16_the_model_name_an_endpoint_reports_is_scrubbed_like_its_answer() {
    let fake = FakeModel::start(Script::new(vec![
        ScriptTurn::text(&format!("the answer holds {VAULT_VALUE}"))
            .with_model(&format!("model-{VAULT_VALUE}")),
    ]))
    .await
    .unwrap();
    let harness = Harness::with_model_endpoints(&[&fake.endpoint()]);
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let added = harness
        .call(
            "PUT",
            "/api/models/claude",
            &admin,
            json_body(json!({
                "provider": "anthropic",
                "base_url": fake.url(),
                "assistant_model": "fake-large",
                "key": KEY,
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    let tested = harness
        .call(
            "POST",
            "/api/models/claude/test",
            &admin,
            json_body(json!({})),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text());
    let result = tested.json();
    assert_eq!(result["ok"], true, "{result}");
    assert!(!tested.text().contains(VAULT_VALUE), "{result}");
    assert!(
        result["answered_by"]
            .as_str()
            .unwrap()
            .starts_with("model-"),
        "{result}"
    );
}

/// The providers' settings are an admin's, like every other route of the Models page: a
/// base URL may name a host of the account's own network. Members (who write agent files)
/// learn the providers' names, and nothing else, from the vault's names-only listing.
#[tokio::test(flavor = "multi_thread")]
async fn providers_are_listed_to_admins_and_members_see_their_names_only() {
    let harness = Harness::with_model_endpoints(&["127.0.0.1:9"]);
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let added = harness
        .call(
            "PUT",
            "/api/models/local",
            &admin,
            json_body(json!({
                "provider": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "key": KEY,
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    for member in [Caller::Person(Role::Member), Caller::Key(Role::Member)] {
        let credentials = harness.credentials(member);
        let listed = harness.call("GET", "/api/models", &credentials, None).await;
        assert_eq!(listed.status, 403, "{member:?}: {}", listed.text());
        assert!(!listed.text().contains("127.0.0.1"), "{}", listed.text());
        let names = harness
            .call("GET", "/api/vault/model-keys", &credentials, None)
            .await;
        assert_eq!(names.status, 200, "{member:?}: {}", names.text());
        assert_eq!(names.json()[0]["provider"], "local", "{}", names.text());
        assert!(!names.text().contains("127.0.0.1"), "{}", names.text());
    }
    let page = harness
        .call(
            "GET",
            "/models",
            &harness.credentials(Caller::Person(Role::Member)),
            None,
        )
        .await;
    assert_eq!(page.status, 403, "{}", page.text());
    let listed = harness.call("GET", "/api/models", &admin, None).await;
    assert_eq!(listed.status, 200);
    assert_eq!(
        listed.json()[0]["base_url"],
        "http://127.0.0.1:9/v1/chat/completions"
    );
}
