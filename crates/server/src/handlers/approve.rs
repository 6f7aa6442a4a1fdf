//! Approve links (G24): `/approve/{run}/{step}/{attempt}/{token}`, where the token is the
//! HMAC of the gate under the approve-link key ([`auth::verify_approve_token`], constant time,
//! never stored). Opening a link (GET) only shows the decision page; deciding is a
//! CSRF-protected POST by a signed-in person of the run's account whose role may decide,
//! recorded with the door `link`. A link that does not verify (tampered, for another gate,
//! signed by a rotated-out key) or whose gate is no longer pending (decided) is not found.
//!
//! The links reach people (issue 11, finding 10): the run page, the approvals list and
//! `GET /api/runs/{id}/approve-link` give a person who may decide the link of each waiting
//! gate, and a link opened from a mail (no SameSite=Strict cookie) answers a Continue page on
//! our own origin before it asks anyone to sign in.

use askama::Template;
use auth::{CsrfToken, Principal, Role, verify_approve_token};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use storage::{AccountId, Door, GateRef, RunId, RunRecord, StepId};

use crate::authn::{Authenticated, authenticate};
use crate::chrome::{self, Chrome};
use crate::handlers::ensure_same_account;
use crate::handlers::runs::{DecideForm, decide};
use crate::handlers::value_view::{Shape, Span};
use crate::html::render;
use crate::return_path::sign_in_and_back;
use crate::state::Shared;
use crate::{AppState, Error};

type LinkPath = Path<(String, String, u32, String)>;

/// The run of a link whose token verifies for exactly this gate and attempt, while that gate
/// is still waiting for its decision.
fn pending_gate(
    shared: &Shared,
    run_id: &str,
    step: &str,
    attempt: u32,
    token: &str,
) -> Result<RunRecord, Error> {
    let not_found = |why: String| Error::NotFound {
        what: "approve link",
        id: format!("run {run_id} step {step} attempt {attempt}: {why}"),
    };
    let run = RunId::parse(run_id).map_err(|_| not_found("not a run id".to_owned()))?;
    let record = shared
        .store
        .run(&run)
        .map_err(Error::storage("read run of an approve link"))?
        .ok_or_else(|| not_found("no such run".to_owned()))?;
    let step_id = StepId::parse(step).map_err(|_| not_found("not a step id".to_owned()))?;
    let link = GateRef {
        account: record.account.clone(),
        run: record.id.clone(),
        step: step_id,
        attempt,
    };
    verify_approve_token(&shared.approve_links(), token, &link)
        .map_err(|error| not_found(error.to_string()))?;
    // The engine says which gate waits and for which attempt; a link for anything else
    // belongs to a gate that was decided or passed.
    let pending = shared
        .engine
        .pending_gate(&record.id)
        .map_err(Error::engine_of(&record.id))?;
    match pending {
        Some(gate) if gate == link => Ok(record),
        Some(_) => Err(not_found(
            "the link is for another step or attempt than the one waiting".to_owned(),
        )),
        None => Err(not_found(format!(
            "the run is {}, not waiting at a gate",
            record.status
        ))),
    }
}

/// Whether this principal, of this account, may decide the gate.
fn may_decide(principal: &Principal, account: &AccountId) -> bool {
    matches!(principal, Principal::Person { .. })
        && principal.account_id() == account
        && principal.role() >= Role::Member
}

/// What the link's page offers.
pub(crate) enum ApproveDoor {
    /// A signed-in person who may decide: the form.
    Decide { csrf: String, action: String },
    /// No session arrived (a link from a mail carries no SameSite=Strict cookie): a plain
    /// link to the same gate page, which is a same-site navigation and carries it.
    Continue { href: String },
    /// Signed in, with a role (or of an account) that does not decide this gate.
    MayNotDecide,
}

#[derive(Template)]
#[template(path = "approve.html")]
struct ApprovePage {
    title: &'static str,
    chrome: Option<Chrome>,
    run_id: String,
    step: String,
    workflow: String,
    /// The run's short number within its workflow.
    number: u64,
    /// What is decided, for a signed-in person of the run's account (issue 42, point 1).
    gate: Option<crate::handlers::gate_view::GatePanel>,
    door: ApproveDoor,
}

