//! The vault over the API (G25): members see names, admins set and remove values, no answer
//! ever holds a value, and every write is audited by name only.

use auth::Role;
use storage::AuditLog;

use crate::support::{Caller, Harness, VAULT_VALUE};

const NEW_VALUE: &str = "ghp_NewValue0123456789abcdefXYZ";

#[tokio::test(flavor = "multi_thread")]
async fn g25_vault_values_go_in_and_never_come_out() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let set = harness
        .call(
            "PUT",
            "/api/vault/secrets/GITHUB_TOKEN",
            &admin,
            Some((
                "application/json",
                serde_json::json!({"value": NEW_VALUE}).to_string(),
            )),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    assert_eq!(set.json()["name"], "GITHUB_TOKEN");
    assert!(!set.text().contains(NEW_VALUE));
    let member = harness.credentials(Caller::Person(Role::Member));
    let listed = harness
        .call("GET", "/api/vault/secrets", &member, None)
        .await;
    assert_eq!(listed.status, 200);
    let mut names: Vec<String> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|secret| secret["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["DEPLOY_TOKEN", "GITHUB_TOKEN"]);
    assert!(!listed.text().contains(NEW_VALUE) && !listed.text().contains(VAULT_VALUE));
    let stored = harness.vault.secrets().list("acct").unwrap();
    assert_eq!(stored.len(), 2);
    let removed = harness
        .call("DELETE", "/api/vault/secrets/GITHUB_TOKEN", &admin, None)
        .await;
    assert_eq!(removed.status, 204);
    let again = harness
        .call("DELETE", "/api/vault/secrets/GITHUB_TOKEN", &admin, None)
        .await;
    assert_eq!(again.status, 404);
    let entries = harness.store.audit_entries().unwrap();
    let vault_entries: Vec<_> = entries
        .iter()
        .filter(|entry| entry.action.starts_with("vault."))
        .collect();
    assert_eq!(vault_entries.len(), 2);
    let all = format!("{entries:?}");
    assert!(!all.contains(NEW_VALUE), "a value reached the audit log");
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_only_admins_write_the_vault_and_bad_names_are_refused() {
    let harness = Harness::new();
    let body = Some((
        "application/json",
        serde_json::json!({"value": NEW_VALUE}).to_string(),
    ));
    let member = harness.credentials(Caller::Person(Role::Member));
    let refused = harness
        .call(
            "PUT",
            "/api/vault/secrets/GITHUB_TOKEN",
            &member,
            body.clone(),
        )
        .await;
    assert_eq!(refused.status, 403);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let bad_name = harness
        .call("PUT", "/api/vault/secrets/9-not-a-name", &admin, body)
        .await;
    assert_eq!(bad_name.status, 400, "{}", bad_name.text());
    assert_eq!(harness.vault.secrets().list("acct").unwrap().len(), 1);
}
