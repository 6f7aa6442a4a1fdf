//! The JSON API's errors (issue 12, 6): one shape, `{ code, error, request_id }`, with a
//! stable code documented in the OpenAPI document, and the CLI's precision: a missing CSRF
//! token says which header, an input mismatch names the input, an unknown workflow says what
//! was not found.

use auth::Role;

use crate::support::{Caller, Credentials, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn api_errors_have_one_shape_with_a_code_and_name_what_is_wrong() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let start = |body: &str| Some(("application/json", body.to_owned()));

    let Credentials::Session {
        cookie, session_id, ..
    } = &member
    else {
        panic!("a session");
    };
    let without_csrf = Credentials::Session {
        cookie: cookie.clone(),
        csrf: String::new(),
        session_id: session_id.clone(),
    };
    let refused = harness
        .call(
            "POST",
            "/api/runs",
            &without_csrf,
            start(r#"{"workflow":"gated"}"#),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let body = refused.json();
    assert_eq!(body["code"], "csrf_token_missing");
    let said = body["error"].as_str().unwrap();
    assert!(
        said.contains("X-CSRF-Token") && !said.contains("Reload the page"),
        "{said}"
    );
    assert!(body["request_id"].is_string());

    let unknown = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            start(r#"{"workflow":"nothing"}"#),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert_eq!(unknown.json()["code"], "not_found");
    let said = unknown.json()["error"].as_str().unwrap().to_owned();
    assert!(said.contains("There is no workflow"), "{said}");

    let mismatch = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            start(r#"{"workflow":"gated","inputs":{"ticket":"T-1"}}"#),
        )
        .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.text());
    assert_eq!(mismatch.json()["code"], "run_refused");
    let said = mismatch.json()["error"].as_str().unwrap().to_owned();
    assert!(said.contains("`ticket`"), "{said}");

    // The console keeps its own words for a person at a form.
    let form = harness
        .call(
            "POST",
            "/runs",
            &without_csrf,
            Some(("application/x-www-form-urlencoded", "workflow=gated".into())),
        )
        .await;
    assert_eq!(form.status, 403);
    assert!(form.text().contains("Reload the page"), "{}", form.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_lists_every_error_code() {
    let harness = Harness::new();
    let document = harness
        .call("GET", "/api/openapi.json", &Credentials::None, None)
        .await
        .json();
    let error_body = &document["components"]["schemas"]["ErrorBody"];
    let required = error_body["required"].as_array().unwrap();
    assert!(required.iter().any(|name| name == "code"), "{error_body}");
    let codes: Vec<&str> = error_body["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap())
        .collect();
    for code in ["csrf_token_missing", "not_found", "run_refused", "internal"] {
        assert!(codes.contains(&code), "{codes:?}");
    }
    assert_eq!(codes, api_types::ERROR_CODES);
}
