//! API keys (G26): created by people only, shown once, stored hashed, carrying a role no
//! higher than their creator's, recording who created them (so removing that person revokes
//! them, and demoting them revokes those above the new role), revocable, with last use. Creation and
//! revocation are audited; so is every state-changing request a key makes (`api_key.use`, in
//! the policy middleware).

use std::str::FromStr;

use api_types::{ApiKeyCreated, ApiKeyView, CreateApiKeyRequest};
use auth::{ApiKeySecret, Principal, Role, can_remove};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::json;
use storage::people::{NewApiKey, PeopleWrite, TokenHash};

use crate::authn::{Authenticated, auth_role, stored_role};
use crate::handlers::{Audited, audited_write, ensure_same_account};
use crate::{AppState, Error};

/// The longest name a key may have.
const MAX_KEY_NAME_CHARS: usize = 100;

/// `GET /api/keys`: the account's keys, never their secrets.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<ApiKeyView>>, Error> {
    let account = authenticated.account();
    let keys = state
        .shared
        .store
        .api_keys(&account)
        .map_err(Error::storage("list API keys"))?;
    let people = state
        .shared
        .store
        .people(&account)
        .map_err(Error::storage("list people"))?;
    Ok(Json(
        keys.into_iter()
            .map(|key| {
                let created_by_name = key.created_by.as_ref().and_then(|creator| {
                    people
                        .iter()
                        .find(|person| &person.id == creator)
                        .map(|person| person.display_name.clone())
                });
                ApiKeyView {
                    key_id: key.key_id,
                    name: key.name,
                    role: key.role.as_str().to_owned(),
                    created_at: key.created_at.0,
                    last_used_at: key.last_used_at.map(|at| at.0),
                    revoked: key.revoked_at.is_some(),
                    created_by: key.created_by,
                    created_by_name,
                }
            })
            .collect(),
    ))
}

/// `POST /api/keys`: a new key with a role its creator may grant; its text is in this answer
/// only.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<CreateApiKeyRequest>,
) -> Result<(StatusCode, Json<ApiKeyCreated>), Error> {
    let shared = &state.shared;
    let role = Role::from_str(&request.role).map_err(|unknown| Error::InvalidInput {
        field: "role",
        reason: unknown.to_string(),
    })?;
    let name = request.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > MAX_KEY_NAME_CHARS {
        return Err(Error::InvalidInput {
            field: "name",
            reason: format!("a key needs a name of 1 to {MAX_KEY_NAME_CHARS} characters"),
        });
    }
    let (secret, stored) =
        ApiKeySecret::generate(&authenticated.principal, role).map_err(|error| match error {
            auth::Error::Denied(source) => Error::RoleRule {
                operation: "create an API key",
                source,
            },
            other => Error::Auth {
                operation: "create an API key",
                source: other,
            },
        })?;
    // Only people create keys (the policy table refuses keys before this handler runs); the
    // creator is recorded so that removing or demoting them reaches their keys.
    let Principal::Person { person_id, .. } = &authenticated.principal else {
        return Err(Error::Forbidden {
            principal: "an API key".to_owned(),
            method: "POST".to_owned(),
            route: "/api/keys".to_owned(),
        });
    };
    let account = authenticated.account();
    audited_write(
        shared,
        "create an API key",
        Audited {
            account: &account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::ApiKeyCreate,
            detail: &json!({"key": stored.key_id, "name": name, "role": role.as_str()}),
        },
        PeopleWrite::CreateApiKey(&NewApiKey {
            key_id: stored.key_id.clone(),
            token_hash: TokenHash(*stored.hash.as_bytes()),
            account: account.clone(),
            role: stored_role(stored.role),
            name: name.clone(),
            created_by: person_id.clone(),
            created_at: shared.now(),
        }),
    )?;
    Ok((
        StatusCode::CREATED,
        Json(ApiKeyCreated {
            key_id: stored.key_id,
            key: secret.reveal_once(),
            name,
            role: role.as_str().to_owned(),
        }),
    ))
}

/// `DELETE /api/keys/{id}`: revokes a key of the account whose role is not above the
/// revoker's.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(key_id): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let key = shared
        .store
        .api_key(&key_id)
        .map_err(Error::storage("read API key"))?
        .ok_or_else(|| Error::NotFound {
            what: "API key",
            id: key_id.clone(),
        })?;
    ensure_same_account(&authenticated, &key.account, "API key", &key_id)?;
    can_remove(&authenticated.principal, &key.account, auth_role(key.role))
        .map_err(Error::denied("revoke an API key"))?;
    let written = audited_write(
        shared,
        "revoke an API key",
        Audited {
            account: &key.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::ApiKeyRevoke,
            detail: &json!({"key": key.key_id, "name": key.name}),
        },
        PeopleWrite::RevokeApiKey {
            account: &key.account,
            key_id: &key.key_id,
            at: shared.now(),
        },
    )?;
    if !written.took_effect() {
        return Err(Error::NotFound {
            what: "API key",
            id: key_id,
        });
    }
    Ok(StatusCode::NO_CONTENT)
}
