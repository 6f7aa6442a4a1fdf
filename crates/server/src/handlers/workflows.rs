//! Workflows, their reach (G27), and starting runs: the JSON API and the console's workflow
//! screen, whose panel "What each step can reach" has one row for every step, internet
//! yes/no (or unknown, never read as no), the connections granted by name, under the caption
//! word for word ([`spec::REACH_CAPTION`]).

use std::sync::Arc;

use api_types::{
    Internet, ReachReport, ReachRow, RunDetail, StartRunRequest, WorkflowListItem,
    WorkflowStepView, WorkflowView,
};
use auth::{CsrfToken, Role};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use serde::Deserialize;
use spec::Workflow;

use crate::authn::Authenticated;
use crate::handlers::blocking;
use crate::handlers::runs::{detail, run_in_scope};
use crate::html::{escape, page};
use crate::layers::CSRF_FIELD;
use crate::state::Shared;
use crate::{AppState, Error, WorkflowSource};

fn source_of(shared: &Shared, operation: &'static str) -> Result<Arc<dyn WorkflowSource>, Error> {
    shared
        .workflows
        .clone()
        .ok_or(Error::WorkflowsUnavailable { operation })
}

/// A workflow of the account, parsed: the workflow, or the problems that keep it from running.
enum Loaded {
    Valid(Box<Workflow>),
    Invalid {
        file_name: String,
        problems: Vec<String>,
    },
}

fn load(shared: &Shared, account: &str, name: &str) -> Result<Loaded, Error> {
    let source = source_of(shared, "read a workflow")?;
    let text = source
        .workflow(account, name)?
        .ok_or_else(|| Error::NotFound {
            what: "workflow",
            id: name.to_owned(),
        })?;
    // Checked against the account too: no step may be granted a model key (G19).
    let names = crate::handlers::models::account_names(shared, account)?;
    Ok(
        match spec::parse_workflow_for_account(
            &text.file_name,
            &text.text,
            shared.engine.limit_maxima(),
            &names,
        ) {
            Ok(workflow) => Loaded::Valid(Box::new(workflow)),
            Err(diagnostics) => Loaded::Invalid {
                file_name: text.file_name,
                problems: diagnostics.iter().map(ToString::to_string).collect(),
            },
        },
    )
}

fn load_valid(shared: &Shared, account: &str, name: &str) -> Result<Workflow, Error> {
    match load(shared, account, name)? {
        Loaded::Valid(workflow) => Ok(*workflow),
        Loaded::Invalid { problems, .. } => Err(Error::WorkflowInvalid {
            name: name.to_owned(),
            problems: problems.len(),
        }),
    }
}

fn view(name: &str, loaded: Loaded) -> WorkflowView {
    match loaded {
        Loaded::Valid(workflow) => WorkflowView {
            name: name.to_owned(),
            file: workflow.file_name().to_owned(),
            valid: true,
            steps: workflow
                .steps()
                .iter()
                .map(|step| WorkflowStepView {
                    id: step.id().to_owned(),
                    gate: step.is_gate(),
                    explain: step.explain().to_owned(),
                })
                .collect(),
            problems: Vec::new(),
        },
        Loaded::Invalid {
            file_name,
            problems,
        } => WorkflowView {
            name: name.to_owned(),
            file: file_name,
            valid: false,
            steps: Vec::new(),
            problems,
        },
    }
}

