//! Security headers on every answer: pages, JSON, errors, redirects, not-found and share links.

use auth::Role;
use server::SECURITY_HEADERS;

use crate::support::{Caller, Credentials, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn security_headers_on_every_kind_of_answer() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let answers = [
        harness
            .call("GET", "/signin", &Credentials::None, None)
            .await,
        harness.call("GET", "/api/runs", &member, None).await,
        harness
            .call("GET", "/api/runs", &Credentials::None, None)
            .await,
        harness
            .call("GET", "/no/such/page", &Credentials::None, None)
            .await,
        harness
            .call("GET", "/s/nothing", &Credentials::None, None)
            .await,
        harness.call("GET", "/", &member, None).await,
    ];
    for answer in &answers {
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(
                answer.header(name).as_deref(),
                Some(value),
                "{name} missing on a {} answer",
                answer.status
            );
        }
    }
    assert_eq!(
        SECURITY_HEADERS[0],
        (
            "content-security-policy",
            "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn error_answers_carry_a_request_id_and_no_detail() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let answer = harness
        .call("GET", "/api/runs/run-secret-name", &member, None)
        .await;
    assert_eq!(answer.status, 404);
    let body = answer.json();
    assert_eq!(body["request_id"].as_str().unwrap().len(), 16);
    assert!(
        !answer.text().contains("run-secret-name"),
        "{}",
        answer.text()
    );
    let page = harness.call("GET", "/no/such/page", &member, None).await;
    assert!(page.text().contains("Request id"), "{}", page.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn head_requests_follow_the_get_routes_policy() {
    let harness = Harness::new();
    let anonymous = harness
        .call("HEAD", "/api/runs", &Credentials::None, None)
        .await;
    assert_eq!(anonymous.status, 401);
    let member = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        harness
            .call("HEAD", "/api/runs", &member, None)
            .await
            .status,
        200
    );
    assert_eq!(
        harness
            .call("HEAD", "/signin", &Credentials::None, None)
            .await
            .status,
        200
    );
}
