//! Issue 11, finding 4 (the rest): a vault write (agent secrets, connections, model keys,
//! through the API and the console) and a gate decision happen only with their audit entry.
//! With every audit append failing (a trigger on the test database, the real SQLite store),
//! each one is refused and nothing changed: no value set, removed or revoked, no decision
//! recorded, the run still waiting.

use auth::Role;
use storage::models::ModelProviderStore;
use storage::vault::VaultStore;
use storage::{AccountId, AuditLog, DecisionStore, RunStatus, RunStore};

use crate::support::{Caller, Credentials, Harness};

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

fn form(body: &str) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body.to_owned()))
}

/// Names and versions of everything in the account's vault.
fn vault_state(harness: &Harness) -> Vec<String> {
    let mut state = Vec::new();
    for info in harness
        .vault
        .secrets()
        .list(&AccountId::parse("acct").unwrap())
        .unwrap()
    {
        state.push(format!("secret {} v{}", info.name, info.version));
    }
    for info in harness
        .vault
        .connections()
        .list(&AccountId::parse("acct").unwrap())
        .unwrap()
    {
        state.push(format!(
            "connection {} v{} revoked={}",
            info.alias,
            info.version,
            info.revoked_at.is_some()
        ));
    }
    for info in harness
        .vault
        .model_keys()
        .list(&AccountId::parse("acct").unwrap())
        .unwrap()
    {
        state.push(format!("model key {} v{}", info.name, info.version));
    }
    state
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_vault_write_whose_audit_entry_cannot_be_written_does_not_happen() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    // Things to change and remove, made while the audit still works.
    for (path, body) in [
        (
            "/api/vault/secrets/KEPT_TOKEN",
            serde_json::json!({"value": "kept-secret-value-0001"}),
        ),
        (
            "/api/vault/secrets/FORM_TOKEN",
            serde_json::json!({"value": "form-secret-value-0001"}),
        ),
        (
            "/api/vault/connections/billing",
            serde_json::json!({"fields": {"api_key": "billing-value-000001"}}),
        ),
        (
            "/api/vault/model-keys/anthropic",
            serde_json::json!({"value": "model-key-value-000001"}),
        ),
    ] {
        let answer = harness.call("PUT", path, &admin, json(body)).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    }
    let before = vault_state(&harness);
    let account = AccountId::parse("acct").unwrap();
    let generation_before = VaultStore::generation(&*harness.store, &account).unwrap();
    let entries_before = harness.store.audit_entries().unwrap().len();

    fail_every_audit_append(&harness);
    let attempts = [
        (
            "PUT",
            "/api/vault/secrets/NEW_TOKEN",
            json(serde_json::json!({"value": "unaudited-secret-0001"})),
        ),
        (
            "PUT",
            "/api/vault/secrets/KEPT_TOKEN",
            json(serde_json::json!({"value": "unaudited-secret-0002"})),
        ),
        ("DELETE", "/api/vault/secrets/KEPT_TOKEN", None),
        (
            "PUT",
            "/api/vault/connections/billing",
            json(serde_json::json!({"fields": {"api_key": "unaudited-value-0003"}})),
        ),
        ("POST", "/api/vault/connections/billing/revoke", None),
        ("DELETE", "/api/vault/connections/billing", None),
        (
            "PUT",
            "/api/vault/model-keys/anthropic",
            json(serde_json::json!({"value": "unaudited-model-0004"})),
        ),
        ("DELETE", "/api/vault/model-keys/anthropic", None),
    ];
    for (method, path, body) in attempts {
        let answer = harness.call(method, path, &admin, body).await;
        assert_eq!(answer.status, 500, "{method} {path}: {}", answer.text());
    }
    // The console's forms, the other door to the same writes.
    let Credentials::Session { csrf, .. } = &admin else {
        panic!("a person's session has a CSRF token")
    };
    for (path, body) in [
        (
            "/vault/secrets",
            format!("csrf={csrf}&name=FORM_NEW&value=unaudited-form-value-05"),
        ),
        ("/vault/secrets/FORM_TOKEN/remove", format!("csrf={csrf}")),
        ("/vault/connections/billing/revoke", format!("csrf={csrf}")),
    ] {
        let answer = harness.call("POST", path, &admin, form(&body)).await;
        assert!(
            answer.status >= 500,
            "POST {path}: {} {}",
            answer.status,
            answer.text()
        );
    }
    assert_eq!(vault_state(&harness), before);
    assert_eq!(
        VaultStore::generation(&*harness.store, &account).unwrap(),
        generation_before
    );
    assert_eq!(harness.store.audit_entries().unwrap().len(), entries_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_decision_whose_audit_entry_cannot_be_written_is_not_taken() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let key = harness.credentials(Caller::Key(Role::Member));
    let run = harness.parked_run("acct");
    let entries_before = harness.store.audit_entries().unwrap().len();

    fail_every_audit_append(&harness);
    for (credentials, decision) in [(&member, "approve"), (&key, "reject"), (&member, "reject")] {
        let answer = harness
            .call(
                "POST",
                &format!("/api/runs/{}/steps/ship/{decision}", run.as_str()),
                credentials,
                json(serde_json::json!({"note": "unaudited"})),
            )
            .await;
        assert_eq!(answer.status, 500, "{decision}: {}", answer.text());
    }
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    let record = harness.store.run(&run).unwrap().unwrap();
    assert_eq!(record.status, RunStatus::WaitingApproval);
    assert_eq!(harness.store.audit_entries().unwrap().len(), entries_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_model_provider_whose_audit_entry_cannot_be_written_is_not_removed() {
    let harness = Harness::with_model_endpoints(&["127.0.0.1:9"]);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let added = harness
        .call(
            "PUT",
            "/api/models/claude",
            &admin,
            json(serde_json::json!({
                "provider": "anthropic",
                "base_url": "http://127.0.0.1:9",
                "key": "model-key-value-000002",
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    let before = vault_state(&harness);
    let account = AccountId::parse("acct").unwrap();
    let providers_before = harness.store.model_providers(&account).unwrap().len();

    fail_every_audit_append(&harness);
    let removed = harness
        .call("DELETE", "/api/models/claude", &admin, None)
        .await;
    assert_eq!(removed.status, 500, "{}", removed.text());
    assert_eq!(vault_state(&harness), before, "the model key stands");
    assert_eq!(
        harness.store.model_providers(&account).unwrap().len(),
        providers_before,
        "the provider's settings stand"
    );
}
