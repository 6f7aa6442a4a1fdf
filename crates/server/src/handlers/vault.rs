//! The vault over the API: agent secrets, connections and model keys. Members list names,
//! admins set, remove and revoke; no route ever answers a value, and no refusal repeats what
//! was submitted (G19). Every write is audited by name only (G25).
//!
//! Each route is a thin JSON shell over a function the console's forms call too
//! (`store_secret`, `store_connection`, ...), so both doors keep the same rules and the same
//! audit entries.
//!
//! A write and its audit entry are one transaction of the store (the vault's `_audited`
//! calls): the account's redactor is built first (it opens every value of the account), and
//! when it cannot be built or the entry cannot be appended the write is refused and nothing
//! changes (finding 4 of the server review).

use std::sync::Arc;

use api_types::{
    SetConnectionRequest, SetModelKeyRequest, SetSecretRequest, VaultConnectionView,
    VaultModelKeyView, VaultSecretView,
};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use redact::{Redactor, SecretValue};
use serde_json::json;
use storage::vault::ItemSummary;
use storage::{AccountId, Actor, NewAuditEntry};
use vault::{ConnectionInfo, MIN_VALUE_BYTES, SecretInfo, Vault};

use crate::authn::Authenticated;
use crate::handlers::{account_redactor, blocking};
use crate::state::Shared;
use crate::{AppState, Error};

fn vault_of(shared: &Shared, operation: &'static str) -> Result<Arc<Vault>, Error> {
    shared
        .vault
        .clone()
        .ok_or(Error::VaultUnavailable { operation })
}

/// The vault's refusals of what was submitted become a 400 in the vault's own words about
/// what is allowed. The submitted name is left out on purpose: someone who pasted a value
/// into a name box must not see it repeated back (nor find it in the log). Every other
/// failure keeps its mapping (not found is a 404, whose message leaves the name out too; the
/// rest a 500 with the detail logged only).
pub(crate) fn vault_failure(operation: &'static str) -> impl FnOnce(vault::Error) -> Error {
    move |source| match source {
        vault::Error::InvalidName { kind, rule, .. } => Error::InvalidInput {
            field: kind,
            reason: rule.to_owned(),
        },
        vault::Error::EmptyValue { kind, .. } => Error::InvalidInput {
            field: kind,
            reason: "a value is empty; every value needs at least one character".to_owned(),
        },
        vault::Error::ValueTooShort { kind, .. } => Error::InvalidInput {
            field: kind,
            reason: format!(
                "the vault needs a value of at least {MIN_VALUE_BYTES} bytes: shorter ones match \
                 ordinary text and would be masked everywhere; keep non-secret settings such as \
                 a region in the step's inputs"
            ),
        },
        vault::Error::NoFields { .. } => Error::InvalidInput {
            field: "connection",
            reason: "a connection needs at least one field with a value".to_owned(),
        },
        vault::Error::DuplicateField { .. } => Error::InvalidInput {
            field: "connection field",
            reason: "two fields would reach a step as the same environment variable (field \
                     names that are equal once `-` is read as `_`)"
                .to_owned(),
        },
        other => Error::Vault {
            operation,
            source: other,
        },
    }
}

/// Runs one vault call on the blocking pool (the vault seals and opens values and writes the
/// database synchronously).
async fn with_vault<T: Send + 'static>(
    shared: &Shared,
    operation: &'static str,
    work: impl FnOnce(&Vault) -> Result<T, vault::Error> + Send + 'static,
) -> Result<T, Error> {
    let vault = vault_of(shared, operation)?;
    blocking(operation, move || work(&vault))
        .await?
        .map_err(vault_failure(operation))
}

/// A JSON body that does not parse is refused in our own words: serde's message can quote what
/// was sent, which on these routes is a credential.
pub(crate) fn json_body<T>(
    body: Result<Json<T>, JsonRejection>,
    expected: &'static str,
) -> Result<T, Error> {
    body.map(|Json(request)| request)
        .map_err(|_| Error::InvalidInput {
            field: "body",
            reason: format!("expected a JSON body (Content-Type: application/json) {expected}"),
        })
}

fn secret_view(info: SecretInfo) -> VaultSecretView {
    VaultSecretView {
        name: info.name,
        version: info.version,
        created_at: info.created_at.0,
        updated_at: info.updated_at.0,
    }
}

fn connection_view(info: ConnectionInfo) -> VaultConnectionView {
    VaultConnectionView {
        alias: info.alias,
        fields: info.fields,
        version: info.version,
        revoked: info.revoked_at.is_some(),
        revoked_at: info.revoked_at.map(|at| at.0),
        created_at: info.created_at.0,
        updated_at: info.updated_at.0,
    }
}

