//! G26: people and roles through the API: invitations with a one-time link, role changes
//! within the rules, removal, and the ownership transfer; every change audited.

use auth::Role;
use storage::AuditLog;
use storage::people::{PeopleStore, RoleName};

use crate::support::{Caller, Credentials, Harness, person_id};

fn json_body(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

fn audited(harness: &Harness, action: &str) -> Vec<serde_json::Value> {
    harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == action)
        .map(|entry| entry.detail)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_invited_person_signs_in_with_the_link_once_shown() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let invited = harness
        .call(
            "POST",
            "/api/people",
            &admin,
            json_body(serde_json::json!({
                "display_name": "Nina", "email": "Nina@Example.test", "role": "member"
            })),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.text());
    let body = invited.json();
    let link = body["sign_in_path"].as_str().unwrap().to_owned();
    let person = harness
        .store
        .person(body["person_id"].as_str().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (person.role, person.email.as_str()),
        (RoleName::Member, "nina@example.test")
    );
    assert!(person.password_hash.is_none());
    let form = harness.call("GET", &link, &Credentials::None, None).await;
    assert_eq!(form.status, 200);
    assert!(form.text().contains("Nina"));
    let listed = harness.call("GET", "/api/people", &admin, None).await;
    assert!(!listed.text().contains(link.trim_start_matches("/welcome/")));
    assert_eq!(audited(&harness, "person.invite").len(), 1);
    let again = harness
        .call(
            "POST",
            "/api/people",
            &admin,
            json_body(serde_json::json!({
                "display_name": "Nina again", "email": "nina@example.test", "role": "viewer"
            })),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_no_one_grants_above_their_role_nor_the_owner_role() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    for role in ["owner"] {
        let answer = harness
            .call(
                "POST",
                "/api/people",
                &admin,
                json_body(serde_json::json!({
                    "display_name": "X", "email": "x@example.test", "role": role
                })),
            )
            .await;
        assert_eq!(answer.status, 403, "{role}: {}", answer.text());
    }
    let to_owner = harness
        .call(
            "PUT",
            &format!("/api/people/{}/role", person_id(Role::Member)),
            &admin,
            json_body(serde_json::json!({"role": "owner"})),
        )
        .await;
    assert_eq!(to_owner.status, 403);
    let demote_owner = harness
        .call(
            "PUT",
            &format!("/api/people/{}/role", person_id(Role::Owner)),
            &admin,
            json_body(serde_json::json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(demote_owner.status, 403);
    let remove_owner = harness
        .call(
            "DELETE",
            &format!("/api/people/{}", person_id(Role::Owner)),
            &admin,
            None,
        )
        .await;
    assert_eq!(remove_owner.status, 403);
    let roles: Vec<RoleName> = harness
        .store
        .people(&storage::AccountId::parse("acct").unwrap())
        .unwrap()
        .into_iter()
        .map(|person| person.role)
        .collect();
    assert_eq!(
        roles
            .iter()
            .filter(|role| **role == RoleName::Owner)
            .count(),
        1
    );
    assert!(audited(&harness, "role.change").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_role_change_is_audited_and_effective_on_the_next_request() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    assert_eq!(
        harness
            .call("GET", "/api/shares", &viewer, None)
            .await
            .status,
        403
    );
    let changed = harness
        .call(
            "PUT",
            &format!("/api/people/{}/role", person_id(Role::Viewer)),
            &admin,
            json_body(serde_json::json!({"role": "member"})),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text());
    assert_eq!(changed.json()["role"], "member");
    assert_eq!(
        harness
            .call("GET", "/api/shares", &viewer, None)
            .await
            .status,
        200
    );
    let entries = audited(&harness, "role.change");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["from"], "viewer");
    assert_eq!(entries[0]["to"], "member");
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_removed_person_loses_their_session_at_once() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let member = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        200
    );
    let removed = harness
        .call(
            "DELETE",
            &format!("/api/people/{}", person_id(Role::Member)),
            &admin,
            None,
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text());
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        401
    );
    assert_eq!(audited(&harness, "person.remove").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_ownership_moves_only_by_the_owners_transfer() {
    let harness = Harness::new();
    let admin_key = harness.credentials(Caller::Key(Role::Admin));
    let body = json_body(serde_json::json!({"new_owner": person_id(Role::Member)}));
    let by_key = harness
        .call("POST", "/api/ownership", &admin_key, body.clone())
        .await;
    assert_eq!(by_key.status, 403);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let by_admin = harness
        .call("POST", "/api/ownership", &admin, body.clone())
        .await;
    assert_eq!(by_admin.status, 403);
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let transferred = harness.call("POST", "/api/ownership", &owner, body).await;
    assert_eq!(transferred.status, 204, "{}", transferred.text());
    let role_of = |id: String| harness.store.person(&id).unwrap().unwrap().role;
    assert_eq!(role_of(person_id(Role::Owner)), RoleName::Admin);
    assert_eq!(role_of(person_id(Role::Member)), RoleName::Owner);
    let entries = audited(&harness, "ownership.transfer");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["to"], person_id(Role::Member));
    // The old owner's very next request carries the admin role: ownership is gone.
    let again = harness
        .call(
            "POST",
            "/api/ownership",
            &owner,
            json_body(serde_json::json!({"new_owner": person_id(Role::Admin)})),
        )
        .await;
    assert_eq!(again.status, 403);
}
