//! The vault over the API: agent secrets, connections and model keys. Members list names,
//! admins set, remove and revoke; no route ever answers a value, and no refusal repeats what
//! was submitted (G19). Every write is audited by name only (G25).
//!
//! Each route is a thin JSON shell over a function the console's forms call too
//! (`store_secret`, `store_connection`, ...), so both doors keep the same rules and the same
//! audit entries.
//!
//! A write and its audit entry run together on the blocking pool (the audit builds the
//! account's redactor, which opens every value of the account). They are two writes, not one
//! transaction: the vault's store and the audit log are separate storage traits, so a single
//! transaction would need a new storage call. An audit that fails after its write is logged at
//! error level with the operation and the name (never a value) and the request fails.

use std::sync::Arc;

use api_types::{
    SetConnectionRequest, SetModelKeyRequest, SetSecretRequest, VaultConnectionView,
    VaultModelKeyView, VaultSecretView,
};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use redact::SecretValue;
use serde_json::json;
use vault::{ConnectionInfo, MIN_VALUE_BYTES, SecretInfo, Vault};

use crate::authn::Authenticated;
use crate::handlers::{audit, blocking};
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

/// The audit entry of a vault write: an action and names, never a value. `name` is the
/// secret's name, the alias or the provider, for the error log if the entry cannot be written.
struct VaultAudit {
    action: &'static str,
    name: String,
    detail: serde_json::Value,
}

/// What a vault write that was applied left behind: its result, and the audit failure if its
/// entry could not be written.
struct Applied<T> {
    value: T,
    audit: VaultAudit,
    audit_failure: Option<Error>,
}

/// Applies a vault write, then appends its audit entry, both on the blocking pool. A refused
/// or failed write is not audited. An audit that fails after the write was applied is logged
/// at error level, naming the operation and the item (never a value), and fails the request:
/// the write stays, and a person can see in the log that its entry is missing (G25).
async fn write_and_audit<T: Send + 'static>(
    state: &AppState,
    authenticated: &Authenticated,
    operation: &'static str,
    write: impl FnOnce(&Vault) -> Result<T, vault::Error> + Send + 'static,
    entry: impl FnOnce(&T) -> VaultAudit + Send + 'static,
) -> Result<T, Error> {
    let vault = vault_of(&state.shared, operation)?;
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    let applied = blocking(operation, move || {
        let value = write(&vault).map_err(vault_failure(operation))?;
        let audit_entry = entry(&value);
        let audit_failure = audit(
            &shared,
            &account,
            actor,
            audit_entry.action,
            &audit_entry.detail,
        )
        .err();
        Ok::<_, Error>(Applied {
            value,
            audit: audit_entry,
            audit_failure,
        })
    })
    .await??;
    if let Some(failure) = applied.audit_failure {
        tracing::error!(
            operation,
            action = applied.audit.action,
            name = %applied.audit.name,
            error = %failure,
            "a vault write was applied but its audit entry could not be written"
        );
        return Err(failure);
    }
    Ok(applied.value)
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
    fn list(self, vault: &Vault, account: &str) -> Result<Vec<SecretInfo>, vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().list(account),
            NamedValue::ModelKey => vault.model_keys().list(account),
        }
    }

    fn set(
        self,
        vault: &Vault,
        account: &str,
        name: &str,
        value: SecretValue,
    ) -> Result<SecretInfo, vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().set(account, name, value),
            NamedValue::ModelKey => vault.model_keys().set(account, name, value),
        }
    }

    fn remove(self, vault: &Vault, account: &str, name: &str) -> Result<(), vault::Error> {
        match self {
            NamedValue::Secret => vault.secrets().remove(account, name),
            NamedValue::ModelKey => vault.model_keys().remove(account, name),
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
    fn audit_words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            NamedValue::Secret => ("vault.secret_set", "vault.secret_remove", "name"),
            NamedValue::ModelKey => ("vault.model_key_set", "vault.model_key_remove", "provider"),
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
        kind.list(vault, account.as_str())
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
    write_and_audit(
        state,
        authenticated,
        operation,
        move |vault| kind.set(vault, account.as_str(), &name, value),
        move |info| VaultAudit {
            action,
            name: info.name.clone(),
            detail: json!({key: info.name, "version": info.version}),
        },
    )
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
    let removed = name.clone();
    write_and_audit(
        state,
        authenticated,
        operation,
        move |vault| kind.remove(vault, account.as_str(), &removed),
        move |()| VaultAudit {
            action,
            detail: json!({key: name}),
            name,
        },
    )
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
        vault.connections().list(account.as_str())
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
    let info = write_and_audit(
        state,
        authenticated,
        "set a vault connection",
        move |vault| vault.connections().add(account.as_str(), &alias, fields),
        |info| VaultAudit {
            action: "vault.connection_set",
            name: info.alias.clone(),
            detail: json!({"alias": info.alias, "fields": info.fields, "version": info.version}),
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
    let connection_alias = alias.clone();
    write_and_audit(
        state,
        authenticated,
        "remove a vault connection",
        move |vault| {
            vault
                .connections()
                .remove(account.as_str(), &connection_alias)
        },
        move |()| VaultAudit {
            action: "vault.connection_remove",
            detail: json!({"alias": alias}),
            name: alias,
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
    let connection_alias = alias.clone();
    write_and_audit(
        state,
        authenticated,
        "revoke a vault connection",
        move |vault| {
            vault
                .connections()
                .revoke(account.as_str(), &connection_alias)
        },
        move |()| VaultAudit {
            action: "vault.connection_revoke",
            detail: json!({"alias": alias}),
            name: alias,
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
