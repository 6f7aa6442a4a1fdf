//! The console's interview page (issue 17 §4): a chat with the assistant that works by posting
//! its forms (each answer is a new page), with a little script (`/static/interview.js`) that
//! says the assistant is working while a message is on its way. A proposal is shown only once
//! it passed the checks, with the panel "What each step can reach" (the workflow page's rows,
//! under the caption word for word) and the authoring lints; a member confirms it.

use askama::Template;
use auth::Role;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::interview::{accept, begin, converse, view_of};
use crate::handlers::workflows::{ReachLine, reach_lines};
use crate::html::render;
use crate::{AppState, Error};

#[derive(Template)]
#[template(path = "interview_start.html")]
struct StartPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    /// Why there is no assistant, when there is none.
    no_assistant: Option<String>,
    /// The person's open interviews: (id, what it is about).
    open: Vec<(String, String)>,
    /// The form as typed, and why it was refused.
    typed: StartForm,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "interview.html")]
struct InterviewPage {
    title: String,
    chrome: Option<Chrome>,
    view: api_types::interview::InterviewView,
    caption: &'static str,
    /// Above the reach table of a server whose steps are not isolated.
    isolation: Option<&'static str>,
    rows: Vec<ReachLine>,
    with_agents: bool,
    with_limits: bool,
    csrf: String,
    can_confirm: bool,
}

fn csrf_of(chrome: Option<&Chrome>) -> String {
    chrome.map(|chrome| chrome.csrf.clone()).unwrap_or_default()
}

/// `GET /interview`: start an interview, and the person's open ones.
pub(crate) async fn start_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    start_page_with(&state, &authenticated, StartForm::default(), None)
}

/// The start page, with the form as typed and its refusal when there is one.
fn start_page_with(
    state: &AppState,
    authenticated: &Authenticated,
    typed: StartForm,
    error: Option<String>,
) -> Result<Html<String>, Error> {
    let chrome = chrome::current();
    let person = match &authenticated.actor {
        storage::Actor::Person { id, .. } => id.clone(),
        _ => String::new(),
    };
    let no_assistant =
        match crate::handlers::interview::assistant_status(&state.shared, &authenticated.account())
        {
            Ok(()) => None,
            Err(Error::NoAssistant { why }) => Some(why),
            Err(other) => return Err(other),
        };
    Ok(render(&StartPage {
        title: "Interview",
        csrf: csrf_of(chrome.as_ref()),
        chrome,
        no_assistant,
        open: state.shared.interviews.of_person(
            &state.shared,
            authenticated.principal.account_id(),
            &person,
            state.shared.now().0,
        )?,
        typed,
        error,
    }))
}

#[derive(Deserialize, Default)]
pub(crate) struct StartForm {
    #[serde(default)]
    workflow: String,
    #[serde(default)]
    message: String,
}

/// `POST /interview`: starts it; on to its page once the assistant answered.
pub(crate) async fn start_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<StartForm>,
) -> Result<Response, Error> {
    match begin(&state, &authenticated, &form.workflow, &form.message).await {
        Ok(id) => Ok(Redirect::to(&format!("/interview/{id}")).into_response()),
        // A refused start answers the start page, the refusal beside the form and what was
        // typed kept (issue 42, point 8).
        Err(error) => {
            let mistake = crate::html::FormMistake::of(error)?;
            let page = start_page_with(&state, &authenticated, form, Some(mistake.message))?;
            Ok((mistake.status, page).into_response())
        }
    }
}

/// `GET /interview/{id}`: the conversation, the proposal shown and the forms.
pub(crate) async fn page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Html<String>, Error> {
    let view = view_of(&state.shared, &authenticated, &id)?;
    let chrome = chrome::current();
    let rows: Vec<api_types::ReachRow> = view
        .proposal
        .as_ref()
        .map(|proposal| proposal.reach.rows.clone())
        .unwrap_or_default();
    let can_confirm = view.state == "open"
        && view.proposal.is_some()
        && authenticated.principal.role() >= Role::Member;
    Ok(render(&InterviewPage {
        title: if view.workflow.is_empty() {
            "Interview".to_owned()
        } else {
            format!("Interview: {}", view.workflow)
        },
        csrf: csrf_of(chrome.as_ref()),
        chrome,
        with_agents: rows.iter().any(|row| row.agent.is_some()),
        with_limits: rows.iter().any(|row| !row.limits.is_empty()),
        rows: reach_lines(&rows),
        caption: spec::REACH_CAPTION,
        isolation: crate::reach::isolation_notice(&state.shared.options),
        view,
        can_confirm,
    }))
}

#[derive(Deserialize)]
pub(crate) struct MessageForm {
    #[serde(default)]
    message: String,
}

/// `POST /interview/{id}/messages`: the person's message; back to the page with the answer.
pub(crate) async fn message_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
    Form(form): Form<MessageForm>,
) -> Result<Response, Error> {
    converse(&state, &authenticated, &id, &form.message).await?;
    Ok(Redirect::to(&format!("/interview/{id}#chat-end")).into_response())
}

#[derive(Deserialize)]
pub(crate) struct ConfirmForm {
    /// The number of the proposal shown; none (0) is never a proposal's.
    #[serde(default)]
    proposal: u32,
    #[serde(default)]
    note: String,
}

/// `POST /interview/{id}/confirm`: saves the proposal shown; back to the page, which says
/// the version, or why nothing was saved.
pub(crate) async fn confirm_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
    Form(form): Form<ConfirmForm>,
) -> Result<Response, Error> {
    match accept(&state, &authenticated, &id, form.proposal, &form.note).await {
        // The refusal is on the page, as an entry of the conversation.
        Ok(_) | Err(Error::InterviewRefused { .. }) => {
            Ok(Redirect::to(&format!("/interview/{id}#chat-end")).into_response())
        }
        Err(other) => Err(other),
    }
}
