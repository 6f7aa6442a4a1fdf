//! Issue 11, finding 5 (the rest): a key records the person who created it and shows it;
//! removing a person revokes every key they created (the console's confirmation lists them,
//! and a key kept is re-assigned to the person who removes, audited); demoting a person
//! revokes their keys above the new role.

use auth::Role;
use storage::AuditLog;
use storage::people::PeopleStore;

use crate::support::{Caller, Credentials, Harness, person_id};

fn json(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

fn form(body: &str) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body.to_owned()))
}

fn csrf_of(credentials: &Credentials) -> String {
    match credentials {
        Credentials::Session { csrf, .. } => csrf.clone(),
        Credentials::None | Credentials::Key { .. } => panic!("not a session"),
    }
}

/// Creates a key as `creator` and answers (key id, key credentials).
async fn key_made_by(
    harness: &Harness,
    creator: &Credentials,
    name: &str,
    role: &str,
) -> (String, Credentials) {
    let created = harness
        .call(
            "POST",
            "/api/keys",
            creator,
            json(serde_json::json!({"name": name, "role": role})),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    (
        body["key_id"].as_str().unwrap().to_owned(),
        Credentials::Key {
            text: body["key"].as_str().unwrap().to_owned(),
        },
    )
}

async fn works(harness: &Harness, key: &Credentials) -> bool {
    let answer = harness.call("GET", "/api/runs", key, None).await;
    match answer.status {
        200 => true,
        401 => false,
        other => panic!("unexpected {other}: {}", answer.text()),
    }
}

fn revoked(harness: &Harness, key_id: &str) -> bool {
    harness
        .store
        .api_key(key_id)
        .unwrap()
        .unwrap()
        .revoked_at
        .is_some()
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_key_records_and_shows_the_person_who_created_it() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let (key_id, _) = key_made_by(&harness, &admin, "deploy bot", "member").await;
    let listed = harness.call("GET", "/api/keys", &admin, None).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let keys = listed.json();
    let key = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["key_id"] == key_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(key["created_by"], person_id(Role::Admin).as_str());
    let admin_name = harness
        .store
        .person(&person_id(Role::Admin))
        .unwrap()
        .unwrap()
        .display_name;
    assert_eq!(key["created_by_name"], admin_name.as_str());
    let page = harness.call("GET", "/keys", &admin, None).await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(
        page.text()
            .contains(&format!("<td class=\"created-by\">{admin_name}</td>")),
        "{}",
        page.text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_removing_a_person_revokes_every_key_they_created() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let (first_id, first) = key_made_by(&harness, &admin, "ci", "admin").await;
    let (second_id, second) = key_made_by(&harness, &admin, "reports", "viewer").await;
    let (owners_id, owners) = key_made_by(&harness, &owner, "owner's own", "member").await;
    assert!(works(&harness, &first).await && works(&harness, &second).await);

    let removed = harness
        .call(
            "DELETE",
            &format!("/api/people/{}", person_id(Role::Admin)),
            &owner,
            None,
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text());
    assert!(!works(&harness, &first).await);
    assert!(!works(&harness, &second).await);
    assert!(revoked(&harness, &first_id) && revoked(&harness, &second_id));
    // Another person's key is untouched.
    assert!(works(&harness, &owners).await && !revoked(&harness, &owners_id));
    let entries = harness.store.audit_entries().unwrap();
    let removal = entries
        .iter()
        .find(|entry| entry.action == "person.remove")
        .unwrap();
    let mut listed: Vec<String> = removal.detail["revoked_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key.as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    let mut expected = vec![first_id, second_id];
    expected.sort();
    assert_eq!(listed, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_the_removal_confirmation_lists_the_keys_and_a_kept_key_moves_to_the_remover() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let (kept_id, kept) = key_made_by(&harness, &admin, "nightly export", "member").await;
    let (gone_id, gone) = key_made_by(&harness, &admin, "old laptop", "admin").await;
    let admin_id = person_id(Role::Admin);

    let confirmation = harness
        .call("GET", &format!("/people/{admin_id}/remove"), &owner, None)
        .await;
    assert_eq!(confirmation.status, 200, "{}", confirmation.text());
    let page = confirmation.text();
    assert!(
        page.contains("nightly export") && page.contains("old laptop"),
        "{page}"
    );
    assert!(page.contains(&format!("value=\"{kept_id}\"")), "{page}");
    // The people page leads to the confirmation instead of removing at once.
    let people = harness.call("GET", "/people", &owner, None).await;
    assert!(
        people
            .text()
            .contains(&format!("href=\"/people/{admin_id}/remove\"")),
        "{}",
        people.text()
    );

    let csrf = csrf_of(&owner);
    let removed = harness
        .call(
            "POST",
            &format!("/people/{admin_id}/remove"),
            &owner,
            form(&format!("csrf={csrf}&keep_key={kept_id}")),
        )
        .await;
    assert_eq!(removed.status, 303, "{}", removed.text());
    assert!(works(&harness, &kept).await);
    assert!(!works(&harness, &gone).await);
    let listed = harness.call("GET", "/api/keys", &owner, None).await.json();
    let record = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["key_id"] == kept_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(record["created_by"], person_id(Role::Owner).as_str());
    let entries = harness.store.audit_entries().unwrap();
    let removal = entries
        .iter()
        .find(|entry| entry.action == "person.remove")
        .unwrap();
    assert_eq!(removal.detail["revoked_keys"], serde_json::json!([gone_id]));
    assert_eq!(
        removal.detail["reassigned_keys"],
        serde_json::json!([kept_id])
    );
    assert_eq!(
        removal.detail["reassigned_to"],
        person_id(Role::Owner).as_str()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_only_the_removed_persons_own_keys_can_be_kept() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    harness.add_person("p-admin-two", "acct", storage::people::RoleName::Admin);
    let second_admin = harness.session_for("p-admin-two");
    let (owners_key_id, _) = key_made_by(&harness, &owner, "owner admin key", "admin").await;
    let (theirs_id, _) = key_made_by(&harness, &second_admin, "their key", "member").await;
    // Keeping a key the removed person did not create is refused, and nothing changes.
    let refused = harness
        .call(
            "DELETE",
            &format!("/api/people/p-admin-two?keep_keys={owners_key_id}"),
            &admin,
            None,
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(!revoked(&harness, &theirs_id));
    assert!(harness.store.person("p-admin-two").unwrap().is_some());
    // A key removing a person keeps nothing: it cannot hold a key.
    let key = harness.credentials(Caller::Key(Role::Admin));
    let by_key = harness
        .call(
            "DELETE",
            &format!("/api/people/p-admin-two?keep_keys={theirs_id}"),
            &key,
            None,
        )
        .await;
    assert_eq!(by_key.status, 403, "{}", by_key.text());
    assert!(!revoked(&harness, &theirs_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_demoting_a_person_revokes_their_keys_above_the_new_role() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let (admin_key_id, admin_key) = key_made_by(&harness, &admin, "admin key", "admin").await;
    let (member_key_id, member_key) = key_made_by(&harness, &admin, "member key", "member").await;
    let (viewer_key_id, viewer_key) = key_made_by(&harness, &admin, "viewer key", "viewer").await;
    let demoted = harness
        .call(
            "PUT",
            &format!("/api/people/{}/role", person_id(Role::Admin)),
            &owner,
            json(serde_json::json!({"role": "member"})),
        )
        .await;
    assert_eq!(demoted.status, 200, "{}", demoted.text());
    assert!(!works(&harness, &admin_key).await && revoked(&harness, &admin_key_id));
    assert!(works(&harness, &member_key).await && !revoked(&harness, &member_key_id));
    assert!(works(&harness, &viewer_key).await && !revoked(&harness, &viewer_key_id));
    let entries = harness.store.audit_entries().unwrap();
    let change = entries
        .iter()
        .find(|entry| entry.action == "role.change")
        .unwrap();
    assert_eq!(
        change.detail["revoked_keys"],
        serde_json::json!([admin_key_id])
    );
}
