//! The account's workspace through the server: its files, one file, writes and the history
//! (G25). Every write, by a person or an API key, is one revision authored by them (a key is
//! recorded as itself, never as a person), screened like the engine's copy-back: a path, a
//! message or a content holding a current value of the account is refused whole (G19). What is
//! read is scrubbed of the account's current values before it is answered.
//!
//! The JSON API and the console's forms call the same functions, so both doors keep the same
//! rules and audit entries.

use api_types::workspace::{
    WorkspaceChange, WorkspaceFileItem, WorkspaceFileView, WorkspaceRevisionView,
    WorkspaceWriteRequest,
};
use askama::Template;
use auth::Role;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use base64::Engine as _;
use redact::Redactor;
use serde::Deserialize;
use serde_json::json;
use storage::{AccountId, Actor};
use workspace::{Author, Change, RelPath, Revision, Workspace};

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::{account_redactor, audit, blocking};
use crate::html::{FormMistake, csrf_token, render, when};
use crate::state::Shared;
use crate::{AppState, Error};

/// The most bytes of one file an answer carries; the rest is cut, and said to be.
const MAX_SHOWN_BYTES: u64 = 1024 * 1024;
/// The largest file the server shows: it is scrubbed whole before it is cut.
const MAX_SCRUBBED_BYTES: u64 = 16 * 1024 * 1024;
/// The most changes one write may carry.
const MAX_CHANGES: usize = 1_000;
/// The most bytes of a revision's message.
const MAX_MESSAGE_BYTES: usize = 2_000;
/// The most revisions a history answer lists, newest first.
const MAX_LISTED_REVISIONS: usize = 200;

fn open(shared: &Shared, account: &AccountId) -> Result<Workspace, Error> {
    shared
        .engine
        .workspaces()
        .for_account(account)
        .map_err(|source| Error::Workspace {
            operation: "open the account's workspace",
            source,
        })
}

/// The revision's author: the person or the key, as the request's actor says.
pub(crate) fn author_of(authenticated: &Authenticated) -> Result<Author, Error> {
    match &authenticated.actor {
        Actor::Person { id, .. } => Ok(Author::Person { id: id.clone() }),
        Actor::ApiKey { id } => Ok(Author::ApiKey { id: id.clone() }),
        other => Err(Error::Forbidden {
            principal: format!("{} {}", other.kind(), other.id()),
            method: "POST".to_owned(),
            route: "a workspace write".to_owned(),
        }),
    }
}

fn parse_path(requested: &str) -> Result<RelPath, Error> {
    // The reason alone: the path as requested is not repeated (it can hold anything).
    RelPath::parse(requested).map_err(|refusal| Error::InvalidInput {
        field: "path",
        reason: refusal.reason.to_string(),
    })
}

/// `?path=<relative path>` of a file.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct PathQuery {
    /// The file's path relative to the workspace.
    path: Option<String>,
}

impl PathQuery {
    fn required(&self) -> Result<RelPath, Error> {
        let Some(path) = &self.path else {
            return Err(Error::InvalidInput {
                field: "path",
                reason: "the query needs `path`, the file's path relative to the workspace \
                         (e.g. ?path=reports/2026-11.txt)"
                    .to_owned(),
            });
        };
        parse_path(path)
    }
}

/// The account's files, their paths scrubbed (a file put in by hand was never screened), and
/// whether the listing is a part of the folder.
async fn listing(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<(Vec<WorkspaceFileItem>, bool), Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("list workspace files", move || {
        let listing = open(&shared, &account)?
            .list_files()
            .map_err(|source| Error::Workspace {
                operation: "list the workspace's files",
                source,
            })?;
        let redactor = account_redactor(&shared, &account)?;
        let files = listing
            .files
            .into_iter()
            .map(|file| WorkspaceFileItem {
                path: redactor.scrub(&file.path).into_inner(),
                bytes: file.bytes,
            })
            .collect();
        Ok((files, listing.truncated))
    })
    .await?
}

