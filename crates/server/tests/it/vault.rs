//! The vault over the API and the console (G19, G25, G26): agent secrets, connections and
//! model keys. Members see names, admins set, remove and revoke values, no answer (not even a
//! refusal) ever holds a value, another account sees none of them, and every write is audited
//! by name only.

use auth::Role;
use redact::SecretValue;
use storage::AuditLog;

use crate::support::{ACCOUNT, Answer, Caller, Harness, OTHER_ACCOUNT, VAULT_VALUE};

mod refusals;

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
    let stored = harness
        .vault
        .secrets()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
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
    assert_eq!(
        harness
            .vault
            .secrets()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Connections and model keys.
// ---------------------------------------------------------------------------------------------

/// The values these tests submit; none may ever come back out or reach the audit log.
const CONNECTION_KEY: &str = "sk_live_ConnectionKey7Qw3Er5Ty9Ui";
const CONNECTION_URL: &str = "https://user:Pa55wordInUrl4Zx8@payments.example.test";
const MODEL_KEY: &str = "sk-ant-ModelKeyValue2Kj6Hg1Fd8Sa";
const FORM_VALUE: &str = "sk_live_FormConnection5Mn2Bv7Cx0";

const ALL_VALUES: [&str; 5] = [
    CONNECTION_KEY,
    CONNECTION_URL,
    MODEL_KEY,
    FORM_VALUE,
    VAULT_VALUE,
];

fn json_body(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

fn form(body: &str) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body.to_owned()))
}

fn connection_body() -> Option<(&'static str, String)> {
    json_body(serde_json::json!({
        "fields": {"api_key": CONNECTION_KEY, "base-url": CONNECTION_URL}
    }))
}

fn assert_no_value(answer: &Answer, what: &str) {
    let text = answer.text();
    for value in ALL_VALUES {
        assert!(!text.contains(value), "{what} holds a value: {text}");
    }
    // The URL's password alone, in case a part of it were echoed.
    assert!(!text.contains("Pa55wordInUrl4Zx8"), "{what}: {text}");
}

/// Every audit row's detail (and the whole row) is free of every value submitted, and nothing
/// in a vault entry needed scrubbing: the values were never put there in the first place.
fn assert_audit_holds_no_value(harness: &Harness) -> Vec<storage::AuditEntry> {
    let entries = harness.store.audit_entries().unwrap();
    for entry in &entries {
        let row = format!("{entry:?} {}", entry.detail);
        for value in ALL_VALUES {
            assert!(
                !row.contains(value),
                "audit row {} holds a value",
                entry.seq
            );
        }
        assert!(
            !row.contains("Pa55wordInUrl4Zx8"),
            "audit row {}",
            entry.seq
        );
        if entry.action.starts_with("vault.") {
            assert!(
                !row.contains(redact::MASK),
                "audit row {} needed scrubbing: a value was put into it",
                entry.seq
            );
        }
    }
    entries
}

