//! G26: API keys are shown once, stored hashed, carry a role, are revocable, record their last
//! use, and a key never creates a key above its own role; creation, use and revocation are
//! audited under the key.

use auth::Role;
use storage::AuditLog;
use storage::people::PeopleStore;

use crate::support::{Caller, Credentials, Harness};

fn key_body(role: &str) -> Option<(&'static str, String)> {
    Some((
        "application/json",
        serde_json::json!({"name": "deploy", "role": role}).to_string(),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_key_is_shown_once_works_and_dies_on_revocation() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let created = harness
        .call("POST", "/api/keys", &admin, key_body("member"))
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    let key_id = body["key_id"].as_str().unwrap().to_owned();
    let text = body["key"].as_str().unwrap().to_owned();
    let stored = harness.store.api_key(&key_id).unwrap().unwrap();
    assert!(!format!("{stored:?}").contains(text.rsplit('_').next().unwrap()));
    let listed = harness.call("GET", "/api/keys", &admin, None).await;
    assert!(!listed.text().contains(&text));
    let key = Credentials::Key { text: text.clone() };
    assert_eq!(
        harness.call("GET", "/api/runs", &key, None).await.status,
        200
    );
    assert!(
        harness
            .store
            .api_key(&key_id)
            .unwrap()
            .unwrap()
            .last_used_at
            .is_some(),
        "a use is recorded"
    );
    let revoked = harness
        .call("DELETE", &format!("/api/keys/{key_id}"), &admin, None)
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text());
    assert_eq!(
        harness.call("GET", "/api/runs", &key, None).await.status,
        401
    );
    let actions: Vec<String> = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .map(|entry| entry.action)
        .filter(|action| action.starts_with("api_key."))
        .collect();
    // Every use of a key is in the log, reads too (issue 11, finding 6), and so is the refused
    // use after the revocation.
    assert_eq!(
        actions,
        vec![
            "api_key.create",
            "api_key.use",
            "api_key.revoke",
            "api_key.refused"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_key_never_creates_a_key_above_its_own_role() {
    // Since issue 11 (finding 5) a key creates no key at all, whatever the role.
    let harness = Harness::new();
    let admin_key = harness.credentials(Caller::Key(Role::Admin));
    for role in ["owner", "admin", "viewer"] {
        let answer = harness
            .call("POST", "/api/keys", &admin_key, key_body(role))
            .await;
        assert_eq!(answer.status, 403, "{role}: {}", answer.text());
    }
    let member_key = harness.credentials(Caller::Key(Role::Member));
    let by_member = harness
        .call("POST", "/api/keys", &member_key, key_body("viewer"))
        .await;
    assert_eq!(by_member.status, 403);
    let entries = harness.store.audit_entries().unwrap();
    assert!(!entries.iter().any(|entry| entry.action == "api_key.create"));
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_key_cannot_start_a_session_or_act_as_a_person() {
    let harness = Harness::new();
    let admin_key = harness.credentials(Caller::Key(Role::Admin));
    for (method, path) in [
        ("GET", "/api/sessions"),
        ("POST", "/api/signout"),
        ("GET", "/"),
        ("POST", "/api/ownership"),
    ] {
        let answer = harness.call(method, path, &admin_key, None).await;
        assert_eq!(answer.status, 403, "{method} {path}: {}", answer.text());
    }
}
