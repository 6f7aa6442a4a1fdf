//! Approve links (G24): `/approve/{run}/{step}/{attempt}/{token}`, where the token is the
//! HMAC of the gate under the approve-link key ([`auth::verify_approve_token`], constant time,
//! never stored). Opening a link (GET) only shows the decision page; deciding is a
//! CSRF-protected POST by a signed-in person of the run's account whose role may decide,
//! recorded with the door `link`. A link that does not verify (tampered, for another gate,
//! signed by a rotated-out key) or whose gate is no longer pending (decided) is not found.

use auth::{CsrfToken, Principal, Role, verify_approve_token};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use storage::{Door, GateRef, RunId, RunRecord, StepId};

use crate::authn::{Authenticated, authenticate};
use crate::handlers::ensure_same_account;
use crate::handlers::runs::{DecideForm, decide};
use crate::html::{escape, page};
use crate::layers::CSRF_FIELD;
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
    let record = shared
        .store
        .run(&RunId(run_id.to_owned()))
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
        .map_err(|source| Error::Engine {
            run: record.id.to_string(),
            source: Box::new(source),
        })?;
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
fn may_decide(principal: &Principal, account: &str) -> bool {
    matches!(principal, Principal::Person { .. })
        && principal.account_id() == account
        && principal.role() >= Role::Member
}

/// `GET /approve/{run}/{step}/{attempt}/{token}`: the decision page. It never decides.
pub(crate) async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((run_id, step, attempt, token)): LinkPath,
) -> Result<Response, Error> {
    let shared = &state.shared;
    let record = pending_gate(shared, &run_id, &step, attempt, &token)?;
    let summary = format!(
        "<h1>Decide step {} of run {}</h1>\n<p>Workflow: {}</p>\n",
        escape(&step),
        escape(&run_id),
        escape(&record.workflow_name)
    );
    let viewer = authenticate(shared, &headers)?;
    let form = match viewer.as_ref().and_then(|viewer| {
        let session = viewer.session.as_ref()?;
        may_decide(&viewer.principal, record.account.as_str()).then_some(session)
    }) {
        Some(session) => {
            let csrf = CsrfToken::for_session(&shared.csrf_key, &session.token_hash);
            let action = format!("/approve/{run_id}/{step}/{attempt}/{token}");
            format!(
                "<form method=\"post\" action=\"{}\">\n\
                 <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\n\
                 <label>Note <textarea name=\"note\"></textarea></label>\n\
                 <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\n\
                 <button type=\"submit\" name=\"decision\" value=\"reject\">Reject</button>\n\
                 </form>",
                escape(&action),
                escape(csrf.as_str())
            )
        }
        None => "<p>Sign in as a member of this account to decide: \
                 <a href=\"/signin\">sign in</a>, then open this link again.</p>"
            .to_owned(),
    };
    let mut response = page("Decide", &format!("{summary}{form}")).into_response();
    response
        .extensions_mut()
        .insert(crate::served::ServedFor(record.account.clone()));
    Ok(response)
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
