//! Workflow versions on the console (issue 17 §3): the list of a workflow's versions (number,
//! author, time; for the assistant's version, the person who accepted it), one version's text,
//! and the diff between two. Every text shown is the engine's scrubbed one
//! (`Engine::workflow_version_text`, `Engine::workflow_diff`): it holds connection references
//! only, never a value, and the served scrub runs over the page again.

use askama::Template;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Deserialize;
use storage::AccountId;
use workspace::Author;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::blocking;
use crate::handlers::workflow_versions::not_found;
use crate::html::{render, when};
use crate::state::Shared;
use crate::{AppState, Error};

/// One version as a line of the list.
pub(crate) struct VersionLine {
    pub(crate) number: u32,
    pub(crate) author: String,
    pub(crate) at: String,
    pub(crate) message: String,
}

/// A person of the account by id, by name and email; `None` for anyone else.
fn person_name(shared: &Shared, account: &AccountId, id: &str) -> Option<String> {
    shared
        .store
        .person(id)
        .ok()
        .flatten()
        .filter(|person| &person.account == account)
        .map(|person| format!("{} ({})", person.display_name, person.email))
}

/// Who wrote a version, in words; the assistant's with the person who accepted it, by name
/// (the command line's acceptance names its operating-system user).
fn author_words(shared: &Shared, account: &AccountId, author: &Author) -> String {
    match author {
        Author::Person { id } => {
            person_name(shared, account, id).unwrap_or_else(|| format!("person {id}"))
        }
        Author::Assistant { accepted_by } => format!(
            "the assistant, accepted by {}",
            person_name(shared, account, accepted_by).unwrap_or_else(|| accepted_by.clone())
        ),
        other => other.describe(),
    }
}

/// Every version of `name`, newest first, as lines (empty when it has none).
pub(crate) fn version_lines(
    shared: &Shared,
    account: &AccountId,
    name: &str,
) -> Result<Vec<VersionLine>, Error> {
    let redactor = crate::handlers::account_redactor(shared, account)?;
    let versions = shared
        .engine
        .workflow_versions(account, name)
        .map_err(Error::definitions)?;
    Ok(versions
        .iter()
        .rev()
        .map(|version| VersionLine {
            number: version.number,
            author: redactor
                .scrub(&author_words(shared, account, &version.author))
                .into_inner(),
            at: when(i64::try_from(version.unix_millis).unwrap_or(i64::MAX)),
            message: redactor.scrub(&version.message).into_inner(),
        })
        .collect())
}

#[derive(Template)]
#[template(path = "workflow_versions.html")]
struct VersionsPage {
    title: String,
    chrome: Option<Chrome>,
    name: String,
    versions: Vec<VersionLine>,
}

/// `GET /workflows/{name}/versions`: newest first, each with a link to its text and to its
/// diff against the one before.
pub(crate) async fn list_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Html<String>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    let chrome = chrome::current();
    blocking("list a workflow's versions", move || {
        let versions = version_lines(&shared, &account, &name)?;
        if versions.is_empty() {
            return Err(not_found(&name));
        }
        Ok(render(&VersionsPage {
            title: format!("Versions of {name}"),
            chrome,
            name,
            versions,
        }))
    })
    .await?
}

#[derive(Template)]
#[template(path = "workflow_version.html")]
struct VersionPage {
    title: String,
    chrome: Option<Chrome>,
    name: String,
    version: VersionLine,
    newest: u32,
    text: String,
}

/// `GET /workflows/{name}/versions/{number}`: one version's text, scrubbed.
pub(crate) async fn version_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((name, number)): Path<(String, u32)>,
) -> Result<Html<String>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    let chrome = chrome::current();
    blocking("read a workflow version", move || {
        let (_, text) = shared
            .engine
            .workflow_version_text(&account, &name, Some(number))
            .map_err(Error::definitions)?
            .ok_or_else(|| not_found(&name))?;
        let lines = version_lines(&shared, &account, &name)?;
        let newest = lines.first().map_or(number, |line| line.number);
        let version = lines
            .into_iter()
            .find(|line| line.number == number)
            .ok_or_else(|| not_found(&name))?;
        Ok(render(&VersionPage {
            title: format!("{name} version {number}"),
            chrome,
            name,
            version,
            newest,
            text,
        }))
    })
    .await?
}

/// `?from=A&to=B`; by default the newest version against the one before it.
#[derive(Debug, Deserialize)]
pub(crate) struct DiffQuery {
    from: Option<u32>,
    to: Option<u32>,
}

/// One line of a diff, with its kind for the stylesheet and for people (`+`, `-`, ` `).
pub(crate) struct DiffLine {
    pub(crate) kind: &'static str,
    pub(crate) text: String,
}

#[derive(Template)]
#[template(path = "workflow_diff.html")]
struct DiffPage {
    title: String,
    chrome: Option<Chrome>,
    name: String,
    from: u32,
    to: u32,
    numbers: Vec<u32>,
    lines: Vec<DiffLine>,
}

/// `GET /workflows/{name}/diff?from=A&to=B`: the unified diff of the two scrubbed texts.
pub(crate) async fn diff_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    Query(query): Query<DiffQuery>,
) -> Result<Html<String>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    let chrome = chrome::current();
    blocking("diff two workflow versions", move || {
        let numbers: Vec<u32> = shared
            .engine
            .workflow_versions(&account, &name)
            .map_err(Error::definitions)?
            .iter()
            .map(|version| version.number)
            .collect();
        let newest = *numbers.last().ok_or_else(|| not_found(&name))?;
        let to = query.to.unwrap_or(newest);
        let from = query.from.unwrap_or(to.saturating_sub(1).max(1));
        let diff = shared
            .engine
            .workflow_diff(&account, &name, from, to)
            .map_err(Error::definitions)?
            .ok_or_else(|| not_found(&name))?;
        let lines = diff
            .lines()
            .map(|line| DiffLine {
                kind: match line.chars().next() {
                    Some('+') if !line.starts_with("+++") => "added",
                    Some('-') if !line.starts_with("---") => "removed",
                    Some('@') => "hunk",
                    _ => "same",
                },
                text: line.to_owned(),
            })
            .collect();
        Ok(render(&DiffPage {
            title: format!("{name}: version {from} to {to}"),
            chrome,
            name,
            from,
            to,
            numbers,
            lines,
        }))
    })
    .await?
}