/// `?continue=1`: the link was opened from our own Continue page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ShowQuery {
    #[serde(default, rename = "continue")]
    continued: Option<String>,
}

/// `GET /approve/{run}/{step}/{attempt}/{token}`: the decision page. It never decides (the
/// query is read only for `continue`).
///
/// Without a session the first answer is a page of our own origin with a plain Continue link
/// to the same gate page: the navigation from a mail is cross-site and arrives without the
/// SameSite=Strict cookie, the click on Continue is same-site and carries it. When the
/// Continue link still finds no session, the person goes through sign-in and back to the link
/// (`/signin?next=...`, a path of ours only).
pub(crate) async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((run_id, step, attempt, token)): LinkPath,
    Query(query): Query<ShowQuery>,
) -> Result<Response, Error> {
    let shared = &state.shared;
    let record = pending_gate(shared, &run_id, &step, attempt, &token)?;
    let link = format!("/approve/{run_id}/{step}/{attempt}/{token}");
    let viewer = authenticate(shared, &headers)?;
    let door = match viewer.as_ref() {
        Some(viewer) => match viewer.session.as_ref() {
            Some(session) if may_decide(&viewer.principal, &record.account) => {
                ApproveDoor::Decide {
                    csrf: CsrfToken::for_session(&shared.csrf_key, &session.token_hash)
                        .as_str()
                        .to_owned(),
                    action: link,
                }
            }
            _ => ApproveDoor::MayNotDecide,
        },
        None if query.continued.is_some() => {
            return Ok(Redirect::to(&sign_in_and_back(&link)).into_response());
        }
        None => ApproveDoor::Continue {
            href: format!("{link}?continue=1"),
        },
    };
    // A link opened without a session shows nothing of the run; a person of another account
    // neither.
    let gate = match viewer.as_ref() {
        Some(viewer) if viewer.session.is_some() => {
            crate::handlers::gate_view::gate_context(shared, viewer, &record)?
        }
        _ => None,
    };
    let mut response = render(&ApprovePage {
        title: "Decide",
        chrome: chrome::current(),
        run_id,
        step,
        workflow: record.workflow_name.clone(),
        number: record.number,
        gate,
        door,
    })
    .into_response();
    response
        .extensions_mut()
        .insert(crate::served::ServedFor(record.account.clone()));
    Ok(response)
}

/// The path of the approve link of `gate`, signed with the current key.
pub(crate) fn link_path(shared: &Shared, gate: &GateRef) -> Result<String, Error> {
    let ring = shared.approve_links();
    let token =
        auth::approve_token(ring.current(), gate).map_err(Error::auth("sign an approve link"))?;
    Ok(format!(
        "/approve/{}/{}/{}/{token}",
        gate.run, gate.step, gate.attempt
    ))
}

/// The gate `run` waits at, if it waits at one.
pub(crate) fn waiting_gate(shared: &Shared, run: &RunId) -> Result<Option<GateRef>, Error> {
    shared
        .engine
        .pending_gate(run)
        .map_err(Error::engine_of(run))
}

/// Whether `authenticated` is a signed-in person who may decide gates of `account` (the people
/// who get approve links).
pub(crate) fn gets_links(authenticated: &Authenticated, account: &AccountId) -> bool {
    authenticated.session.is_some() && may_decide(&authenticated.principal, account)
}

/// `POST /approve/{run}/{step}/{attempt}/{token}`: a signed-in member decides through the
/// link; the door is `link`.
pub(crate) async fn decide_with_link(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step, attempt, token)): LinkPath,
    Form(form): Form<DecideForm>,
) -> Result<Response, Error> {
    let record = pending_gate(&state.shared, &run_id, &step, attempt, &token)?;
    ensure_same_account(&authenticated, &record.account, "run", &run_id)?;
    let kind = form.kind()?;
    decide(
        &state,
        &authenticated,
        &run_id,
        &step,
        kind,
        Door::Link,
        form.note,
    )
    .await?;
    Ok(Redirect::to(&format!("/runs/{run_id}")).into_response())
}