/// The reach panel of a valid workflow, as the wire type.
fn reach_report(shared: &Shared, account: &str, workflow: &Workflow) -> Result<ReachReport, Error> {
    let source = source_of(shared, "read agents for the reach")?;
    let rows = spec::reach(workflow, &|agent| source.agent(account, agent));
    Ok(ReachReport {
        workflow: workflow.name().to_owned(),
        caption: spec::REACH_CAPTION.to_owned(),
        rows: rows
            .into_iter()
            .map(|row| {
                let (kind, agent) = match row.kind {
                    spec::ReachKind::Code => ("code", None),
                    spec::ReachKind::Agent { agent } => ("agent", Some(agent)),
                };
                let (internet, unknown_reason) = match row.internet {
                    spec::ReachInternet::Yes => (Internet::Yes, None),
                    spec::ReachInternet::No => (Internet::No, None),
                    spec::ReachInternet::Unknown { reason } => (Internet::Unknown, Some(reason)),
                };
                ReachRow {
                    step: row.step,
                    gate: row.gate,
                    kind: kind.to_owned(),
                    agent,
                    internet,
                    unknown_reason,
                    connections: row.connections,
                    secrets: row.secrets,
                    limits: row
                        .limits
                        .iter()
                        .map(|(key, value)| format!("{key}: {value}"))
                        .collect(),
                }
            })
            .collect(),
    })
}

fn list_items(shared: &Shared, account: &str) -> Result<Vec<WorkflowListItem>, Error> {
    let source = source_of(shared, "list workflows")?;
    let mut items = Vec::new();
    for name in source.workflow_names(account)? {
        let item = match load(shared, account, &name) {
            Ok(Loaded::Valid(workflow)) => WorkflowListItem {
                file: workflow.file_name().to_owned(),
                name,
                valid: true,
            },
            Ok(Loaded::Invalid { file_name, .. }) => WorkflowListItem {
                name,
                file: file_name,
                valid: false,
            },
            // Removed between the listing and the read: not listed.
            Err(Error::NotFound { .. }) => continue,
            Err(error) => return Err(error),
        };
        items.push(item);
    }
    Ok(items)
}

/// `GET /api/workflows`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<WorkflowListItem>>, Error> {
    Ok(Json(list_items(
        &state.shared,
        authenticated.principal.account_id(),
    )?))
}

/// `GET /api/workflows/{name}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Json<WorkflowView>, Error> {
    let loaded = load(&state.shared, authenticated.principal.account_id(), &name)?;
    Ok(Json(view(&name, loaded)))
}

/// `GET /api/workflows/{name}/reach`.
pub(crate) async fn reach(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Json<ReachReport>, Error> {
    let account = authenticated.principal.account_id();
    let workflow = load_valid(&state.shared, account, &name)?;
    Ok(Json(reach_report(&state.shared, account, &workflow)?))
}

/// Starts a run of the account's workflow `name` as the principal, and drives it until it
/// ends or parks.
async fn start(
    state: &AppState,
    authenticated: &Authenticated,
    name: &str,
    inputs: serde_json::Value,
) -> Result<RunDetail, Error> {
    let account = authenticated.account();
    let workflow = load_valid(&state.shared, account.as_str(), name)?;
    let engine = state.shared.engine.clone();
    let who = authenticated.actor.clone();
    let run_account = account.clone();
    let outcome = blocking("start a run", move || {
        engine.start_run(&run_account, &workflow, inputs, who)
    })
    .await?;
    let summary = match outcome {
        Ok(summary) => summary,
        Err(
            source @ (engine::Error::ForbiddenInputKeys { .. }
            | engine::Error::InputMismatch { .. }
            | engine::Error::CannotRunHere { .. }
            | engine::Error::WorkflowInvalid { .. }
            | engine::Error::WorkflowChanged { .. }),
        ) => {
            return Err(Error::RunRefused {
                workflow: name.to_owned(),
                source: Box::new(source),
            });
        }
        Err(source) => {
            return Err(Error::Engine {
                run: format!("(new run of {name})"),
                source: Box::new(source),
            });
        }
    };
    let record = run_in_scope(&state.shared, authenticated, &summary.run.0)?;
    detail(&state.shared, record)
}

/// `POST /api/runs`: starts a run; answers its detail once it ends or parks.
pub(crate) async fn start_with_json(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<StartRunRequest>,
) -> Result<(StatusCode, Json<RunDetail>), Error> {
    let detail = start(&state, &authenticated, &request.workflow, request.inputs).await?;
    Ok((StatusCode::CREATED, Json(detail)))
}

#[derive(Deserialize)]
pub(crate) struct StartRunForm {
    workflow: String,
    /// The inputs as JSON text; empty means none.
    #[serde(default)]
    inputs: String,
}

/// `POST /runs`: the workflow screen's start form; to the new run's page.
pub(crate) async fn start_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<StartRunForm>,
) -> Result<Response, Error> {
    let inputs = if form.inputs.trim().is_empty() {
        serde_json::json!({})
    } else {
        serde_json::from_str(&form.inputs).map_err(|error| Error::InvalidInput {
            field: "inputs",
            reason: format!("the inputs are not JSON: {error}"),
        })?
    };
    let detail = start(&state, &authenticated, &form.workflow, inputs).await?;
    Ok(Redirect::to(&format!("/runs/{}", detail.summary.run)).into_response())
}

