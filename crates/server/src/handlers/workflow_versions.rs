//! Workflow versions (issue 17 §3) through the JSON API: every saved change of
//! `workflows/NAME.yaml` is a version (the workspace revision that wrote it: number, author,
//! time, message); a save is parsed first (G1) and refused, naming the line, when it holds a
//! current value of the account. What is shown, exported or diffed is scrubbed of the account's
//! current values, so it holds connection references only.

use api_types::{SaveWorkflowRequest, WorkflowDiff, WorkflowVersionText, WorkflowVersionView};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;

use crate::authn::Authenticated;
use crate::handlers::files::author_of;
use crate::handlers::{audit, blocking};
use crate::{AppState, Error};
use platform::views::author_parts;

/// The most bytes of a saved workflow's text.
const MAX_TEXT_BYTES: usize = spec::limits::MAX_FILE_BYTES;

pub(crate) fn version_view(version: &engine::WorkflowVersion) -> WorkflowVersionView {
    let (author_kind, author) = author_parts(&version.author);
    WorkflowVersionView {
        name: version.name.clone(),
        number: version.number,
        author_kind: author_kind.to_owned(),
        author,
        at: i64::try_from(version.unix_millis).unwrap_or(i64::MAX),
        message: version.message.clone(),
        revision: version.revision.clone(),
    }
}

/// The answer for a workflow that has no version (or not the one asked for), to the API and
/// the console alike.
pub(crate) fn not_found(name: &str) -> Error {
    Error::NotFound {
        what: "workflow",
        id: name.to_owned(),
    }
}

/// `GET /api/workflows/{name}/versions`: oldest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Json<Vec<WorkflowVersionView>>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("list a workflow's versions", move || {
        let versions = shared
            .engine
            .workflow_versions(&account, &name)
            .map_err(Error::definitions)?;
        if versions.is_empty() {
            return Err(not_found(&name));
        }
        Ok(Json(versions.iter().map(version_view).collect()))
    })
    .await?
}

async fn text_of(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
    number: Option<u32>,
) -> Result<Json<WorkflowVersionText>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("read a workflow version", move || {
        let (version, text) = shared
            .engine
            .workflow_version_text(&account, &name, number)
            .map_err(Error::definitions)?
            .ok_or_else(|| not_found(&name))?;
        Ok(Json(WorkflowVersionText {
            version: version_view(&version),
            text,
        }))
    })
    .await?
}

/// `GET /api/workflows/{name}/versions/{number}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((name, number)): Path<(String, u32)>,
) -> Result<Json<WorkflowVersionText>, Error> {
    text_of(&state, &authenticated, name, Some(number)).await
}

/// `GET /api/workflows/{name}/export`: the newest version.
pub(crate) async fn export(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Json<WorkflowVersionText>, Error> {
    text_of(&state, &authenticated, name, None).await
}

/// `?from=A&to=B`; by default the newest version against the one before it.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct DiffQuery {
    from: Option<u32>,
    to: Option<u32>,
}

/// `GET /api/workflows/{name}/diff?from=A&to=B`.
pub(crate) async fn diff(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<WorkflowDiff>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    blocking("diff two workflow versions", move || {
        let newest = shared
            .engine
            .workflow_versions(&account, &name)
            .map_err(Error::definitions)?
            .last()
            .map(|version| version.number)
            .ok_or_else(|| not_found(&name))?;
        let to = query.to.unwrap_or(newest);
        let from = query.from.unwrap_or(to.saturating_sub(1).max(1));
        let diff = shared
            .engine
            .workflow_diff(&account, &name, from, to)
            .map_err(Error::definitions)?
            .ok_or_else(|| not_found(&name))?;
        Ok(Json(WorkflowDiff {
            name,
            from,
            to,
            diff,
        }))
    })
    .await?
}

/// `PUT /api/workflows/{name}`: the next version, by the request's person or key, parsed first
/// (G1); a refusal writes nothing and is audited.
pub(crate) async fn save(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    Json(request): Json<SaveWorkflowRequest>,
) -> Result<(StatusCode, Json<WorkflowVersionView>), Error> {
    // The text's length in characters is held to the document's limit (the parser's) before
    // this runs; a text within it but longer in bytes is the parser's to refuse, at its place.
    if request.text.len() > MAX_TEXT_BYTES {
        return Err(Error::InvalidInput {
            field: "text",
            reason: format!(
                "at most {MAX_TEXT_BYTES} bytes, the largest workflow file there is; {} given",
                request.text.len()
            ),
        });
    }
    if !engine::is_definition_name(&name) {
        return Err(Error::InvalidInput {
            field: "name",
            reason: "a workflow's name is letters, digits, `-` and `_`, at most 64".to_owned(),
        });
    }
    let author = author_of(&authenticated)?;
    let shared = state.shared.clone();
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("save a workflow version", move || {
        let message = if request.message.trim().is_empty() {
            "saved through the server".to_owned()
        } else {
            request.message
        };
        // Announced first: an intent that cannot be written saves nothing (audit or nothing).
        let announced = crate::workspace_recovery::announce(
            &shared,
            &account,
            actor.clone(),
            &author,
            &[format!("workflows/{name}.yaml")],
        )?;
        let intent = announced.intent.clone();
        let saved = shared.engine.save_workflow_version(
            &account,
            &name,
            &request.text,
            &author,
            &message,
        );
        match saved {
            Ok(version) => {
                audit(
                    &shared,
                    &account,
                    actor,
                    storage::AuditAction::WorkflowSave,
                    &json!({"intent": intent, "workflow": name, "version": version.number, "revision": version.revision}),
                )?;
                Ok((StatusCode::CREATED, Json(version_view(&version))))
            }
            Err(source) => {
                let refused = Error::definitions(source);
                audit(
                    &shared,
                    &account,
                    actor,
                    storage::AuditAction::WorkflowSaveRefused,
                    &json!({"intent": intent, "workflow": name, "reason": refused.status_and_public_message().1}),
                )?;
                Err(refused)
            }
        }
    })
    .await?
}
