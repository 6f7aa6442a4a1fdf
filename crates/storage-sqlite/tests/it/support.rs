//! Test helpers: a temp database and a secret source held in memory.

use std::sync::{Arc, Mutex};

use redact::{
    RunSecrets, ScrubSets, SecretName, SecretRequest, SecretSource, SecretValue, SourceError,
};
use storage_sqlite::SqliteStore;

/// A secret source with fixed connection fields, for tests.
pub struct FixedSource {
    pub fields: Mutex<Vec<(String, String, String)>>,
}

impl FixedSource {
    pub fn with_connection_field(alias: &str, field: &str, value: &str) -> FixedSource {
        FixedSource {
            fields: Mutex::new(vec![(alias.to_owned(), field.to_owned(), value.to_owned())]),
        }
    }
}

impl SecretSource for FixedSource {
    fn resolve(
        &self,
        _account_id: &ids::AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        let fields = self.fields.lock().unwrap();
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for alias in &request.connections {
            let before = found.len();
            for (field_alias, field, value) in fields.iter() {
                if field_alias == alias {
                    found.push((
                        SecretName::ConnectionField {
                            alias: alias.clone(),
                            field: field.clone(),
                        },
                        SecretValue::new(value.clone()),
                    ));
                }
            }
            if found.len() == before {
                missing.push(alias.clone());
            }
        }
        if !missing.is_empty() {
            return Err(SourceError::Missing { names: missing });
        }
        Ok(found)
    }

    fn account_values(
        &self,
        _account_id: &ids::AccountId,
    ) -> Result<Vec<SecretValue>, SourceError> {
        Ok(self
            .fields
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, value)| SecretValue::new(value.clone()))
            .collect())
    }

    fn generation(&self, _account_id: &ids::AccountId) -> Result<u64, SourceError> {
        Ok(0)
    }
}

/// The secrets of one run over a source holding `value` as `payments.api_key`.
pub fn run_secrets(run_id: &str, value: &str) -> RunSecrets {
    let sets = ScrubSets::new(Arc::new(FixedSource::with_connection_field(
        "payments", "api_key", value,
    )));
    RunSecrets::collect(
        &ids::RunId::parse(run_id).unwrap(),
        &ids::AccountId::parse("acct").unwrap(),
        &sets,
        &SecretRequest {
            connections: vec!["payments".into()],
            ..SecretRequest::default()
        },
    )
    .unwrap()
}

/// A fresh database in a temp dir (kept alive by the returned guard).
pub fn temp_store() -> (tempfile::TempDir, SqliteStore) {
    let test_support::store::TempStore { dir, store } = test_support::store::TempStore::new();
    let store = Arc::into_inner(store).unwrap_or_else(|| panic!("a fresh store has one holder"));
    (dir, store)
}

/// An audit entry of `account` that belongs to no run, scrubbed with the account's values.
pub fn account_entry(
    account: &str,
    action: storage::AuditAction,
    actor: storage::Actor,
    detail: serde_json::Value,
    at: i64,
) -> storage::NewAuditEntry {
    let redactor = ScrubSets::new(Arc::new(FixedSource::with_connection_field(
        "payments",
        "api_key",
        "sk_live_support_value",
    )))
    .for_account(&ids::AccountId::parse(account).unwrap())
    .unwrap();
    storage::NewAuditEntry {
        account: storage::AccountId::parse(account).unwrap(),
        run: None,
        actor: redactor.scrub_fields(actor),
        action,
        detail: redactor.scrub_json(&detail),
        at: storage::Timestamp(at),
    }
}

/// Changes the stored database as someone with the file would: the append-only triggers
/// dropped first.
pub fn tamper(path: &std::path::Path, sql: &str) {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .execute_batch(&format!(
            "DROP TRIGGER audit_is_append_only_update; DROP TRIGGER audit_is_append_only_delete;
             {sql}"
        ))
        .unwrap();
}
