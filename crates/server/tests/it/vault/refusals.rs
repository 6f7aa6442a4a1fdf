//! What the vault's routes refuse and what they log (G16, G19, G25): values too short to
//! scrub without masking ordinary text, reserved and malformed names (never repeated, never
//! logged), console names trimmed, and each write's audit entry built on the blocking pool and
//! logged at error level, by name, when it cannot be written.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use auth::{ApproveLinkKey, CsrfKey, KeyRing, Role, TlsMode};
use redact::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};
use server::{AppOptions, AppState, Backends, ServerKeys};
use storage::AuditLog;
use tower::ServiceExt;
use vault::Vault;

use crate::support::{ACCOUNT, Answer, Caller, Credentials, Harness, VAULT_VALUE, request};
use crate::vault::{
    CONNECTION_KEY, MODEL_KEY, NEW_VALUE, assert_audit_holds_no_value, assert_no_value,
    connection_body, form, json_body,
};

#[tokio::test(flavor = "multi_thread")]
async fn g16_values_shorter_than_eight_bytes_are_refused_with_a_reason_and_never_repeated() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let cases = [
        (
            "PUT",
            "/api/vault/secrets/SHORT_TOKEN",
            json_body(serde_json::json!({"value": "true"})),
        ),
        (
            "PUT",
            "/api/vault/connections/payments",
            json_body(serde_json::json!({
                "fields": {"api_key": CONNECTION_KEY, "region": "eu-wes7"}
            })),
        ),
        (
            "PUT",
            "/api/vault/model-keys/anthropic",
            json_body(serde_json::json!({"value": "1234567"})),
        ),
    ];
    for (method, path, body) in cases {
        let refused = harness.call(method, path, &admin, body).await;
        assert_eq!(refused.status, 400, "{path}: {}", refused.text());
        let error = refused.json()["error"].as_str().unwrap().to_owned();
        assert!(
            error.contains("at least 8 bytes") && error.contains("step's inputs"),
            "{error}"
        );
        assert_no_value(&refused, path);
        assert!(
            !error.contains("eu-wes7") && !error.contains("1234567"),
            "{error}"
        );
    }
    let form_refused = harness
        .call(
            "POST",
            "/vault/secrets",
            &admin,
            form("name=SHORT_TOKEN&value=Zq7%23xW%21"),
        )
        .await;
    assert_eq!(form_refused.status, 400, "{}", form_refused.text());
    assert!(!form_refused.text().contains("Zq7#xW!"));
    assert_eq!(names_of_secrets(&harness), ["DEPLOY_TOKEN"]);
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
}

fn names_of_secrets(harness: &Harness) -> Vec<String> {
    let mut names: Vec<String> = harness
        .vault
        .secrets()
        .list(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap()
        .into_iter()
        .map(|info| info.name)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_reserved_secret_names_are_refused_and_console_names_are_trimmed() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    for reserved in [
        "PATH",
        "LD_PRELOAD",
        "PYTHONPATH",
        "CONN_PAYMENTS_KEY",
        "STEPWARD_X",
    ] {
        let refused = harness
            .call(
                "PUT",
                &format!("/api/vault/secrets/{reserved}"),
                &admin,
                json_body(serde_json::json!({"value": NEW_VALUE})),
            )
            .await;
        assert_eq!(refused.status, 400, "{reserved}: {}", refused.text());
        assert!(
            refused.json()["error"]
                .as_str()
                .unwrap()
                .contains("process environment"),
            "{}",
            refused.text()
        );
    }
    // A name pasted with spaces around it is trimmed, as the alias and the provider are.
    let set = harness
        .call(
            "POST",
            "/vault/secrets",
            &admin,
            form(&format!("name=%20TRIMMED_TOKEN%20&value={NEW_VALUE}")),
        )
        .await;
    assert_eq!(set.status, 303, "{}", set.text());
    assert_eq!(
        names_of_secrets(&harness),
        ["DEPLOY_TOKEN", "TRIMMED_TOKEN"]
    );
}

/// Every event logged on the current thread while it is the default subscriber: its level and
/// its fields as `name=value` text.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl CapturedLog {
    fn events(&self) -> Vec<(tracing::Level, String)> {
        self.0.lock().unwrap().clone()
    }
}