/// `GET /workflows`: the account's workflows.
pub(crate) async fn list_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let items = list_items(&state.shared, authenticated.principal.account_id())?;
    let mut body = String::from("<h1>Workflows</h1>\n<ul>\n");
    for item in &items {
        body.push_str(&format!(
            "<li><a href=\"/workflows/{}\">{}</a>{}</li>\n",
            escape(&item.name),
            escape(&item.name),
            if item.valid { "" } else { " (invalid)" }
        ));
    }
    body.push_str("</ul>");
    Ok(page("Workflows", &body))
}

fn internet_cell(row: &ReachRow) -> String {
    match row.internet {
        Internet::Yes => "yes".to_owned(),
        Internet::No => "no".to_owned(),
        Internet::Unknown => format!(
            "unknown ({})",
            escape(row.unknown_reason.as_deref().unwrap_or("not known"))
        ),
    }
}

/// The start form's first inputs: every declared input with an empty value of its type, for
/// the person to fill in.
fn input_skeleton(workflow: &Workflow) -> String {
    let inputs: serde_json::Map<String, serde_json::Value> = workflow
        .inputs()
        .iter()
        .map(|input| {
            let empty = match input.kind() {
                spec::InputKind::String => serde_json::json!(""),
                spec::InputKind::Integer | spec::InputKind::Number => serde_json::json!(0),
                spec::InputKind::Boolean => serde_json::json!(false),
                spec::InputKind::Object => serde_json::json!({}),
                spec::InputKind::Array => serde_json::json!([]),
            };
            (input.name().to_owned(), empty)
        })
        .collect();
    serde_json::Value::Object(inputs).to_string()
}

/// What a run of `workflow` needs before it can start: its inputs with their types, and each
/// connection it names with whether the account's vault has it (names and states only).
fn needs_section(shared: &Shared, account: &str, workflow: &Workflow) -> String {
    let mut section = String::from("<section id=\"needs\">\n<h2>What a run needs</h2>\n<ul>\n");
    for input in workflow.inputs() {
        section.push_str(&format!(
            "<li>input <code>{}</code>: {}</li>\n",
            escape(input.name()),
            escape(input.kind().as_str())
        ));
    }
    let mut aliases: Vec<&str> = workflow
        .steps()
        .iter()
        .flat_map(|step| step.connections().iter().map(String::as_str))
        .collect();
    aliases.sort_unstable();
    aliases.dedup();
    let known = shared
        .vault
        .as_ref()
        .map(|vault| vault.connections().list(account));
    for alias in aliases {
        let state = match &known {
            Some(Ok(connections)) => match connections.iter().find(|info| info.alias == alias) {
                Some(info) if info.revoked_at.is_some() => {
                    "revoked: a run is refused until an admin sets it again on the Vault page"
                }
                Some(_) => "set",
                None => "not set: an admin adds it on the Vault page before a run can start",
            },
            Some(Err(_)) | None => "unknown (the vault cannot be read here)",
        };
        section.push_str(&format!(
            "<li>connection <code>{}</code>: {state}</li>\n",
            escape(alias)
        ));
    }
    section.push_str("</ul>\n</section>\n");
    section
}

