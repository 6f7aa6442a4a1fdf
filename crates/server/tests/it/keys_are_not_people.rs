//! Issue 11, finding 5: a key never becomes a person. An admin key cannot invite a person (so
//! it never receives a one-time sign-in link to redeem itself), and a key cannot mint keys.

use auth::Role;

use crate::support::{Caller, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_key_can_neither_invite_a_person_nor_create_a_key() {
    let harness = Harness::new();
    let key = harness.credentials(Caller::Key(Role::Admin));
    let invite = harness
        .call(
            "POST",
            "/api/people",
            &key,
            Some((
                "application/json",
                serde_json::json!({
                    "display_name": "Owner Assistant",
                    "email": "assistant@evil.test",
                    "role": "admin",
                })
                .to_string(),
            )),
        )
        .await;
    assert_eq!(invite.status, 403, "{}", invite.text());
    assert!(!invite.text().contains("/welcome/"));
    let child = harness
        .call(
            "POST",
            "/api/keys",
            &key,
            Some((
                "application/json",
                serde_json::json!({"name": "child", "role": "admin"}).to_string(),
            )),
        )
        .await;
    assert_eq!(child.status, 403, "{}", child.text());
    // A person with the same role still may.
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let made = harness
        .call(
            "POST",
            "/api/keys",
            &admin,
            Some((
                "application/json",
                serde_json::json!({"name": "ci", "role": "viewer"}).to_string(),
            )),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
}