struct FieldText<'text>(&'text mut String);

impl tracing::field::Visit for FieldText<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl tracing::Subscriber for CapturedLog {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = String::new();
        event.record(&mut FieldText(&mut text));
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The harness's vault as the server's secret source, recording the thread of every
/// `account_values` (the call that builds an account's scrub set, again after every vault
/// write) and failing it, and the generation, when told to.
struct WatchedSecrets {
    vault: Arc<Vault>,
    threads: Mutex<Vec<ThreadId>>,
    fail: AtomicBool,
}

impl SecretSource for WatchedSecrets {
    fn resolve(
        &self,
        account_id: &ids::AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        self.vault.resolve(account_id, request)
    }

    fn account_values(&self, account_id: &ids::AccountId) -> Result<Vec<SecretValue>, SourceError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        if self.fail.load(Ordering::SeqCst) {
            return Err(SourceError::Unavailable {
                detail: "the test's source is told to fail".to_owned(),
            });
        }
        self.vault.account_values(account_id)
    }

    fn generation(&self, account_id: &ids::AccountId) -> Result<u64, SourceError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(SourceError::Unavailable {
                detail: "the test's source is told to fail".to_owned(),
            });
        }
        self.vault.generation(account_id)
    }
}

/// A router over the harness's store, engine and vault, with `secrets` as its secret source.
fn watched_router(harness: &Harness) -> (axum::Router, Arc<WatchedSecrets>) {
    let secrets = Arc::new(WatchedSecrets {
        vault: harness.vault.clone(),
        threads: Mutex::new(Vec::new()),
        fail: AtomicBool::new(false),
    });
    let engine = Arc::new(harness.engine_over(redact::ScrubSets::new(secrets.clone())));
    let state = AppState::new(
        AppOptions::new(TlsMode::PlainHttp, server::StepIsolation::Sandboxed),
        Backends {
            store: harness.store.clone(),
            engine,
            vault: Some(harness.vault.clone()),
            workflows: None,
            clock: harness.clock.clone(),
            models: None,
        },
        ServerKeys {
            csrf: CsrfKey::decode_key_file(&harness.csrf_key.dangerously_encode_key_file())
                .unwrap(),
            approve_links: KeyRing::new(ApproveLinkKey::generate().unwrap()),
        },
    );
    (server::router(state), secrets)
}

async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    credentials: &Credentials,
    body: Option<(&str, String)>,
) -> Answer {
    let response = app
        .clone()
        .oneshot(request(method, path, credentials, body))
        .await
        .unwrap();
    Answer::read(response).await
}

/// One thread runs the requests (`current_thread`), so any audit built on it, rather than on
/// the blocking pool, is seen.
#[tokio::test]
async fn g25_vault_writes_and_their_audit_entries_run_on_the_blocking_pool() {
    let harness = Harness::new();
    let (app, secrets) = watched_router(&harness);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let calls = [
        (
            "PUT",
            "/api/vault/secrets/GITHUB_TOKEN",
            json_body(serde_json::json!({"value": NEW_VALUE})),
        ),
        ("PUT", "/api/vault/connections/payments", connection_body()),
        ("POST", "/api/vault/connections/payments/revoke", None),
        ("DELETE", "/api/vault/connections/payments", None),
        (
            "PUT",
            "/api/vault/model-keys/anthropic",
            json_body(serde_json::json!({"value": MODEL_KEY})),
        ),
        ("DELETE", "/api/vault/model-keys/anthropic", None),
        ("DELETE", "/api/vault/secrets/GITHUB_TOKEN", None),
    ];
    for (method, path, body) in calls {
        let answer = send(&app, method, path, &admin, body).await;
        assert!(answer.status < 300, "{method} {path}: {}", answer.text());
    }
    let request_thread = std::thread::current().id();
    let threads = secrets.threads.lock().unwrap().clone();
    assert!(
        threads.len() >= 7,
        "the account's set is rebuilt after every vault write: {threads:?}"
    );
    assert!(
        threads.iter().all(|thread| *thread != request_thread),
        "an audit entry opened every value of the account on the request's thread"
    );
    let audited = assert_audit_holds_no_value(&harness)
        .into_iter()
        .filter(|entry| entry.action.starts_with("vault."))
        .count();
    assert_eq!(audited, 7);
}

