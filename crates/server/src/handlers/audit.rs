//! The account's audit log over the API (`GET /api/audit`, admins): every entry of the account
//! with its hash, oldest first. The chain itself is verified by `stepward audit verify`.

use api_types::AuditEntryView;
use axum::extract::State;
use axum::{Extension, Json};

use crate::authn::Authenticated;
use crate::{AppState, Error};

/// `GET /api/audit`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<AuditEntryView>>, Error> {
    let account = authenticated.account();
    let entries = state
        .shared
        .store
        .audit_entries()
        .map_err(Error::storage("read audit log"))?;
    Ok(Json(
        entries
            .into_iter()
            .filter(|entry| entry.account == account)
            .map(|entry| AuditEntryView {
                seq: entry.seq,
                run: entry.run.map(|run| run.0),
                actor_kind: entry.actor.kind().to_owned(),
                actor_id: entry.actor.id().to_owned(),
                actor_name: entry.actor.display_name().to_owned(),
                action: entry.action,
                detail: entry.detail,
                at: entry.at.0,
                hash: entry.hash,
            })
            .collect(),
    ))
}