/// `GET /api/workspace/files`: the files of the account's working folder, sorted by path. A
/// folder of more than `workspace::MAX_LISTED_ENTRIES` entries is listed in part, and the
/// answer says so in `x-stepward-listing: partial`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Response, Error> {
    let (files, truncated) = listing(&state, &authenticated).await?;
    let mut response = Json(files).into_response();
    if truncated {
        response.headers_mut().insert(
            "x-stepward-listing",
            axum::http::HeaderValue::from_static("partial"),
        );
    }
    Ok(response)
}

async fn read(
    state: &AppState,
    authenticated: &Authenticated,
    path: RelPath,
) -> Result<WorkspaceFileView, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("read a workspace file", move || {
        let contents = open(&shared, &account)?
            .read_file(&path, MAX_SCRUBBED_BYTES)
            .map_err(|source| Error::Workspace {
                operation: "read a workspace file",
                source,
            })?
            .ok_or_else(|| Error::NotFound {
                what: "file",
                id: path.to_string(),
            })?;
        if contents.total_bytes > MAX_SCRUBBED_BYTES {
            return Err(Error::InvalidInput {
                field: "path",
                reason: format!(
                    "the file is {} bytes; the server shows files of at most {MAX_SCRUBBED_BYTES} \
                     bytes (a step reads it whole at /work)",
                    contents.total_bytes
                ),
            });
        }
        // Files are screened when written, but a file put into the folder by hand, or written
        // before a value entered the vault, was not. The whole file is scrubbed before it is
        // cut to what is shown, so no value is ever cut in half and half shown.
        let mut bytes = account_redactor(&shared, &account)?
            .scrub_bytes(&contents.bytes)
            .into_inner();
        let cut = usize::try_from(MAX_SHOWN_BYTES).unwrap_or(usize::MAX);
        bytes.truncate(cut);
        let (encoding, content) = match String::from_utf8(bytes) {
            Ok(text) => ("utf-8", text),
            // A cut may fall inside a character of a text file: it is shown up to there.
            Err(error) if error.utf8_error().error_len().is_none() => {
                let valid = error.utf8_error().valid_up_to();
                let mut bytes = error.into_bytes();
                bytes.truncate(valid);
                ("utf-8", String::from_utf8(bytes).unwrap_or_default())
            }
            Err(error) => (
                "base64",
                base64::engine::general_purpose::STANDARD.encode(error.into_bytes()),
            ),
        };
        Ok(WorkspaceFileView {
            path: path.to_string(),
            total_bytes: contents.total_bytes,
            truncated: contents.total_bytes > MAX_SHOWN_BYTES,
            encoding: encoding.to_owned(),
            content,
        })
    })
    .await?
}

/// `GET /api/workspace/file?path=...`: one file's contents, scrubbed.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(query): Query<PathQuery>,
) -> Result<Json<WorkspaceFileView>, Error> {
    let path = query.required()?;
    Ok(Json(read(&state, &authenticated, path).await?))
}

async fn revisions(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<Vec<WorkspaceRevisionView>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("read the workspace's history", move || {
        let latest = open(&shared, &account)?
            .latest(MAX_LISTED_REVISIONS)
            .map_err(|source| Error::Workspace {
                operation: "read the workspace's history",
                source,
            })?;
        // Messages and paths written before a value entered the vault were not screened.
        let redactor = account_redactor(&shared, &account)?;
        Ok(latest
            .iter()
            .map(|revision| scrubbed_view(&redactor, revision))
            .collect())
    })
    .await?
}

/// A revision's view, its words (message, paths, author) scrubbed of the account's current
/// values.
fn scrubbed_view(redactor: &Redactor, revision: &Revision) -> WorkspaceRevisionView {
    let scrub = |text: &str| redactor.scrub(text).into_inner();
    let mut view = platform::views::revision_view(revision);
    view.message = scrub(&view.message);
    view.author = scrub(&view.author);
    for change in &mut view.changes {
        change.path = scrub(&change.path);
    }
    view
}