/// `GET /workflows/{name}`: the workflow screen: each step with its explanation, the panel
/// "What each step can reach", and (for members) the form that starts a run.
pub(crate) async fn workflow_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let account = authenticated.principal.account_id();
    let workflow = match load(shared, account, &name)? {
        Loaded::Valid(workflow) => *workflow,
        Loaded::Invalid { problems, .. } => {
            let mut body = format!(
                "<h1>{}</h1>\n<p>This workflow does not validate, so it cannot run:</p>\n<ul>\n",
                escape(&name)
            );
            for problem in &problems {
                body.push_str(&format!("<li>{}</li>\n", escape(problem)));
            }
            body.push_str("</ul>");
            return Ok(page(&name, &body));
        }
    };
    let report = reach_report(shared, account, &workflow)?;
    let mut body = format!(
        "<h1>{}</h1>\n<h2>Steps</h2>\n<ol>\n",
        escape(workflow.name())
    );
    for step in workflow.steps() {
        body.push_str(&format!(
            "<li><strong>{}</strong>{}: {}</li>\n",
            escape(step.id()),
            if step.is_gate() {
                " (waits for a person's approval)"
            } else {
                ""
            },
            escape(step.explain())
        ));
    }
    // A limits column only when some step declares limits (non-default ones only, G27).
    let with_limits = report.rows.iter().any(|row| !row.limits.is_empty());
    body.push_str(&format!(
        "</ol>\n<section id=\"reach\">\n<h2>What each step can reach</h2>\n<p>{}</p>\n\
         <table>\n<tr><th>Step</th><th>Internet</th><th>Connections</th>{}</tr>\n",
        escape(&report.caption),
        if with_limits { "<th>Limits</th>" } else { "" }
    ));
    for row in &report.rows {
        let limits_cell = if !with_limits {
            String::new()
        } else if row.limits.is_empty() {
            String::from("<td>default</td>")
        } else {
            format!("<td>{}</td>", escape(&row.limits.join(", ")))
        };
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td>{limits_cell}</tr>\n",
            escape(&row.step),
            internet_cell(row),
            if row.connections.is_empty() {
                "none".to_owned()
            } else {
                escape(&row.connections.join(", "))
            }
        ));
    }
    body.push_str("</table>\n</section>\n");
    body.push_str(&needs_section(shared, account, &workflow));
    if let Some(session) = &authenticated.session
        && authenticated.principal.role() >= Role::Member
    {
        let csrf = CsrfToken::for_session(&shared.csrf_key, &session.token_hash);
        body.push_str(&format!(
            "<h2>Start a run</h2>\n<form method=\"post\" action=\"/runs\">\n\
             <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\n\
             <input type=\"hidden\" name=\"workflow\" value=\"{}\">\n\
             <label>Inputs (JSON) <textarea name=\"inputs\">{}</textarea></label>\n\
             <button type=\"submit\">Run</button>\n</form>",
            escape(csrf.as_str()),
            escape(&name),
            escape(&input_skeleton(&workflow))
        ));
    }
    Ok(page(workflow.name(), &body))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_start_form_lists_every_input_with_an_empty_value_of_its_type() {
        let workflow = spec::parse_workflow(
            "w.yaml",
            "name: w\npython: \"3.11\"\ninputs:\n  month: string\n  lines: array\n  top: integer\n\
             steps:\n  - id: s\n    explain: Does it.\n    code: |\n      def main():\n          \
             return 1\n",
        )
        .unwrap();
        let skeleton: serde_json::Value =
            serde_json::from_str(&super::input_skeleton(&workflow)).unwrap();
        assert_eq!(
            skeleton,
            serde_json::json!({"month": "", "lines": [], "top": 0})
        );
    }
}