#[tokio::test]
async fn g25_a_vault_write_is_refused_when_its_audit_entry_cannot_be_built() {
    // The account's redactor cannot be built (its secret source fails), so no audit entry can
    // be written: the write is refused before it changes anything (issue 11, finding 4; this
    // test once pinned the old behaviour, where the write stayed and an error was logged).
    let log = CapturedLog::default();
    let _default = tracing::subscriber::set_default(log.clone());
    let harness = Harness::new();
    let (app, secrets) = watched_router(&harness);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    secrets.fail.store(true, Ordering::SeqCst);
    let set = send(
        &app,
        "PUT",
        "/api/vault/secrets/AUDIT_FAILS_TOKEN",
        &admin,
        json_body(serde_json::json!({"value": NEW_VALUE})),
    )
    .await;
    assert_eq!(set.status, 500, "{}", set.text());
    assert!(!set.text().contains(NEW_VALUE));
    assert_eq!(names_of_secrets(&harness), ["DEPLOY_TOKEN"]);
    let removed = send(
        &app,
        "DELETE",
        "/api/vault/secrets/DEPLOY_TOKEN",
        &admin,
        None,
    )
    .await;
    assert_eq!(removed.status, 500, "{}", removed.text());
    assert_eq!(names_of_secrets(&harness), ["DEPLOY_TOKEN"]);
    for (_, text) in &log.events() {
        assert!(
            !text.contains(NEW_VALUE) && !text.contains(VAULT_VALUE),
            "{text}"
        );
    }
    assert!(
        harness
            .store
            .audit_entries()
            .unwrap()
            .iter()
            .all(|entry| !entry.action.starts_with("vault.")),
        "no entry was half-written"
    );
}

#[tokio::test]
async fn g19_missing_and_malformed_vault_names_reach_neither_the_answer_nor_the_log() {
    let log = CapturedLog::default();
    let _default = tracing::subscriber::set_default(log.clone());
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    // The marker holds letters a request id (hex) never has, so an id cannot look like it.
    let cases = [
        ("DELETE", "/api/vault/secrets/GONE_TOKEN_ZQ4711", 404),
        ("DELETE", "/api/vault/connections/gone_zq4711", 404),
        ("POST", "/api/vault/connections/gone_zq4711/revoke", 404),
        ("DELETE", "/api/vault/model-keys/gone-zq4711", 404),
        ("POST", "/vault/secrets/GONE_TOKEN_ZQ4711/remove", 404),
        // Names the vault does not accept, as a pasted value would be.
        ("DELETE", "/api/vault/secrets/sk-live-zq4711", 400),
        ("DELETE", "/api/vault/connections/Sk-Live-ZQ4711", 400),
        ("POST", "/api/vault/connections/Sk-Live-ZQ4711/revoke", 400),
        ("DELETE", "/api/vault/model-keys/Sk_Live_ZQ4711", 400),
        ("POST", "/vault/secrets/sk-live-zq4711/remove", 400),
        ("POST", "/vault/connections/Sk-Live-ZQ4711/revoke", 400),
    ];
    for (method, path, status) in cases {
        let answer = harness.call(method, path, &admin, None).await;
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.text());
        assert!(
            !answer.text().to_lowercase().contains("zq4711"),
            "{path}: {}",
            answer.text()
        );
    }
    let events = log.events();
    let refused = events
        .iter()
        .filter(|(_, text)| text.contains("request refused"))
        .count();
    assert_eq!(refused, cases.len(), "{events:?}");
    for (_, text) in &events {
        assert!(
            !text.to_lowercase().contains("zq4711"),
            "a submitted name was logged: {text}"
        );
    }
}