/// `GET /api/workspace/revisions`: the history, newest first, with authors.
pub(crate) async fn history(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<WorkspaceRevisionView>>, Error> {
    Ok(Json(revisions(&state, &authenticated).await?))
}

fn decode_change(index: usize, change: &WorkspaceChange) -> Result<(RelPath, Change), Error> {
    let path = parse_path(&change.path)?;
    let invalid = |reason: String| Error::InvalidInput {
        field: "changes",
        reason: format!("change {index}: {reason}"),
    };
    match (change.action.as_str(), &change.content) {
        ("delete", None) => Ok((path, Change::Delete)),
        ("delete", Some(_)) => Err(invalid("a deletion carries no content".to_owned())),
        ("write", None) => Err(invalid(
            "a write needs `content` (use action `delete` to remove a file)".to_owned(),
        )),
        ("write", Some(content)) => {
            let bytes = match change.encoding.as_deref().unwrap_or("utf-8") {
                "utf-8" => content.as_bytes().to_vec(),
                "base64" => base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|error| invalid(format!("the content is not base64: {error}")))?,
                other => {
                    return Err(invalid(format!(
                        "the encoding {other:?} is not known; use `utf-8` or `base64`"
                    )));
                }
            };
            Ok((path, Change::Write(bytes)))
        }
        (other, _) => Err(invalid(format!(
            "the action {other:?} is not known; use `write` or `delete`"
        ))),
    }
}

/// Records `request` as one revision by the request's person or key, audits it (paths only),
/// and answers the revision.
async fn commit(
    state: &AppState,
    authenticated: &Authenticated,
    request: WorkspaceWriteRequest,
) -> Result<WorkspaceRevisionView, Error> {
    if request.changes.is_empty() || request.changes.len() > MAX_CHANGES {
        return Err(Error::InvalidInput {
            field: "changes",
            reason: format!("a write carries from 1 to {MAX_CHANGES} changes"),
        });
    }
    if request.message.len() > MAX_MESSAGE_BYTES {
        return Err(Error::InvalidInput {
            field: "message",
            reason: format!("at most {MAX_MESSAGE_BYTES} bytes"),
        });
    }
    let changes = request
        .changes
        .iter()
        .enumerate()
        .map(|(index, change)| decode_change(index, change))
        .collect::<Result<Vec<_>, _>>()?;
    let author = author_of(authenticated)?;
    let message = if request.message.trim().is_empty() {
        "written through the server".to_owned()
    } else {
        request.message
    };
    let shared = state.shared.clone();
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("write to the workspace", move || {
        let screen = account_redactor(&shared, &account)?;
        let paths: Vec<String> = changes.iter().map(|(path, _)| path.to_string()).collect();
        // The intent comes first and must be written: a write the log cannot announce does
        // not happen. Its outcome follows the commit; a process stopped in between is
        // recovered by the next process that opens the data (`engine::workspace_writes`).
        let announced =
            crate::workspace_recovery::announce(&shared, &account, actor.clone(), &author, &paths)?;
        let intent = announced.intent.clone();
        // Every workflow and agent file is parsed first (G1); one revision or nothing.
        let confirmation = engine::ReachConfirmation {
            confirmed: request.confirm_reach,
            except: None,
        };
        let committed = shared.engine.write_definitions_confirming(
            &account,
            &author,
            &message,
            changes,
            &[],
            &confirmation,
        );
        let revision = match committed {
            Ok(revision) => revision,
            // Deleting what is not there is an answer about the folder, not a refusal.
            Err(engine::DefinitionWriteError::Workspace(workspace::Error::NoSuchFile { path })) => {
                audit(
                    &shared,
                    &account,
                    actor,
                    storage::AuditAction::WorkspaceWriteRefused,
                    &json!({"intent": intent, "paths": paths, "reason": "no such file"}),
                )?;
                return Err(Error::NotFound {
                    what: "file",
                    id: path,
                });
            }
            Err(source) => {
                // A refusal is recorded too (paths, scrubbed, and the reason; never a value):
                // repeated refusals are someone probing for a credential's value.
                let refused = Error::definitions(source);
                audit(
                    &shared,
                    &account,
                    actor,
                    storage::AuditAction::WorkspaceWriteRefused,
                    &json!({
                        "intent": intent,
                        "paths": paths,
                        "reason": refused.status_and_public_message().1,
                    }),
                )?;
                return Err(refused);
            }
        };
        audit(
            &shared,
            &account,
            actor,
            storage::AuditAction::WorkspaceWrite,
            &json!({"intent": intent, "revision": revision.id.as_str(), "paths": paths}),
        )?;
        Ok(scrubbed_view(&screen, &revision))
    })
    .await?
}