fn model_key_view(info: SecretInfo) -> VaultModelKeyView {
    VaultModelKeyView {
        provider: info.name,
        version: info.version,
        created_at: info.created_at.0,
        updated_at: info.updated_at.0,
    }
}

/// Who writes to the vault and under which account, to build the write's audit entry with
/// the account's redactor (built before the write: when it cannot be built, nothing is
/// written).
pub(crate) struct VaultAuditor {
    account: AccountId,
    actor: Actor,
    redactor: Redactor,
    at: storage::Timestamp,
}

impl VaultAuditor {
    /// The entry of `action` with `detail` (names and versions, never a value).
    pub(crate) fn entry(
        &self,
        action: storage::AuditAction,
        detail: &serde_json::Value,
    ) -> NewAuditEntry {
        NewAuditEntry {
            account: self.account.clone(),
            run: None,
            actor: self.redactor.scrub_fields(self.actor.clone()),
            action,
            detail: self.redactor.scrub_json(detail),
            at: self.at,
        }
    }
}

/// Makes a vault write with its audit entry, both in one transaction of the store, on the
/// blocking pool. `write` gets the vault and the auditor, and hands the vault's `_audited`
/// call the entry (or the function that builds it from the item as written). When the
/// account's redactor cannot be built or the entry cannot be appended, the write is refused
/// and nothing is changed: the answer is an error and the vault is as it was (finding 4 of
/// the server review). A refused write (a bad name, not found) writes no entry.
async fn write_audited<T: Send + 'static>(
    state: &AppState,
    authenticated: &Authenticated,
    operation: &'static str,
    write: impl FnOnce(&Vault, &VaultAuditor) -> Result<T, vault::Error> + Send + 'static,
) -> Result<T, Error> {
    let vault = vault_of(&state.shared, operation)?;
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking(operation, move || {
        let auditor = VaultAuditor {
            redactor: account_redactor(&shared, &account)?,
            account,
            actor,
            at: shared.now(),
        };
        write(&vault, &auditor).map_err(vault_failure(operation))
    })
    .await?
}

// ---------------------------------------------------------------------------------------------
// Items of one named value: agent secrets and model keys.
// ---------------------------------------------------------------------------------------------

/// The vault's items that are one value under a name: agent secrets (by name) and model keys
/// (by provider). Both are listed, set and removed alike; only their words differ.
#[derive(Debug, Clone, Copy)]
enum NamedValue {
    Secret,
    ModelKey,
}

impl NamedValue {
    fn list(self, vault: &Vault, account: &AccountId) -> Result<Vec<SecretInfo>, vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().list(account),
            NamedValue::ModelKey => vault.model_keys().list(account),
        }
    }

    fn set(
        self,
        vault: &Vault,
        account: &AccountId,
        name: &str,
        value: SecretValue,
        audit: &vault::ItemAudit<'_>,
    ) -> Result<SecretInfo, vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().set_audited(account, name, value, audit),
            NamedValue::ModelKey => vault.model_keys().set_audited(account, name, value, audit),
        }
    }

    fn remove(
        self,
        vault: &Vault,
        account: &AccountId,
        name: &str,
        audit: &NewAuditEntry,
    ) -> Result<(), vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().remove_audited(account, name, audit),
            NamedValue::ModelKey => vault.model_keys().remove_audited(account, name, audit),
        }
    }

    /// The operations (list, set, remove) as the log and errors name them.
    fn operations(self) -> [&'static str; 3] {
        match self {
            NamedValue::Secret => [
                "list vault secrets",
                "set a vault secret",
                "remove a vault secret",
            ],
            NamedValue::ModelKey => [
                "list vault model keys",
                "set a vault model key",
                "remove a vault model key",
            ],
        }
    }

    /// The audit actions (set, remove) and the detail's key for the name.
    fn audit_words(self) -> (storage::AuditAction, storage::AuditAction, &'static str) {
        match self {
            NamedValue::Secret => (
                storage::AuditAction::VaultSecretSet,
                storage::AuditAction::VaultSecretRemove,
                "name",
            ),
            NamedValue::ModelKey => (
                storage::AuditAction::VaultModelKeySet,
                storage::AuditAction::VaultModelKeyRemove,
                "provider",
            ),
        }
    }
}

