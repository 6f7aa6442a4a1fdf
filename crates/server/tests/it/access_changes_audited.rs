//! Issue 11, finding 4: no action without its audit entry. With every audit append failing (a
//! trigger on the test database, as the review reproduced it), each change to people, roles,
//! ownership, keys, share links and sessions is refused and nothing changed.

use auth::Role;
use storage::people::PeopleStore;
use storage::{AccountId, AuditLog};

use crate::support::{Caller, Harness, person_id};

fn fail_every_audit_append(harness: &Harness) {
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    connection
        .execute_batch(
            "CREATE TRIGGER test_audit_fails BEFORE INSERT ON audit_log
             BEGIN SELECT RAISE(ABORT, 'simulated audit failure'); END;",
        )
        .unwrap();
}

fn json(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_change_whose_audit_entry_cannot_be_written_does_not_happen() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let viewer = person_id(Role::Viewer);
    let account = AccountId::parse("acct").unwrap();
    // Things to revoke, made while the audit still works.
    let key = harness
        .call(
            "POST",
            "/api/keys",
            &owner,
            json(serde_json::json!({"name": "ci", "role": "viewer"})),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text());
    let key_id = key.json()["key_id"].as_str().unwrap().to_owned();
    let run = harness.parked_run("acct");
    let share = harness
        .call(
            "POST",
            &format!("/api/runs/{}/shares", run.as_str()),
            &owner,
            None,
        )
        .await;
    assert_eq!(share.status, 201, "{}", share.text());
    let share_id = share.json()["id"].as_str().unwrap().to_owned();
    let viewer_session = harness.credentials(Caller::Person(Role::Viewer));
    let entries_before = harness.store.audit_entries().unwrap().len();
    let people_before = harness.store.people(&account).unwrap();
    let keys_before = harness.store.api_keys(&account).unwrap();
    let shares_before = harness.store.share_links(&account).unwrap();

    fail_every_audit_append(&harness);
    let attempts = [
        (
            "POST",
            "/api/people".to_owned(),
            json(serde_json::json!({
                "display_name": "Unaudited", "email": "unaudited@example.test", "role": "viewer"
            })),
        ),
        (
            "PUT",
            format!("/api/people/{viewer}/role"),
            json(serde_json::json!({"role": "member"})),
        ),
        (
            "POST",
            "/api/ownership".to_owned(),
            json(serde_json::json!({"new_owner": person_id(Role::Admin)})),
        ),
        (
            "POST",
            "/api/keys".to_owned(),
            json(serde_json::json!({"name": "k2", "role": "viewer"})),
        ),
        ("DELETE", format!("/api/keys/{key_id}"), None),
        ("POST", format!("/api/runs/{}/shares", run.as_str()), None),
        ("DELETE", format!("/api/shares/{share_id}"), None),
        ("DELETE", format!("/api/people/{viewer}/sessions"), None),
        ("DELETE", format!("/api/people/{viewer}"), None),
    ];
    for (method, path, body) in attempts {
        let answer = harness.call(method, &path, &owner, body).await;
        assert_eq!(answer.status, 500, "{method} {path}: {}", answer.text());
    }
    assert_eq!(harness.store.people(&account).unwrap(), people_before);
    assert_eq!(harness.store.api_keys(&account).unwrap(), keys_before);
    assert_eq!(harness.store.share_links(&account).unwrap(), shares_before);
    assert_eq!(harness.store.audit_entries().unwrap().len(), entries_before);
    // The viewer's session still works: revoking it was refused too.
    let still = harness
        .call("GET", "/api/runs", &viewer_session, None)
        .await;
    assert_eq!(still.status, 200, "{}", still.text());
}