/// `POST /api/workspace/revisions`: every change in one revision, or none of them.
pub(crate) async fn write(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<WorkspaceWriteRequest>,
) -> Result<(StatusCode, Json<WorkspaceRevisionView>), Error> {
    let revision = commit(&state, &authenticated, request).await?;
    Ok((StatusCode::CREATED, Json(revision)))
}

/// `path` for a query string: everything but unreserved characters and `/` percent-encoded.
fn query_value(path: &str) -> String {
    let mut encoded = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

struct FileRow {
    path: String,
    href: String,
    bytes: u64,
}

struct ChangeLine {
    path: String,
    deleted: bool,
}

struct RevisionLine {
    when: String,
    author_kind: String,
    author: String,
    message: String,
    changes: Vec<ChangeLine>,
}

#[derive(Template)]
#[template(path = "files.html")]
struct FilesPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    may_write: bool,
    files: Vec<FileRow>,
    truncated: bool,
    max_listed: usize,
    history: Vec<RevisionLine>,
    typed_path: String,
    typed_content: String,
    typed_message: String,
    error: Option<String>,
    /// The saved workflows a refused write would change, for the confirmation box.
    to_confirm: String,
}

/// The files page, with the write form as `typed` (empty, or as sent with its refusal).
async fn files_page_with(
    state: &AppState,
    authenticated: &Authenticated,
    typed: WriteForm,
    error: Option<String>,
    to_confirm: Vec<String>,
) -> Result<Html<String>, Error> {
    let (files, truncated) = listing(state, authenticated).await?;
    let history = revisions(state, authenticated).await?;
    // A person who wrote a revision reads by name, not id (issue 42, point 6).
    let people = crate::handlers::names_by_id(
        &state
            .shared
            .store
            .people(&authenticated.account())
            .map_err(Error::storage("list people"))?,
    );
    Ok(render(&FilesPage {
        title: "Files",
        chrome: chrome::current(),
        csrf: csrf_token(&state.shared, authenticated),
        may_write: authenticated.principal.role() >= Role::Member,
        files: files
            .into_iter()
            .map(|file| FileRow {
                href: format!("/files/view?path={}", query_value(&file.path)),
                path: file.path,
                bytes: file.bytes,
            })
            .collect(),
        truncated,
        max_listed: workspace::MAX_LISTED_ENTRIES,
        history: history
            .into_iter()
            .map(|revision| RevisionLine {
                when: when(revision.at),
                author_kind: match people.get(&revision.author) {
                    Some(_) if revision.author_kind == "person" => String::new(),
                    _ => revision.author_kind.replace('_', " "),
                },
                author: match people.get(&revision.author) {
                    Some(name) if revision.author_kind == "person" => name.clone(),
                    _ => revision.author,
                },
                message: revision.message,
                changes: revision
                    .changes
                    .into_iter()
                    .map(|change| ChangeLine {
                        path: change.path,
                        deleted: change.deleted,
                    })
                    .collect(),
            })
            .collect(),
        typed_path: typed.path,
        typed_content: typed.content,
        typed_message: typed.message,
        error,
        to_confirm: to_confirm.join(", "),
    }))
}

/// `GET /files`: the files, a form to write one (members), and the history with authors.
pub(crate) async fn files_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let empty = WriteForm {
        path: String::new(),
        content: String::new(),
        message: String::new(),
        confirm_reach: String::new(),
    };
    files_page_with(&state, &authenticated, empty, None, Vec::new()).await
}

#[derive(Template)]
#[template(path = "file.html")]
struct FilePage {
    title: String,
    chrome: Option<Chrome>,
    csrf: String,
    may_write: bool,
    /// The text, or `None` for a binary file.
    content: Option<String>,
    truncated: bool,
    total_bytes: u64,
    max_shown: u64,
    /// Why the last delete was refused, beside its button.
    error: Option<String>,
}