async fn named_value_infos(
    state: &AppState,
    authenticated: &Authenticated,
    kind: NamedValue,
) -> Result<Vec<SecretInfo>, Error> {
    let account = authenticated.account();
    let [operation, _, _] = kind.operations();
    with_vault(&state.shared, operation, move |vault| {
        kind.list(vault, &account)
    })
    .await
}

/// Sets the value (encrypted at rest by the vault) and audits its name and version.
async fn store_named_value(
    state: &AppState,
    authenticated: &Authenticated,
    kind: NamedValue,
    name: String,
    value: SecretValue,
) -> Result<SecretInfo, Error> {
    let account = authenticated.account();
    let [_, operation, _] = kind.operations();
    let (action, _, key) = kind.audit_words();
    write_audited(state, authenticated, operation, move |vault, auditor| {
        let audit = |item: &ItemSummary| {
            auditor.entry(action, &json!({key: item.name, "version": item.version}))
        };
        kind.set(vault, &account, &name, value, &audit)
    })
    .await
}

/// Removes the value and audits its name.
async fn delete_named_value(
    state: &AppState,
    authenticated: &Authenticated,
    kind: NamedValue,
    name: String,
) -> Result<(), Error> {
    let account = authenticated.account();
    let [_, _, operation] = kind.operations();
    let (_, action, key) = kind.audit_words();
    write_audited(state, authenticated, operation, move |vault, auditor| {
        let audit = auditor.entry(action, &json!({key: name}));
        kind.remove(vault, &account, &name, &audit)
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Agent secrets.
// ---------------------------------------------------------------------------------------------

/// The account's agent secrets: names, versions and dates.
pub(crate) async fn secret_views(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<Vec<VaultSecretView>, Error> {
    let infos = named_value_infos(state, authenticated, NamedValue::Secret).await?;
    Ok(infos.into_iter().map(secret_view).collect())
}

/// Sets an agent secret (encrypted at rest by the vault) and audits its name and version.
pub(crate) async fn store_secret(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
    value: SecretValue,
) -> Result<VaultSecretView, Error> {
    store_named_value(state, authenticated, NamedValue::Secret, name, value)
        .await
        .map(secret_view)
}

/// Removes an agent secret and audits its name.
pub(crate) async fn delete_secret(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
) -> Result<(), Error> {
    delete_named_value(state, authenticated, NamedValue::Secret, name).await
}

/// `GET /api/vault/secrets`: names, versions and dates.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<VaultSecretView>>, Error> {
    Ok(Json(secret_views(&state, &authenticated).await?))
}

/// `PUT /api/vault/secrets/{name}`: sets a value. The answer and the audit entry carry the
/// name and version, never the value.
pub(crate) async fn set(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    body: Result<Json<SetSecretRequest>, JsonRejection>,
) -> Result<Json<VaultSecretView>, Error> {
    let request = json_body(body, "{\"value\": \"<the secret>\"}")?;
    let value = SecretValue::new(request.value);
    Ok(Json(
        store_secret(&state, &authenticated, name, value).await?,
    ))
}

/// `DELETE /api/vault/secrets/{name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    delete_secret(&state, &authenticated, name).await?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------------------------------------
// Connections.
// ---------------------------------------------------------------------------------------------

/// The account's connections: aliases, field names, versions, dates and revocation.
pub(crate) async fn connection_views(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<Vec<VaultConnectionView>, Error> {
    let account = authenticated.account();
    let connections = with_vault(&state.shared, "list vault connections", move |vault| {
        vault.connections().list(&account)
    })
    .await?;
    Ok(connections.into_iter().map(connection_view).collect())
}

/// Adds a connection, or replaces all its fields (which lifts a revocation), and audits its
/// alias, field names and version.
pub(crate) async fn store_connection(
    state: &AppState,
    authenticated: &Authenticated,
    alias: String,
    fields: Vec<(String, SecretValue)>,
) -> Result<VaultConnectionView, Error> {
    let account = authenticated.account();
    let info = write_audited(
        state,
        authenticated,
        "set a vault connection",
        move |vault, auditor| {
            let audit = |item: &ItemSummary| {
                auditor.entry(
                    storage::AuditAction::VaultConnectionSet,
                    &json!({"alias": item.name, "fields": item.fields, "version": item.version}),
                )
            };
            vault
                .connections()
                .add_audited(&account, &alias, fields, &audit)
        },
    )
    .await?;
    Ok(connection_view(info))
}

/// Removes a connection and its values, and audits its alias.
pub(crate) async fn delete_connection(
    state: &AppState,
    authenticated: &Authenticated,
    alias: String,
) -> Result<(), Error> {
    let account = authenticated.account();
    write_audited(
        state,
        authenticated,
        "remove a vault connection",
        move |vault, auditor| {
            let audit = auditor.entry(
                storage::AuditAction::VaultConnectionRemove,
                &json!({"alias": alias}),
            );
            vault.connections().remove_audited(&account, &alias, &audit)
        },
    )
    .await
}

/// Revokes a connection (runs that ask for it are refused, naming it, until it is set again)
/// and audits its alias.
pub(crate) async fn revoke_connection_by_alias(
    state: &AppState,
    authenticated: &Authenticated,
    alias: String,
) -> Result<(), Error> {
    let account = authenticated.account();
    write_audited(
        state,
        authenticated,
        "revoke a vault connection",
        move |vault, auditor| {
            let audit = auditor.entry(
                storage::AuditAction::VaultConnectionRevoke,
                &json!({"alias": alias}),
            );
            vault.connections().revoke_audited(&account, &alias, &audit)
        },
    )
    .await
}

/// `GET /api/vault/connections`: aliases and field names, never values.
pub(crate) async fn list_connections(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<VaultConnectionView>>, Error> {
    Ok(Json(connection_views(&state, &authenticated).await?))
}

/// `PUT /api/vault/connections/{alias}`: sets every field of the connection. The answer and
/// the audit entry carry the alias and field names, never a value.
pub(crate) async fn set_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(alias): Path<String>,
    body: Result<Json<SetConnectionRequest>, JsonRejection>,
) -> Result<Json<VaultConnectionView>, Error> {
    let request = json_body(body, "{\"fields\": {\"<field name>\": \"<value>\", ...}}")?;
    let fields = request
        .fields
        .into_iter()
        .map(|(field, value)| (field, SecretValue::new(value)))
        .collect();
    Ok(Json(
        store_connection(&state, &authenticated, alias, fields).await?,
    ))
}

/// `DELETE /api/vault/connections/{alias}`.
pub(crate) async fn remove_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(alias): Path<String>,
) -> Result<StatusCode, Error> {
    delete_connection(&state, &authenticated, alias).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/vault/connections/{alias}/revoke`: unlike removing, the values stay stored (and
/// stay in every scrub set), and setting the connection again lifts the revocation.
pub(crate) async fn revoke_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(alias): Path<String>,
) -> Result<StatusCode, Error> {
    revoke_connection_by_alias(&state, &authenticated, alias).await?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------------------------------------
// Model keys.
// ---------------------------------------------------------------------------------------------

/// The providers the account has a key for: names, versions and dates.
pub(crate) async fn model_key_views(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<Vec<VaultModelKeyView>, Error> {
    let infos = named_value_infos(state, authenticated, NamedValue::ModelKey).await?;
    Ok(infos.into_iter().map(model_key_view).collect())
}

/// Sets a provider's key and audits the provider and version.
pub(crate) async fn store_model_key(
    state: &AppState,
    authenticated: &Authenticated,
    provider: String,
    value: SecretValue,
) -> Result<VaultModelKeyView, Error> {
    store_named_value(state, authenticated, NamedValue::ModelKey, provider, value)
        .await
        .map(model_key_view)
}

/// Removes a provider's key and audits the provider.
pub(crate) async fn delete_model_key(
    state: &AppState,
    authenticated: &Authenticated,
    provider: String,
) -> Result<(), Error> {
    delete_named_value(state, authenticated, NamedValue::ModelKey, provider).await
}

/// `GET /api/vault/model-keys`: provider names, never keys.
pub(crate) async fn list_model_keys(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<VaultModelKeyView>>, Error> {
    Ok(Json(model_key_views(&state, &authenticated).await?))
}

/// `PUT /api/vault/model-keys/{provider}`: sets the provider's key. The answer and the audit
/// entry carry the provider and version, never the key.
pub(crate) async fn set_model_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(provider): Path<String>,
    body: Result<Json<SetModelKeyRequest>, JsonRejection>,
) -> Result<Json<VaultModelKeyView>, Error> {
    let request = json_body(body, "{\"value\": \"<the provider's key>\"}")?;
    let value = SecretValue::new(request.value);
    Ok(Json(
        store_model_key(&state, &authenticated, provider, value).await?,
    ))
}

/// `DELETE /api/vault/model-keys/{provider}`.
pub(crate) async fn remove_model_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(provider): Path<String>,
) -> Result<StatusCode, Error> {
    delete_model_key(&state, &authenticated, provider).await?;
    Ok(StatusCode::NO_CONTENT)
}
