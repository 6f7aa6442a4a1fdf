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

/// The JSON answer's shape: `code`, `error` and `request_id`, served as JSON.
fn is_error_shape(answer: &crate::support::Answer) -> bool {
    let json_type = answer
        .headers
        .iter()
        .any(|(name, value)| name == "content-type" && value.starts_with(b"application/json"));
    let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    json_type
        && body["code"].as_str().is_some_and(|code| !code.is_empty())
        && body["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty())
        && body["request_id"].is_string()
}

/// server review 3, finding 6, and newcomer 3, friction 6: axum's own rejections (a path
/// value that does not parse, a bad query, a malformed or cut body, a missing or wrong
/// content type) answered plain text. Every `/api/` route, with each kind of bad request,
/// answers an error in the documented JSON shape.
#[tokio::test(flavor = "multi_thread")]
async fn every_api_error_is_the_documented_json_whatever_was_wrong() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let mut plain = Vec::new();
    let mut refused = 0;
    for (method, pattern) in server::registered_routes() {
        // Signing out would end the session the other tries use (their rejections come
        // before any handler all the same).
        if !pattern.starts_with("/api/")
            || pattern.contains("signout")
            || pattern.contains("sessions")
        {
            continue;
        }
        // A path value past any integer the route reads, and query values of the wrong kind.
        let path = pattern
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "99999999999"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let mut tries: Vec<(String, Option<(&str, String)>)> = vec![(
            format!("{path}?from=-1&to=x&after=x&limit=x&before=x"),
            None,
        )];
        if method != "GET" && method != "DELETE" {
            tries.push((
                path.clone(),
                Some(("application/json", "{\"cut".to_owned())),
            ));
            tries.push((
                path.clone(),
                Some(("application/json", "[1, 2]".to_owned())),
            ));
            tries.push((path.clone(), Some(("text/plain", "{}".to_owned()))));
            tries.push((
                path.clone(),
                Some(("application/json", "{\"zz_unknown\": 1}".to_owned())),
            ));
        }
        for (uri, body) in tries {
            let what = format!("{method} {uri} {:?}", body.as_ref().map(|(kind, _)| *kind));
            let answer = harness.call(method, &uri, &owner, body).await;
            if answer.status >= 400 {
                refused += 1;
                if !is_error_shape(&answer) {
                    plain.push(format!(
                        "{what}: {} {}",
                        answer.status,
                        String::from_utf8_lossy(&answer.body)
                    ));
                }
            }
        }
    }
    assert!(
        refused > 100,
        "too few refusals to mean anything: {refused}"
    );
    assert!(
        plain.is_empty(),
        "answers not in the documented JSON shape:\n{}",
        plain.join("\n")
    );
}

/// newcomer 3, friction 6 and issue 36 §10: a field a request does not have is refused with
/// its name, and the document says a decision's note is required.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_field_is_refused_by_name_and_a_decisions_note_is_required() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let answer = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some((
                "application/json",
                r#"{"workflow":"gated","inputz":{}}"#.into(),
            )),
        )
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(answer.json()["code"], "invalid_input");
    let said = answer.json()["error"].as_str().unwrap().to_owned();
    assert!(said.contains("`inputz`"), "{said}");
    let run = harness.parked_run("acct");
    let missing = harness
        .call(
            "POST",
            &format!("/api/runs/{}/steps/ship/approve", run.as_str()),
            &member,
            Some(("application/json", "{}".into())),
        )
        .await;
    assert!(
        missing.status == 422 || missing.status == 400,
        "{}",
        missing.text()
    );
    assert!(missing.json()["error"].as_str().unwrap().contains("note"));
    let document = harness
        .call("GET", "/api/openapi.json", &Credentials::None, None)
        .await
        .json();
    let decision = &document["components"]["schemas"]["DecisionRequest"];
    assert!(
        decision["required"]
            .as_array()
            .is_some_and(|required| required.iter().any(|name| name == "note")),
        "{decision}"
    );
    assert_eq!(decision["properties"]["note"]["minLength"], 1, "{decision}");
}