/// `GET /files/view?path=...`: one file, its text escaped (a binary file is not shown).
pub(crate) async fn file_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(query): Query<PathQuery>,
) -> Result<Html<String>, Error> {
    let path = query.required()?;
    let file = read(&state, &authenticated, path).await?;
    Ok(file_page_of(&state, &authenticated, file, None))
}

/// One file's page, with a refused delete's reason beside its button when there is one.
fn file_page_of(
    state: &AppState,
    authenticated: &Authenticated,
    file: WorkspaceFileView,
    error: Option<String>,
) -> Html<String> {
    render(&FilePage {
        csrf: csrf_token(&state.shared, authenticated),
        may_write: authenticated.principal.role() >= Role::Member,
        content: (file.encoding == "utf-8").then_some(file.content),
        title: file.path,
        chrome: chrome::current(),
        truncated: file.truncated,
        total_bytes: file.total_bytes,
        max_shown: MAX_SHOWN_BYTES,
        error,
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct WriteForm {
    path: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    message: String,
    /// The saved workflows whose changed reach the person confirms, comma-separated (the box
    /// the page shows beside a refusal that lists them).
    #[serde(default)]
    confirm_reach: String,
}

/// `POST /files`: writes one file as a revision by the signed-in person; a refused write
/// answers the files page again with what was typed and why.
pub(crate) async fn write_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<WriteForm>,
) -> Result<Response, Error> {
    let path = form.path.trim().to_owned();
    let request = WorkspaceWriteRequest {
        message: form.message.clone(),
        changes: vec![WorkspaceChange {
            path: path.clone(),
            action: "write".to_owned(),
            content: Some(form.content.clone()),
            encoding: None,
        }],
        confirm_reach: form
            .confirm_reach
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    let revision = match commit(&state, &authenticated, request).await {
        Ok(revision) => revision,
        Err(error) => {
            let to_confirm = match &error {
                Error::DefinitionRefused {
                    source: engine::DefinitionWriteError::ChangesReach { workflows },
                } => workflows
                    .iter()
                    .map(|affected| affected.workflow.clone())
                    .collect(),
                _ => Vec::new(),
            };
            let mistake = FormMistake::of(error)?;
            let page = files_page_with(
                &state,
                &authenticated,
                form,
                Some(mistake.message),
                to_confirm,
            )
            .await?;
            return Ok((mistake.status, page).into_response());
        }
    };
    let written = revision
        .changes
        .first()
        .map_or(path, |change| change.path.clone());
    Ok(Redirect::to(&format!("/files/view?path={}", query_value(&written))).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeleteForm {
    path: String,
}

/// `POST /files/delete`: deletes one file as a revision by the signed-in person.
pub(crate) async fn delete_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<DeleteForm>,
) -> Result<Response, Error> {
    let request = WorkspaceWriteRequest {
        message: format!("deleted {}", form.path),
        changes: vec![WorkspaceChange {
            path: form.path.clone(),
            action: "delete".to_owned(),
            content: None,
            encoding: None,
        }],
        confirm_reach: Vec::new(),
    };
    let Err(error) = commit(&state, &authenticated, request).await else {
        return Ok(Redirect::to("/files").into_response());
    };
    // A refused delete of a file that is there answers its page, the refusal beside the
    // button (issue 42, point 8); a path that is not a file's (or no longer is) answers the
    // refusal itself, as the error page.
    let Ok(path) = parse_path(&form.path) else {
        return Err(error);
    };
    let Ok(file) = read(&state, &authenticated, path).await else {
        return Err(error);
    };
    let mistake = FormMistake::of(error)?;
    let page = file_page_of(&state, &authenticated, file, Some(mistake.message));
    Ok((mistake.status, page).into_response())
}

#[cfg(test)]
mod tests {
    use super::query_value;

    #[test]
    fn query_values_keep_slashes_and_encode_the_rest() {
        assert_eq!(
            query_value("reports/2026 11&x=1.txt"),
            "reports/2026%2011%26x%3D1.txt"
        );
        assert_eq!(query_value("ünï"), "%C3%BCn%C3%AF");
    }
}