fn names(answer: &Answer, key: &str) -> Vec<String> {
    let mut names: Vec<String> = answer
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_connection_value_never_in_any_response() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let set = harness
        .call(
            "PUT",
            "/api/vault/connections/payments",
            &admin,
            connection_body(),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    assert_eq!(set.json()["alias"], "payments");
    assert_eq!(
        set.json()["fields"],
        serde_json::json!(["api_key", "base-url"])
    );
    assert_eq!(set.json()["revoked"], false);
    assert_no_value(&set, "the set answer");
    let member = harness.credentials(Caller::Person(Role::Member));
    let listed = harness
        .call("GET", "/api/vault/connections", &member, None)
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(names(&listed, "alias"), vec!["payments"]);
    assert_no_value(&listed, "the list");
    // The values were stored, sealed, under the names given.
    let stored = harness
        .vault
        .connections()
        .dangerously_reveal(&ids::AccountId::parse(ACCOUNT).unwrap(), "payments")
        .unwrap();
    let stored: Vec<(String, String)> = stored
        .iter()
        .map(|(field, value)| (field.clone(), value.dangerously_expose().to_owned()))
        .collect();
    assert!(stored.contains(&("api_key".to_owned(), CONNECTION_KEY.to_owned())));
    assert!(stored.contains(&("base-url".to_owned(), CONNECTION_URL.to_owned())));
    let revoked = harness
        .call(
            "POST",
            "/api/vault/connections/payments/revoke",
            &admin,
            None,
        )
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text());
    let listed = harness
        .call("GET", "/api/vault/connections", &member, None)
        .await;
    assert_eq!(listed.json()[0]["revoked"], true);
    assert!(listed.json()[0]["revoked_at"].is_i64());
    assert_no_value(&listed, "the list after revoking");
    // Setting it again lifts the revocation and bumps the version.
    let again = harness
        .call(
            "PUT",
            "/api/vault/connections/payments",
            &admin,
            connection_body(),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(
        (
            again.json()["revoked"].clone(),
            again.json()["version"].clone()
        ),
        (false.into(), 2.into())
    );
    let removed = harness
        .call("DELETE", "/api/vault/connections/payments", &admin, None)
        .await;
    assert_eq!(removed.status, 204);
    assert_no_value(&removed, "the remove answer");
    for (method, path) in [
        ("DELETE", "/api/vault/connections/payments"),
        ("POST", "/api/vault/connections/payments/revoke"),
    ] {
        let gone = harness.call(method, path, &admin, None).await;
        assert_eq!(gone.status, 404, "{method} {path}");
    }
    assert!(
        harness
            .vault
            .connections()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_refused_connection_bodies_never_repeat_a_value() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let cases = [
        // Not an object of fields: serde would quote the string it found.
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": CONNECTION_KEY}).to_string(),
            "body",
        ),
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": {"api_key": [CONNECTION_KEY]}}).to_string(),
            "body",
        ),
        // A value pasted into the field name.
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": {CONNECTION_KEY: CONNECTION_KEY}}).to_string(),
            "a field is 1 to 64 lower-case letters",
        ),
        // A name the vault does not accept.
        (
            "/api/vault/connections/Pay-Ments",
            serde_json::json!({"fields": {"api_key": CONNECTION_KEY}}).to_string(),
            "an alias is 1 to 64 lower-case letters",
        ),
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": {}}).to_string(),
            "at least one field",
        ),
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": {"api_key": ""}}).to_string(),
            "empty",
        ),
        (
            "/api/vault/connections/payments",
            serde_json::json!({"fields": {"api-key": CONNECTION_KEY, "api_key": MODEL_KEY}})
                .to_string(),
            "same environment variable",
        ),
        (
            "/api/vault/model-keys/Anthropic",
            serde_json::json!({"value": MODEL_KEY}).to_string(),
            "a provider is 1 to 64 lower-case letters",
        ),
        (
            "/api/vault/model-keys/anthropic",
            serde_json::json!({"value": {"nested": MODEL_KEY}}).to_string(),
            "body",
        ),
    ];
    for (path, body, explains) in cases {
        let refused = harness
            .call(
                "PUT",
                path,
                &admin,
                Some(("application/json", body.clone())),
            )
            .await;
        assert_eq!(refused.status, 400, "{path} {body}: {}", refused.text());
        assert!(
            refused.json()["error"].as_str().unwrap().contains(explains),
            "{path} {body}: {}",
            refused.text()
        );
        assert_no_value(&refused, "a refusal");
    }
    let no_content_type = harness
        .call(
            "PUT",
            "/api/vault/connections/payments",
            &admin,
            Some(("text/plain", CONNECTION_KEY.to_owned())),
        )
        .await;
    assert_eq!(no_content_type.status, 400);
    assert_no_value(&no_content_type, "a refusal");
    assert!(
        harness
            .vault
            .connections()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .is_empty()
    );
    assert!(
        harness
            .vault
            .model_keys()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .is_empty()
    );
    assert_audit_holds_no_value(&harness);
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_model_key_value_never_in_any_response() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let set = harness
        .call(
            "PUT",
            "/api/vault/model-keys/anthropic",
            &admin,
            json_body(serde_json::json!({"value": MODEL_KEY})),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    assert_eq!(set.json()["provider"], "anthropic");
    assert_eq!(set.json()["version"], 1);
    assert_no_value(&set, "the set answer");
    let member = harness.credentials(Caller::Key(Role::Member));
    let listed = harness
        .call("GET", "/api/vault/model-keys", &member, None)
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(names(&listed, "provider"), vec!["anthropic"]);
    assert_no_value(&listed, "the list");
    // Model keys and agent secrets are kept apart.
    let secrets = harness
        .call("GET", "/api/vault/secrets", &member, None)
        .await;
    assert_eq!(names(&secrets, "name"), vec!["DEPLOY_TOKEN"]);
    let removed = harness
        .call("DELETE", "/api/vault/model-keys/anthropic", &admin, None)
        .await;
    assert_eq!(removed.status, 204);
    let again = harness
        .call("DELETE", "/api/vault/model-keys/anthropic", &admin, None)
        .await;
    assert_eq!(again.status, 404);
    assert!(
        harness
            .vault
            .model_keys()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_vault_connection_writes_audited_by_name() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let calls = [
        ("PUT", "/api/vault/connections/payments", connection_body()),
        ("POST", "/api/vault/connections/payments/revoke", None),
        ("DELETE", "/api/vault/connections/payments", None),
        (
            "PUT",
            "/api/vault/model-keys/anthropic",
            json_body(serde_json::json!({"value": MODEL_KEY})),
        ),
        ("DELETE", "/api/vault/model-keys/anthropic", None),
    ];
    for (method, path, body) in calls {
        let answer = harness.call(method, path, &admin, body).await;
        assert!(answer.status < 300, "{method} {path}: {}", answer.text());
    }
    let entries = assert_audit_holds_no_value(&harness);
    let vault_entries: Vec<(String, serde_json::Value)> = entries
        .iter()
        .filter(|entry| entry.action.starts_with("vault."))
        .map(|entry| (entry.action.clone(), entry.detail.clone()))
        .collect();
    assert_eq!(
        vault_entries,
        vec![
            (
                "vault.connection_set".to_owned(),
                serde_json::json!({"alias": "payments", "fields": ["api_key", "base-url"], "version": 1})
            ),
            (
                "vault.connection_revoke".to_owned(),
                serde_json::json!({"alias": "payments"})
            ),
            (
                "vault.connection_remove".to_owned(),
                serde_json::json!({"alias": "payments"})
            ),
            (
                "vault.model_key_set".to_owned(),
                serde_json::json!({"provider": "anthropic", "version": 1})
            ),
            (
                "vault.model_key_remove".to_owned(),
                serde_json::json!({"provider": "anthropic"})
            ),
        ]
    );
    for entry in entries
        .iter()
        .filter(|entry| entry.action.starts_with("vault."))
    {
        assert_eq!(entry.account.as_str(), ACCOUNT);
        assert!(
            matches!(&entry.actor, storage::Actor::Person { id, .. } if id == "p-admin"),
            "{:?}",
            entry.actor
        );
    }
    // The audit log as the API serves it holds no value either.
    let log = harness.call("GET", "/api/audit", &admin, None).await;
    assert_eq!(log.status, 200);
    assert!(log.text().contains("vault.connection_revoke"));
    assert_no_value(&log, "the audit log");
    assert_eq!(
        harness
            .store
            .verify_account_audit(&storage::AccountId::parse(ACCOUNT).unwrap())
            .unwrap(),
        Ok(entries.len() as u64)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_members_list_connection_and_model_key_names_but_only_admins_write() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    harness
        .vault
        .connections()
        .add(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "crm",
            vec![("token".to_owned(), SecretValue::new(CONNECTION_KEY.into()))],
        )
        .unwrap();
    harness
        .vault
        .model_keys()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "openai",
            SecretValue::new(MODEL_KEY.into()),
        )
        .unwrap();
    let writes = [
        ("PUT", "/api/vault/connections/crm", connection_body()),
        ("DELETE", "/api/vault/connections/crm", None),
        ("POST", "/api/vault/connections/crm/revoke", None),
        (
            "PUT",
            "/api/vault/model-keys/openai",
            json_body(serde_json::json!({"value": MODEL_KEY})),
        ),
        ("DELETE", "/api/vault/model-keys/openai", None),
        (
            "POST",
            "/vault/connections",
            form(&format!(
                "alias=crm&field_name_1=token&field_value_1={FORM_VALUE}"
            )),
        ),
        ("POST", "/vault/connections/crm/remove", None),
        ("POST", "/vault/connections/crm/revoke", None),
        (
            "POST",
            "/vault/model-keys",
            form(&format!("provider=openai&value={MODEL_KEY}")),
        ),
        ("POST", "/vault/model-keys/openai/remove", None),
    ];
    for caller in [
        Caller::Person(Role::Member),
        Caller::Person(Role::Viewer),
        Caller::Key(Role::Member),
    ] {
        let credentials = harness.credentials(caller);
        for (method, path, body) in writes.clone() {
            let refused = harness.call(method, path, &credentials, body).await;
            assert_eq!(refused.status, 403, "{method} {path} as {caller:?}");
        }
    }
    for (caller, status) in [
        (Caller::Person(Role::Member), 200),
        (Caller::Key(Role::Member), 200),
        (Caller::Person(Role::Viewer), 403),
        (Caller::Key(Role::Viewer), 403),
        (Caller::Nobody, 401),
    ] {
        let credentials = harness.credentials(caller);
        for path in ["/api/vault/connections", "/api/vault/model-keys"] {
            let answer = harness.call("GET", path, &credentials, None).await;
            assert_eq!(answer.status, status, "GET {path} as {caller:?}");
            assert_no_value(&answer, path);
        }
    }
    // Nothing changed: the connection is there, not revoked, at its first version.
    let connections = harness
        .vault
        .connections()
        .list(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(connections.len(), 1);
    assert_eq!(
        (connections[0].version, connections[0].revoked_at),
        (1, None)
    );
    assert_eq!(
        harness
            .vault
            .model_keys()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .len(),
        1
    );
    let listed = harness
        .call("GET", "/api/vault/connections", &admin, None)
        .await;
    assert_eq!(listed.json()[0]["fields"], serde_json::json!(["token"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_another_account_sees_none_of_the_connections_or_model_keys() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    for (path, body) in [
        ("/api/vault/connections/payments", connection_body()),
        (
            "/api/vault/model-keys/anthropic",
            json_body(serde_json::json!({"value": MODEL_KEY})),
        ),
    ] {
        let set = harness.call("PUT", path, &admin, body).await;
        assert_eq!(set.status, 200, "{}", set.text());
    }
    for caller in [Caller::StrangerPerson, Caller::StrangerKey] {
        let stranger = harness.credentials(caller);
        for path in ["/api/vault/connections", "/api/vault/model-keys"] {
            let listed = harness.call("GET", path, &stranger, None).await;
            assert_eq!(listed.status, 200);
            assert_eq!(listed.json(), serde_json::json!([]), "{path} as {caller:?}");
        }
        for (method, path) in [
            ("POST", "/api/vault/connections/payments/revoke"),
            ("DELETE", "/api/vault/connections/payments"),
            ("DELETE", "/api/vault/model-keys/anthropic"),
        ] {
            let refused = harness.call(method, path, &stranger, None).await;
            assert_eq!(refused.status, 404, "{method} {path} as {caller:?}");
            assert_no_value(&refused, path);
        }
        let page = harness.call("GET", "/vault", &stranger, None).await;
        if caller == Caller::StrangerPerson {
            assert_eq!(page.status, 200);
            assert!(!page.text().contains("payments") && !page.text().contains("anthropic"));
        }
    }
    // The stranger's own connection of the same alias lives in its own account only.
    let stranger_key = harness.credentials(Caller::StrangerKey);
    let theirs = harness
        .call(
            "PUT",
            "/api/vault/connections/payments",
            &stranger_key,
            json_body(serde_json::json!({"fields": {"other": FORM_VALUE}})),
        )
        .await;
    assert_eq!(theirs.status, 200);
    let ours = harness
        .vault
        .connections()
        .list(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(ours.len(), 1);
    assert_eq!(
        (ours[0].fields.clone(), ours[0].version, ours[0].revoked_at),
        (vec!["api_key".to_owned(), "base-url".to_owned()], 1, None)
    );
    assert_eq!(
        harness
            .vault
            .model_keys()
            .list(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        harness
            .vault
            .connections()
            .list(&ids::AccountId::parse(OTHER_ACCOUNT).unwrap())
            .unwrap()[0]
            .fields,
        vec!["other"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_console_connection_form_lists_names_never_values() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let set = harness
        .call(
            "POST",
            "/vault/connections",
            &admin,
            form(&format!(
                "alias=payments&field_name_1=api_key&field_value_1={FORM_VALUE}\
                 &field_name_2=&field_value_2=&field_name_3=region&field_value_3=eu-west-1"
            )),
        )
        .await;
    assert_eq!(set.status, 303, "{}", set.text());
    let model_key = harness
        .call(
            "POST",
            "/vault/model-keys",
            &admin,
            form(&format!("provider=anthropic&value={MODEL_KEY}")),
        )
        .await;
    assert_eq!(model_key.status, 303, "{}", model_key.text());
    let page = harness.call("GET", "/vault", &admin, None).await;
    assert_eq!(page.status, 200);
    let text = page.text();
    for name in ["payments", "api_key", "region", "anthropic", "DEPLOY_TOKEN"] {
        assert!(text.contains(name), "{name} missing from the page");
    }
    assert!(!text.contains("eu-west-1"), "a field value is on the page");
    assert_no_value(&page, "the vault page");
    assert!(text.contains("type=\"password\""));
    assert_eq!(
        text.matches("<script").count(),
        text.matches("<script src=\"/static/").count(),
        "no inline script (CSP): only the console's own files"
    );
    assert!(text.contains("action=\"/vault/connections/payments/revoke\""));
    assert!(text.contains("<td>active</td>"));
    // Revoking through the console shows the state; the values stay unseen.
    let revoked = harness
        .call("POST", "/vault/connections/payments/revoke", &admin, None)
        .await;
    assert_eq!(revoked.status, 303, "{}", revoked.text());
    let page = harness.call("GET", "/vault", &admin, None).await;
    assert!(page.text().contains("<td>revoked</td>"), "{}", page.text());
    assert!(
        !page
            .text()
            .contains("action=\"/vault/connections/payments/revoke\"")
    );
    assert_no_value(&page, "the vault page after revoking");
    // A member sees the names and no write form.
    let member = harness.credentials(Caller::Person(Role::Member));
    let member_page = harness.call("GET", "/vault", &member, None).await;
    assert_eq!(member_page.status, 200);
    assert!(member_page.text().contains("payments") && member_page.text().contains("anthropic"));
    assert!(!member_page.text().contains("type=\"password\""));
    assert_no_value(&member_page, "the member's vault page");
    // A refused form does not repeat what was typed.
    let refused = harness
        .call(
            "POST",
            "/vault/connections",
            &admin,
            form(&format!(
                "alias=Bad%20Alias&field_name_1={FORM_VALUE}&field_value_1={CONNECTION_KEY}"
            )),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert_no_value(&refused, "a refused form");
    let unnamed = harness
        .call(
            "POST",
            "/vault/connections",
            &admin,
            form(&format!(
                "alias=other&field_name_1=&field_value_1={FORM_VALUE}"
            )),
        )
        .await;
    assert_eq!(unnamed.status, 400);
    assert_no_value(&unnamed, "a refused form");
    for path in [
        "/vault/connections/payments/remove",
        "/vault/model-keys/anthropic/remove",
    ] {
        let removed = harness.call("POST", path, &admin, None).await;
        assert_eq!(removed.status, 303, "{path}: {}", removed.text());
    }
    let page = harness.call("GET", "/vault", &admin, None).await;
    assert!(!page.text().contains("payments") && !page.text().contains("anthropic"));
    let actions: Vec<String> = assert_audit_holds_no_value(&harness)
        .into_iter()
        .map(|entry| entry.action)
        .filter(|action| action.starts_with("vault."))
        .collect();
    assert_eq!(
        actions,
        [
            "vault.connection_set",
            "vault.model_key_set",
            "vault.connection_revoke",
            "vault.connection_remove",
            "vault.model_key_remove"
        ]
    );
}
