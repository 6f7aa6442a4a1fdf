//! Sessions: a person lists and revokes their own (one or all), an admin revokes all of
//! another person's. A revoked session fails on its very next request: every request looks
//! its session up again.

use api_types::SessionView;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::json;

use crate::authn::Authenticated;
use crate::handlers::{Audited, audited_write, ensure_same_account};
use crate::{AppState, Error};
use storage::people::PeopleWrite;

fn own_person_id(authenticated: &Authenticated) -> Result<&str, Error> {
    // The policy admits only people here; a key reaching this is refused all the same.
    match &authenticated.principal {
        auth::Principal::Person { person_id, .. } => Ok(person_id),
        auth::Principal::ApiKey { .. } => Err(Error::Forbidden {
            principal: "an API key".to_owned(),
            method: "manage".to_owned(),
            route: "sessions".to_owned(),
        }),
    }
}

/// `GET /api/sessions`: the signed-in person's live sessions.
pub(crate) async fn list_own(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<SessionView>>, Error> {
    let person_id = own_person_id(&authenticated)?;
    let current = authenticated
        .session
        .as_ref()
        .map(|session| session.id.as_str());
    let sessions = state
        .shared
        .store
        .live_sessions(person_id)
        .map_err(Error::storage("list sessions"))?;
    Ok(Json(
        sessions
            .into_iter()
            .map(|session| SessionView {
                current: Some(session.id.as_str()) == current,
                id: session.id,
                created_at: session.created_at.0,
                last_used_at: session.last_used_at.0,
                browser: session.browser,
                address: session.address,
            })
            .collect(),
    ))
}

/// `DELETE /api/sessions`: revokes every session of the signed-in person, this one included.
pub(crate) async fn revoke_all_own(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let person_id = own_person_id(&authenticated)?;
    audited_write(
        shared,
        "revoke own sessions",
        Audited {
            account: &authenticated.account(),
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::SessionRevokeAll,
            detail: &json!({"person": person_id}),
        },
        PeopleWrite::RevokeSessionsOf {
            person_id,
            at: shared.now(),
        },
    )?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/sessions/{id}`: revokes one session of the signed-in person.
pub(crate) async fn revoke_own(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(session_id): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let person_id = own_person_id(&authenticated)?;
    let written = audited_write(
        shared,
        "revoke a session",
        Audited {
            account: &authenticated.account(),
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::SessionRevoke,
            detail: &json!({"person": person_id, "session": session_id}),
        },
        PeopleWrite::RevokeSession {
            person_id,
            session_id: &session_id,
            at: shared.now(),
        },
    )?;
    if !written.took_effect() {
        return Err(Error::NotFound {
            what: "session",
            id: session_id,
        });
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/people/{id}/sessions`: an admin (or a key with the admin role) revokes every
/// session of a person of the same account whose role is not above their own.
pub(crate) async fn revoke_all_of_person(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let person = shared
        .store
        .person(&person_id)
        .map_err(Error::storage("read person"))?
        .ok_or_else(|| Error::NotFound {
            what: "person",
            id: person_id.clone(),
        })?;
    ensure_same_account(&authenticated, &person.account, "person", &person_id)?;
    if crate::authn::auth_role(person.role) > authenticated.principal.role() {
        return Err(Error::Forbidden {
            principal: format!("{:?}", authenticated.principal),
            method: "DELETE".to_owned(),
            route: "sessions of a person with a higher role".to_owned(),
        });
    }
    audited_write(
        shared,
        "revoke a person's sessions",
        Audited {
            account: &person.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::SessionRevokeAllByAdmin,
            detail: &json!({"person": person.id}),
        },
        PeopleWrite::RevokeSessionsOf {
            person_id: &person.id,
            at: shared.now(),
        },
    )?;
    Ok(StatusCode::NO_CONTENT)
}
