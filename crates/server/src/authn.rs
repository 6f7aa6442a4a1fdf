//! Who is asking: a session cookie or an `Authorization: Bearer sw_...` API key, resolved to
//! an [`auth::Principal`] and the [`storage::Actor`] recorded for what it does.
//!
//! Anything presented that does not check out (malformed, unknown, revoked, expired, a person
//! who no longer exists) resolves to no principal at all: the policy then answers 401 on a
//! route that needs one. A request with an `Authorization` header is judged by that header
//! alone, so a key never borrows the session of the browser it is sent from.

use auth::{
    ApiKeyHash, ApiKeySecret, Principal, Role, SessionState, SessionToken, SessionTokenHash,
};
use axum::http::{HeaderMap, header};
use storage::people::{RoleName, TokenHash};
use storage::{AccountId, Actor};

use crate::Error;
use crate::state::Shared;

/// A principal whose credentials checked out, put into the request's extensions by the policy
/// middleware for every role-guarded route.
#[derive(Debug, Clone)]
pub(crate) struct Authenticated {
    pub(crate) principal: Principal,
    /// Who is recorded: the person with their display name, or the key.
    pub(crate) actor: Actor,
    /// The session the request came with, when it came with one.
    pub(crate) session: Option<SessionAuth>,
}

impl Authenticated {
    pub(crate) fn account(&self) -> AccountId {
        self.principal.account_id().clone()
    }
}

/// The session behind a request: its public id and the hash its CSRF token is bound to.
#[derive(Debug, Clone)]
pub(crate) struct SessionAuth {
    pub(crate) id: String,
    pub(crate) person_id: String,
    pub(crate) token_hash: SessionTokenHash,
}

/// The auth crate's role for a stored role name.
pub(crate) fn auth_role(role: RoleName) -> Role {
    match role {
        RoleName::Viewer => Role::Viewer,
        RoleName::Member => Role::Member,
        RoleName::Admin => Role::Admin,
        RoleName::Owner => Role::Owner,
    }
}

/// The stored role name of an auth role.
pub(crate) fn stored_role(role: Role) -> RoleName {
    match role {
        Role::Viewer => RoleName::Viewer,
        Role::Member => RoleName::Member,
        Role::Admin => RoleName::Admin,
        Role::Owner => RoleName::Owner,
    }
}

/// The principal of a request, or `None` when it presents no credentials that check out.
pub(crate) fn authenticate(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<Option<Authenticated>, Error> {
    if let Some(authorization) = headers.get(header::AUTHORIZATION) {
        let Some(text) = authorization
            .to_str()
            .ok()
            .and_then(|value| value.strip_prefix("Bearer "))
        else {
            return Ok(None);
        };
        return api_key_principal(shared, text.trim());
    }
    match session_cookie_value(shared, headers) {
        Some(value) => session_principal(shared, &value),
        None => Ok(None),
    }
}

fn api_key_principal(shared: &Shared, text: &str) -> Result<Option<Authenticated>, Error> {
    let Ok(secret) = ApiKeySecret::parse(text) else {
        return Ok(None);
    };
    let Some(record) = shared
        .store
        .api_key(secret.key_id())
        .map_err(Error::storage("read API key"))?
    else {
        return Ok(None);
    };
    if secret
        .verify(&ApiKeyHash::from_bytes(record.token_hash.0))
        .is_err()
        || record.revoked_at.is_some()
    {
        return Ok(None);
    }
    shared
        .store
        .touch_api_key(&record.key_id, shared.now())
        .map_err(Error::storage("record API key use"))?;
    Ok(Some(Authenticated {
        principal: Principal::ApiKey {
            key_id: record.key_id.clone(),
            account_id: record.account.clone(),
            role: auth_role(record.role),
        },
        actor: Actor::ApiKey { id: record.key_id },
        session: None,
    }))
}

/// Why an `Authorization` header did not check out: the account of the key it names (when
/// that key exists) and the reason, for the tallied audit entry of a refused key. `None` when
/// the request has no `Authorization` header.
pub(crate) fn key_refusal(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<Option<(Option<AccountId>, &'static str)>, Error> {
    let Some(authorization) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let Some(text) = authorization
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return Ok(Some((None, "malformed_authorization")));
    };
    let Ok(secret) = ApiKeySecret::parse(text.trim()) else {
        return Ok(Some((None, "malformed_key")));
    };
    let Some(record) = shared
        .store
        .api_key(secret.key_id())
        .map_err(Error::storage("read API key"))?
    else {
        return Ok(Some((None, "unknown_key")));
    };
    let reason = if record.revoked_at.is_some() {
        "revoked_key"
    } else {
        "wrong_secret"
    };
    Ok(Some((Some(record.account), reason)))
}

/// The value of this server's session cookie.
fn session_cookie_value(shared: &Shared, headers: &HeaderMap) -> Option<String> {
    cookie_value(headers, auth::session_cookie_name(shared.options.tls))
}

/// The value of the cookie `name`; two cookies of that name make the request ambiguous, and
/// it gets none.
pub(crate) fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found: Option<String> = None;
    for header_value in headers.get_all(header::COOKIE) {
        let Ok(text) = header_value.to_str() else {
            continue;
        };
        for pair in text.split(';') {
            let Some((cookie_name, value)) = pair.trim().split_once('=') else {
                continue;
            };
            if cookie_name == name {
                if found.is_some() {
                    return None;
                }
                found = Some(value.to_owned());
            }
        }
    }
    found
}

fn session_principal(shared: &Shared, value: &str) -> Result<Option<Authenticated>, Error> {
    let Ok(token) = SessionToken::parse(value) else {
        return Ok(None);
    };
    let token_hash = token.hash();
    let Some(session) = shared
        .store
        .session_by_token(&TokenHash(*token_hash.as_bytes()))
        .map_err(Error::storage("read session"))?
    else {
        return Ok(None);
    };
    if session.revoked_at.is_some() {
        return Ok(None);
    }
    let now = shared.now();
    let millis = |value: i64| u64::try_from(value).unwrap_or(0);
    let state = shared.options.session_lifetime.state(
        millis(session.created_at.0),
        millis(session.last_used_at.0),
        millis(now.0),
    );
    if state != SessionState::Live {
        return Ok(None);
    }
    let Some(person) = shared
        .store
        .person(&session.person_id)
        .map_err(Error::storage("read the session's person"))?
    else {
        return Ok(None);
    };
    shared
        .store
        .touch_session(&session.id, now)
        .map_err(Error::storage("record session use"))?;
    Ok(Some(Authenticated {
        principal: Principal::Person {
            person_id: person.id.clone(),
            account_id: person.account.clone(),
            role: auth_role(person.role),
        },
        actor: Actor::Person {
            id: person.id.clone(),
            name: person.display_name,
        },
        session: Some(SessionAuth {
            id: session.id,
            person_id: person.id,
            token_hash,
        }),
    }))
}
