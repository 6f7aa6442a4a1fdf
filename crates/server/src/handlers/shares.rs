//! Share links (G24): 24 random bytes, stored only as a hash, with expiry and revocation. A
//! share link shows one run's scrubbed record, read-only, and nothing else; every failed fetch
//! (unknown, expired, revoked, malformed, wrong length, a run that is gone) answers the same
//! bytes: [`auth::SHARE_NOT_FOUND_BODY`] with status 404.

use api_types::runs::StepSummary;
use api_types::{ShareLinkCreated, ShareLinkView};
use askama::Template;
use auth::{SHARE_NOT_FOUND_BODY, SHARE_NOT_FOUND_CONTENT_TYPE, ShareToken};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;
use storage::people::{NewShareLink, PeopleWrite, ShareLinkRecord, TokenHash};
use storage::{RunId, Timestamp};

use crate::authn::Authenticated;
use crate::chrome::Chrome;
use crate::handlers::runs::{detail, run_in_scope};
use crate::handlers::{Audited, audited_write, random_id};
use crate::html::render;
use crate::state::Shared;
use crate::{AppState, Error};

/// `POST /api/runs/{id}/shares`: a new share link for a run of the account; its address is
/// in the answer, once.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<(StatusCode, Json<ShareLinkCreated>), Error> {
    let shared = &state.shared;
    let record = run_in_scope(shared, &authenticated, &run_id)?;
    let (token, token_hash) = ShareToken::generate().map_err(Error::auth("create a share link"))?;
    let now = shared.now();
    let expires_at = Timestamp(
        now.0
            .saturating_add(shared.options.share_link_lifetime_millis),
    );
    let link_id = random_id("shr")?;
    audited_write(
        shared,
        "create share link",
        Audited {
            account: &record.account,
            actor: authenticated.actor.clone(),
            action: "share.create",
            detail: &json!({"share": link_id, "run": record.id.0, "expires_at": expires_at.0}),
        },
        PeopleWrite::CreateShareLink(&NewShareLink {
            id: link_id.clone(),
            token_hash: TokenHash(*token_hash.as_bytes()),
            account: record.account.clone(),
            run: record.id.clone(),
            created_at: now,
            expires_at,
        }),
    )?;
    Ok((
        StatusCode::CREATED,
        Json(ShareLinkCreated {
            id: link_id,
            path: format!("/s/{}", token.reveal_once()),
            expires_at: expires_at.0,
        }),
    ))
}

/// `GET /api/shares`: the account's share links, never their tokens.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<ShareLinkView>>, Error> {
    let links = state
        .shared
        .store
        .share_links(&authenticated.account())
        .map_err(Error::storage("list share links"))?;
    Ok(Json(
        links
            .into_iter()
            .map(|link| ShareLinkView {
                id: link.id,
                run: link.run.0,
                created_at: link.created_at.0,
                expires_at: link.expires_at.0,
                revoked: link.revoked_at.is_some(),
            })
            .collect(),
    ))
}

/// `DELETE /api/shares/{id}`: revokes a share link of the account.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(link_id): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let account = authenticated.account();
    let written = audited_write(
        shared,
        "revoke share link",
        Audited {
            account: &account,
            actor: authenticated.actor.clone(),
            action: "share.revoke",
            detail: &json!({"share": link_id}),
        },
        PeopleWrite::RevokeShareLink {
            account: &account,
            link_id: &link_id,
            at: shared.now(),
        },
    )?;
    if !written.took_effect() {
        return Err(Error::NotFound {
            what: "share link",
            id: link_id,
        });
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The one answer of every failed share-link fetch.
pub(crate) fn share_not_found() -> Response {
    let mut response = (StatusCode::NOT_FOUND, SHARE_NOT_FOUND_BODY).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(SHARE_NOT_FOUND_CONTENT_TYPE),
    );
    response
}

/// The live link behind a presented token, or `None` for every kind of failure.
fn live_link(shared: &Shared, token_text: &str) -> Option<ShareLinkRecord> {
    let token = ShareToken::parse(token_text).ok()?;
    let found = shared
        .store
        .share_link_by_token(&TokenHash(*token.hash().as_bytes()));
    let link = match found {
        Ok(link) => link?,
        Err(error) => {
            // A store failure is answered like every other failed fetch, so the answer says
            // nothing about the link; the log has the cause.
            tracing::error!(%error, "reading a share link failed");
            return None;
        }
    };
    if link.revoked_at.is_some() || shared.now() >= link.expires_at {
        return None;
    }
    Some(link)
}

struct DecisionLine {
    decision: String,
    step: String,
    who: String,
    door: String,
    note: String,
}

#[derive(Template)]
#[template(path = "shared_run.html")]
struct SharedRunPage {
    title: &'static str,
    /// Always `None`: a share page shows no navigation, whoever opens it.
    chrome: Option<Chrome>,
    live: bool,
    run: String,
    workflow: String,
    status: String,
    steps: Vec<StepSummary>,
    decisions: Vec<DecisionLine>,
}

fn shared_page(detail: api_types::RunDetail) -> Html<String> {
    render(&SharedRunPage {
        title: "Shared run",
        chrome: None,
        live: false,
        run: detail.summary.run,
        workflow: detail.workflow,
        status: detail.summary.status,
        steps: detail.summary.steps,
        decisions: detail
            .decisions
            .into_iter()
            .map(|decision| DecisionLine {
                who: if decision.actor_name.is_empty() {
                    format!("{} {}", decision.actor_kind, decision.actor_id)
                } else {
                    decision.actor_name
                },
                decision: decision.decision,
                step: decision.step.unwrap_or_else(|| "the run".to_owned()),
                door: decision.door,
                note: decision.note,
            })
            .collect(),
    })
}

/// `GET /s/{token}`: one run's scrubbed record, read-only. The token is read from the raw
/// path rather than through the `Path` extractor, whose rejections (bad percent-encoding)
/// would answer other bytes than the one not-found answer.
pub(crate) async fn view(State(state): State<AppState>, uri: Uri) -> Response {
    let shared = &state.shared;
    let token = uri.path().strip_prefix("/s/").unwrap_or_default();
    let Some(link) = live_link(shared, token) else {
        return share_not_found();
    };
    let record = match shared.store.run(&RunId(link.run.0.clone())) {
        Ok(Some(record)) if record.account == link.account => record,
        Ok(_) => return share_not_found(),
        Err(error) => {
            tracing::error!(%error, "reading a shared run failed");
            return share_not_found();
        }
    };
    let account = record.account.clone();
    match detail(shared, record) {
        Ok(detail) => {
            let mut response = shared_page(detail).into_response();
            response
                .extensions_mut()
                .insert(crate::served::ServedFor(account));
            response
        }
        Err(error) => {
            tracing::error!(%error, "rendering a shared run failed");
            share_not_found()
        }
    }
}
