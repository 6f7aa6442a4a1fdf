//! The console's run pages in this slice: the runs list, the run page (timeline from the
//! events, refusals per step, the gate's decision form with a note) and the approvals waiting
//! for a decision. Server-rendered, no script; every form carries the session's CSRF token.

use std::collections::BTreeMap;

use auth::{CsrfToken, Role};
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Html;
use engine::journal::{Entry, Event};
use storage::AttemptStatus;

use crate::authn::Authenticated;
use crate::handlers::runs::{detail, journal, run_in_scope, waiting_gates, wire_event};
use crate::html::{escape, page, when};
use crate::layers::CSRF_FIELD;
use crate::{AppState, Error};

/// The most characters of one event's payload the timeline shows.
const MAX_PAYLOAD_CHARS: usize = 400;

/// `GET /runs`.
pub(crate) async fn runs_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let runs = state
        .shared
        .store
        .runs(&authenticated.account())
        .map_err(Error::storage("list runs"))?;
    let mut body = String::from("<h1>Runs</h1>\n<ul>\n");
    for run in runs {
        body.push_str(&format!(
            "<li><a href=\"/runs/{}\">{}</a> {} ({})</li>\n",
            escape(&run.id.0),
            escape(&run.id.0),
            escape(&run.workflow_name),
            escape(run.status.as_str())
        ));
    }
    body.push_str("</ul>");
    Ok(page("Runs", &body))
}

/// Whether an event records a refusal (a copy-back refused, a refused attempt, a supervisor's
/// retry refused), and of which step. Every kind is named, so a new kind of refusal cannot be
/// added to the journal without being counted here (G22: refusals are counted per step).
fn refused_step(entry: &Entry) -> Option<&str> {
    match &entry.event {
        Event::CopyBackRefused(refused) => Some(&refused.step),
        Event::SupervisorRetryRefused(refused) => Some(&refused.step),
        Event::AttemptFinished(finished) if finished.status == AttemptStatus::Refused => {
            Some(&finished.step)
        }
        // G22: every refused call of an agent step counts, path refusals and calls refused
        // before they ran alike.
        Event::ToolRefused(refused) => Some(&refused.step),
        Event::ToolFinished(finished) if finished.outcome == "refused" => Some(&finished.step),
        Event::AttemptFinished(_)
        | Event::RunCreated(_)
        | Event::RunStatus(_)
        | Event::SecretsResolved(_)
        | Event::SecretsUnavailable(_)
        | Event::GateParked(_)
        | Event::Decision(_)
        | Event::AttemptStarted(_)
        | Event::StepPrinted(_)
        | Event::WorkspaceRevision(_)
        | Event::SupervisorDecision(_)
        | Event::Recovery(_)
        | Event::AgentTurn(_)
        | Event::ToolCalled(_)
        | Event::ToolFinished(_)
        | Event::AgentLimit(_) => None,
    }
}

/// `GET /runs/{id}`: the run page.
pub(crate) async fn run_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let record = run_in_scope(shared, &authenticated, &run_id)?;
    let entries = journal(shared, &record)?;
    let events = entries
        .iter()
        .map(|entry| wire_event(&record, entry))
        .collect::<Result<Vec<_>, _>>()?;
    let detail = detail(shared, record)?;
    let mut refusals: BTreeMap<&str, usize> = BTreeMap::new();
    for step in entries.iter().filter_map(refused_step) {
        *refusals.entry(step).or_default() += 1;
    }
    let mut body = format!(
        "<h1>Run {} of {}</h1>\n<p>Status: {}</p>\n",
        escape(&detail.summary.run),
        escape(&detail.workflow),
        escape(&detail.summary.status)
    );
    if let Some(reason) = &detail.summary.reason {
        body.push_str(&format!("<p>Reason: {}</p>\n", escape(reason)));
    }
    if let (Some(step), Some(session)) = (&detail.summary.waiting_at, &authenticated.session)
        && authenticated.principal.role() >= Role::Member
    {
        let csrf = CsrfToken::for_session(&shared.csrf_key, &session.token_hash);
        body.push_str(&format!(
            "<h2>Waiting for a decision on step {step_text}</h2>\n\
             <form method=\"post\" action=\"/runs/{run}/steps/{step_path}/decide\">\n\
             <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{csrf}\">\n\
             <label>Note <textarea name=\"note\"></textarea></label>\n\
             <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\n\
             <button type=\"submit\" name=\"decision\" value=\"reject\">Reject</button>\n\
             </form>\n",
            step_text = escape(step),
            run = escape(&detail.summary.run),
            step_path = escape(step),
            csrf = escape(csrf.as_str()),
        ));
    }
    body.push_str("<h2>Steps</h2>\n<table>\n<tr><th>Step</th><th>Attempt</th><th>Status</th><th>Refusals</th></tr>\n");
    for step in &detail.summary.steps {
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&step.step),
            step.attempt,
            escape(&step.status),
            refusals.get(step.step.as_str()).copied().unwrap_or(0)
        ));
    }
    body.push_str("</table>\n<h2>Decisions</h2>\n<ul>\n");
    for decision in &detail.decisions {
        body.push_str(&format!(
            "<li>{} {} by {} {} through {}: {}</li>\n",
            escape(&decision.decision),
            escape(decision.step.as_deref().unwrap_or("the run")),
            escape(&decision.actor_kind),
            escape(if decision.actor_name.is_empty() {
                &decision.actor_id
            } else {
                &decision.actor_name
            }),
            escape(&decision.door),
            escape(&decision.note)
        ));
    }
    body.push_str("</ul>\n<h2>Timeline</h2>\n<ol>\n");
    for event in &events {
        let payload: String = event
            .payload
            .to_string()
            .chars()
            .take(MAX_PAYLOAD_CHARS)
            .collect();
        body.push_str(&format!(
            "<li>{} <code>{}</code> {}</li>\n",
            when(event.at),
            escape(&event.kind),
            escape(&payload)
        ));
    }
    body.push_str("</ol>");
    Ok(page("Run", &body))
}

/// `GET /approvals`: the gates of the account waiting for a decision.
pub(crate) async fn approvals_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let waiting = waiting_gates(&state.shared, &authenticated.account())?;
    let mut body = String::from("<h1>Waiting for a decision</h1>\n<ul>\n");
    for approval in &waiting {
        body.push_str(&format!(
            "<li><a href=\"/runs/{}\">{}</a>: step {} of {}</li>\n",
            escape(&approval.run),
            escape(&approval.run),
            escape(&approval.step),
            escape(&approval.workflow)
        ));
    }
    body.push_str("</ul>");
    Ok(page("Approvals", &body))
}
