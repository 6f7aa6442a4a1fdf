//! The vault's agent secrets over the API: members list names, admins set and remove values;
//! no route ever answers a value (G25: every write is audited, by name only).

use std::sync::Arc;

use api_types::{SetSecretRequest, VaultSecretView};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use redact::SecretValue;
use serde_json::json;
use vault::{SecretInfo, Vault};

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

fn view(info: SecretInfo) -> VaultSecretView {
    VaultSecretView {
        name: info.name,
        version: info.version,
        created_at: info.created_at.0,
        updated_at: info.updated_at.0,
    }
}

/// `GET /api/vault/secrets`: names, versions and dates.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<VaultSecretView>>, Error> {
    let vault = vault_of(&state.shared, "list vault secrets")?;
    let account = authenticated.account();
    let secrets = blocking("list vault secrets", move || {
        vault.secrets().list(account.as_str())
    })
    .await?
    .map_err(|source| Error::Vault {
        operation: "list vault secrets",
        source,
    })?;
    Ok(Json(secrets.into_iter().map(view).collect()))
}

/// `PUT /api/vault/secrets/{name}`: sets a value (encrypted at rest by the vault). The answer
/// and the audit entry carry the name and version, never the value.
pub(crate) async fn set(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    Json(request): Json<SetSecretRequest>,
) -> Result<Json<VaultSecretView>, Error> {
    let shared = &state.shared;
    let vault = vault_of(shared, "set a vault secret")?;
    let account = authenticated.account();
    let value = SecretValue::new(request.value);
    let account_id = account.0.clone();
    let secret_name = name.clone();
    let info = blocking("set a vault secret", move || {
        vault.secrets().set(&account_id, &secret_name, value)
    })
    .await?
    .map_err(|source| Error::Vault {
        operation: "set a vault secret",
        source,
    })?;
    audit(
        shared,
        &account,
        authenticated.actor.clone(),
        "vault.secret_set",
        &json!({"name": info.name, "version": info.version}),
    )?;
    Ok(Json(view(info)))
}

/// `DELETE /api/vault/secrets/{name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let vault = vault_of(shared, "remove a vault secret")?;
    let account = authenticated.account();
    let account_id = account.0.clone();
    let secret_name = name.clone();
    blocking("remove a vault secret", move || {
        vault.secrets().remove(&account_id, &secret_name)
    })
    .await?
    .map_err(|source| Error::Vault {
        operation: "remove a vault secret",
        source,
    })?;
    audit(
        shared,
        &account,
        authenticated.actor.clone(),
        "vault.secret_remove",
        &json!({"name": name}),
    )?;
    Ok(StatusCode::NO_CONTENT)
}
