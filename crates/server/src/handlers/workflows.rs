//! Workflows, their reach (G27), and starting runs: the JSON API and the console's workflow
//! screen, whose panel "What each step can reach" has one row for every step, internet
//! yes/no (or unknown, never read as no), the connections granted by name, under the caption
//! word for word ([`spec::REACH_CAPTION`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use storage::AccountId;

use api_types::{
    Internet, ReachReport, ReachRow, RunDetail, StartRunRequest, WorkflowListItem,
    WorkflowStepView, WorkflowView,
};
use askama::Template;
use auth::Role;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use spec::Workflow;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::blocking;
use crate::handlers::runs::{detail, run_in_scope};
use crate::html::render;
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

fn load(shared: &Shared, account: &AccountId, name: &str) -> Result<Loaded, Error> {
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

fn load_valid(shared: &Shared, account: &AccountId, name: &str) -> Result<Workflow, Error> {
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
pub(crate) fn reach_report(
    shared: &Shared,
    account: &AccountId,
    workflow: &Workflow,
) -> Result<ReachReport, Error> {
    let source = source_of(shared, "read agents for the reach")?;
    let mut rows = spec::reach(workflow, &|agent| source.agent(account, agent));
    with_account_model_hosts(shared, account, &mut rows)?;
    Ok(report_of(shared, workflow, rows))
}

/// Names each model row's provider host from the account's providers.
pub(crate) fn with_account_model_hosts(
    shared: &Shared,
    account: &AccountId,
    rows: &mut [spec::ReachRow],
) -> Result<(), Error> {
    let providers = shared
        .store
        .model_providers(account)
        .map_err(Error::storage("read the account's model providers"))?;
    crate::reach::with_model_hosts(rows, &providers);
    Ok(())
}

/// Reach rows as the wire type, with this server's isolation notice.
pub(crate) fn report_of(
    shared: &Shared,
    workflow: &Workflow,
    rows: Vec<spec::ReachRow>,
) -> ReachReport {
    ReachReport {
        workflow: workflow.name().to_owned(),
        caption: spec::REACH_CAPTION.to_owned(),
        rows: rows.into_iter().map(crate::reach::reach_row_json).collect(),
        isolation: crate::reach::isolation_notice(&shared.options).map(str::to_owned),
    }
}

fn list_items(shared: &Shared, account: &AccountId) -> Result<Vec<WorkflowListItem>, Error> {
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

/// Starts a run of the account's workflow `name` as the principal: recorded, and its first
/// step queued for the workers (or parked, or refused).
async fn start(
    state: &AppState,
    authenticated: &Authenticated,
    name: &str,
    inputs: serde_json::Value,
) -> Result<RunDetail, Error> {
    let account = authenticated.account();
    let workflow = load_valid(&state.shared, &account, name)?;
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
    let record = run_in_scope(&state.shared, authenticated, summary.run.as_str())?;
    detail(&state.shared, record)
}

/// `POST /api/runs`: starts a run; answers `202 Accepted` at once, with the run's detail as it
/// stands and its address in `Location` (workers run its steps).
pub(crate) async fn start_with_json(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<StartRunRequest>,
) -> Result<crate::handlers::Accepted<RunDetail>, Error> {
    let detail = start(&state, &authenticated, &request.workflow, request.inputs).await?;
    let run = detail.summary.run.clone();
    Ok(crate::handlers::accepted(run.as_str(), detail))
}

/// `POST /runs`: the workflow screen's start form (one field per declared input,
/// `input.NAME`; or, for scripts, the whole inputs as one JSON object in `inputs`); to the new
/// run's page. A value that does not fit its type, or a run the engine refuses, answers the
/// workflow page again with what was typed and the error beside its field.
pub(crate) async fn start_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, Error> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    };
    let name = field("workflow").unwrap_or_default().to_owned();
    let typed: BTreeMap<String, String> = fields
        .iter()
        .filter_map(|(field, value)| {
            field
                .strip_prefix("input.")
                .map(|input| (input.to_owned(), value.clone()))
        })
        .collect();
    let account = authenticated.account();
    let inputs = match field("inputs") {
        Some(json) if !json.trim().is_empty() => {
            serde_json::from_str(json).map_err(|error| Error::InvalidInput {
                field: "inputs",
                reason: format!("the inputs are not JSON: {error}"),
            })?
        }
        _ if typed.is_empty() && field("inputs").is_some() => serde_json::json!({}),
        _ => {
            let workflow = load_valid(&state.shared, &account, &name)?;
            match form_inputs(&workflow, &typed) {
                Ok(inputs) => inputs,
                Err(errors) => {
                    let page = workflow_page_for(
                        &state.shared,
                        &authenticated,
                        &name,
                        Typed {
                            values: typed,
                            errors,
                            form_error: Some(
                                "Some inputs need a change; nothing was started.".to_owned(),
                            ),
                        },
                    )?;
                    return Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response());
                }
            }
        }
    };
    match start(&state, &authenticated, &name, inputs).await {
        Ok(detail) => Ok(Redirect::to(&format!("/runs/{}", detail.summary.run)).into_response()),
        Err(Error::RunRefused { source, .. }) if !typed.is_empty() => {
            let page = workflow_page_for(
                &state.shared,
                &authenticated,
                &name,
                Typed {
                    values: typed,
                    errors: BTreeMap::new(),
                    form_error: Some(format!("The run was refused: {source}")),
                },
            )?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
        Err(error) => Err(error),
    }
}

/// The inputs of a run from the form's fields, each converted by its declared type, or the
/// error of each field that does not fit.
fn form_inputs(
    workflow: &Workflow,
    typed: &BTreeMap<String, String>,
) -> Result<serde_json::Value, BTreeMap<String, String>> {
    let mut inputs = serde_json::Map::new();
    let mut errors = BTreeMap::new();
    for input in workflow.inputs() {
        let text = typed.get(input.name()).map(String::as_str).unwrap_or("");
        let value = match input.kind() {
            spec::InputKind::String => Ok(serde_json::Value::from(text)),
            spec::InputKind::Boolean => Ok(serde_json::Value::from(text == "true")),
            spec::InputKind::Integer => text
                .trim()
                .parse::<i64>()
                .map(serde_json::Value::from)
                .map_err(|_| "Write a whole number, such as 42.".to_owned()),
            spec::InputKind::Number => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(serde_json::Value::Number)
                .ok_or_else(|| "Write a number, such as 4.5.".to_owned()),
            kind @ (spec::InputKind::Object | spec::InputKind::Array) => {
                match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(value @ serde_json::Value::Object(_)) if kind == spec::InputKind::Object => {
                        Ok(value)
                    }
                    Ok(value @ serde_json::Value::Array(_)) if kind == spec::InputKind::Array => {
                        Ok(value)
                    }
                    Ok(_) if kind == spec::InputKind::Object => {
                        Err("Write a JSON object, such as {\"key\": \"value\"}.".to_owned())
                    }
                    Ok(_) => Err("Write a JSON array, such as [1, 2].".to_owned()),
                    Err(error) => Err(format!(
                        "This is not JSON: {error} (line {}, column {}).",
                        error.line(),
                        error.column()
                    )),
                }
            }
        };
        match value {
            Ok(value) => {
                inputs.insert(input.name().to_owned(), value);
            }
            Err(error) => {
                errors.insert(input.name().to_owned(), error);
            }
        }
    }
    if errors.is_empty() {
        Ok(serde_json::Value::Object(inputs))
    } else {
        Err(errors)
    }
}

/// `GET /workflows`: the account's workflows.
pub(crate) async fn list_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let items = list_items(&state.shared, authenticated.principal.account_id())?;
    Ok(render(&WorkflowsPage {
        title: "Workflows",
        chrome: chrome::current(),
        items,
    }))
}

#[derive(Template)]
#[template(path = "workflows.html")]
struct WorkflowsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    items: Vec<WorkflowListItem>,
}

/// A step of the workflow page.
struct StepLine {
    id: String,
    gate: bool,
    explain: String,
    /// A code step's code, folded under the step (issue 42, point 3).
    code: Option<String>,
    /// An agent step's agent: its name and description.
    agent: Option<(String, String)>,
}

/// A row of the reach panel, in words (the workflow page's and an interview's proposal's).
pub(crate) struct ReachLine {
    pub(crate) step: String,
    pub(crate) internet: String,
    pub(crate) connections: String,
    pub(crate) secrets: String,
    pub(crate) colleagues: String,
    pub(crate) model: String,
    pub(crate) limits: String,
}

/// The panel's rows in words.
pub(crate) fn reach_lines(rows: &[ReachRow]) -> Vec<ReachLine> {
    rows.iter()
        .map(|row| ReachLine {
            step: row.step.clone(),
            internet: internet_words(row),
            connections: spec::list_or_none(&row.connections),
            secrets: crate::reach::secrets_words(row),
            colleagues: spec::list_or_none(&row.colleagues),
            model: crate::reach::models_words(row),
            limits: if row.limits.is_empty() {
                "default".to_owned()
            } else {
                row.limits.join(", ")
            },
        })
        .collect()
}

/// One field of the start form.
struct InputField {
    name: String,
    kind: &'static str,
    /// `text`, `number`, `checkbox` or `json`.
    widget: &'static str,
    hint: &'static str,
    /// `1` for integers, `any` for numbers.
    step: &'static str,
    value: String,
    error: Option<String>,
}

/// A connection a run needs, and whether the vault has it.
struct ConnectionNeed {
    alias: String,
    state: &'static str,
    set: bool,
}

#[derive(Template)]
#[template(path = "workflow.html")]
struct WorkflowPage {
    title: String,
    chrome: Option<Chrome>,
    name: String,
    file: String,
    problems: Vec<String>,
    steps: Vec<StepLine>,
    caption: &'static str,
    /// Above the reach table of a server whose steps are not isolated.
    isolation: Option<&'static str>,
    rows: Vec<ReachLine>,
    with_limits: bool,
    /// Whether some step hands its task to an agent: the colleagues and model columns.
    with_agents: bool,
    inputs: Vec<InputField>,
    connections: Vec<ConnectionNeed>,
    /// Who sees a failed step (G15): the provider its inputs and printed text leave to.
    failures: String,
    /// The newest versions (issue 17 §3), and how many there are.
    versions: Vec<crate::handlers::workflow_versions_page::VersionLine>,
    version_count: usize,
    /// The workflow's newest runs (issue 42, point 3).
    recent: Vec<crate::handlers::home::HomeLine>,
    can_start: bool,
    csrf: String,
    form_error: Option<String>,
}

/// What a person typed into the start form, kept when it is shown again.
#[derive(Default)]
struct Typed {
    values: BTreeMap<String, String>,
    errors: BTreeMap<String, String>,
    form_error: Option<String>,
}

fn internet_words(row: &ReachRow) -> String {
    match row.internet {
        Internet::Yes => "yes".to_owned(),
        Internet::No => "no".to_owned(),
        Internet::Unknown => format!(
            "unknown ({})",
            row.unknown_reason.as_deref().unwrap_or("not known")
        ),
    }
}

/// The start form's fields: every declared input with the widget of its type and what was
/// typed (an empty value of its type at first).
fn input_fields(workflow: &Workflow, typed: &Typed) -> Vec<InputField> {
    workflow
        .inputs()
        .iter()
        .map(|input| {
            let (widget, hint, step, empty) = match input.kind() {
                spec::InputKind::String => ("text", "text", "", ""),
                spec::InputKind::Integer => ("number", "a whole number", "1", ""),
                spec::InputKind::Number => ("number", "a number", "any", ""),
                spec::InputKind::Boolean => ("checkbox", "yes or no", "", ""),
                spec::InputKind::Object => ("json", "a JSON object", "", "{}"),
                spec::InputKind::Array => ("json", "a JSON array", "", "[]"),
            };
            InputField {
                name: input.name().to_owned(),
                kind: input.kind().as_str(),
                widget,
                hint,
                step,
                value: typed
                    .values
                    .get(input.name())
                    .cloned()
                    .unwrap_or_else(|| empty.to_owned()),
                error: typed.errors.get(input.name()).cloned(),
            }
        })
        .collect()
}

/// Each connection a run of `workflow` names, with whether the account's vault has it (names
/// and states only).
fn connection_needs(
    shared: &Shared,
    account: &AccountId,
    workflow: &Workflow,
) -> Vec<ConnectionNeed> {
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
    aliases
        .into_iter()
        .map(|alias| {
            let (state, set) = match &known {
                Some(Ok(connections)) => {
                    match connections.iter().find(|info| info.alias == alias) {
                        Some(info) if info.revoked_at.is_some() => (
                            "revoked: a run is refused until an admin sets it again on the Vault page",
                            false,
                        ),
                        Some(_) => ("set", true),
                        None => (
                            "not set: an admin adds it on the Vault page before a run can start",
                            false,
                        ),
                    }
                }
                Some(Err(_)) | None => ("unknown (the vault cannot be read here)", false),
            };
            ConnectionNeed {
                alias: alias.to_owned(),
                state,
                set,
            }
        })
        .collect()
}

/// The workflow screen, with what was typed into its start form.
fn workflow_page_for(
    shared: &Shared,
    authenticated: &Authenticated,
    name: &str,
    typed: Typed,
) -> Result<Html<String>, Error> {
    let account = authenticated.principal.account_id();
    let chrome = chrome::current();
    let csrf = chrome
        .as_ref()
        .map(|chrome| chrome.csrf.clone())
        .unwrap_or_default();
    let mut page = WorkflowPage {
        title: name.to_owned(),
        chrome,
        name: name.to_owned(),
        file: String::new(),
        problems: Vec::new(),
        steps: Vec::new(),
        caption: spec::REACH_CAPTION,
        isolation: crate::reach::isolation_notice(&shared.options),
        rows: Vec::new(),
        with_limits: false,
        with_agents: false,
        inputs: Vec::new(),
        connections: Vec::new(),
        failures: String::new(),
        versions: Vec::new(),
        version_count: 0,
        recent: crate::handlers::home::recent_runs_of(shared, account, name)?,
        can_start: authenticated.session.is_some()
            && authenticated.principal.role() >= Role::Member,
        csrf,
        form_error: typed.form_error.clone(),
    };
    let mut versions =
        crate::handlers::workflow_versions_page::version_lines(shared, account, name)?;
    page.version_count = versions.len();
    versions.truncate(5);
    page.versions = versions;
    let workflow = match load(shared, account, name)? {
        Loaded::Valid(workflow) => *workflow,
        Loaded::Invalid {
            file_name,
            problems,
        } => {
            page.file = file_name;
            page.problems = problems;
            return Ok(render(&page));
        }
    };
    let source = source_of(shared, "read agents for the workflow page")?;
    let report = reach_report(shared, account, &workflow)?;
    page.title = workflow.name().to_owned();
    page.file = workflow.file_name().to_owned();
    page.steps = workflow
        .steps()
        .iter()
        .zip(&report.rows)
        .map(|(step, row)| StepLine {
            id: step.id().to_owned(),
            gate: step.is_gate(),
            explain: step.explain().to_owned(),
            code: step.code().map(str::to_owned),
            agent: row.agent.as_ref().map(|agent| {
                let description = source
                    .agent(account, agent)
                    .map(|found| found.description().to_owned())
                    .unwrap_or_else(|| "(no such agent in this account)".to_owned());
                (agent.clone(), description)
            }),
        })
        .collect();
    page.with_limits = report.rows.iter().any(|row| !row.limits.is_empty());
    page.with_agents = report.rows.iter().any(|row| row.agent.is_some());
    page.rows = reach_lines(&report.rows);
    page.inputs = input_fields(&workflow, &typed);
    page.connections = connection_needs(shared, account, &workflow);
    page.failures = shared.engine.who_sees_failures(account, &workflow);
    Ok(render(&page))
}

/// `GET /workflows/{name}`: the workflow screen: each step with its explanation, the panel
/// "What each step can reach", what a run needs, and (for members) the form that starts a run.
pub(crate) async fn workflow_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Html<String>, Error> {
    workflow_page_for(&state.shared, &authenticated, &name, Typed::default())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    fn workflow() -> spec::Workflow {
        spec::parse_workflow(
            "w.yaml",
            "name: w\npython: \"3.11\"\ninputs:\n  month: string\n  lines: array\n  top: integer\n  \
             rate: number\n  dry: boolean\nsteps:\n  - id: s\n    explain: Does it.\n    code: |\n      \
             def main():\n          return 1\n",
        )
        .unwrap()
    }

    #[test]
    fn the_start_form_has_one_field_of_its_type_per_input() {
        let fields = super::input_fields(&workflow(), &super::Typed::default());
        let widgets: Vec<(&str, &str, &str)> = fields
            .iter()
            .map(|field| (field.name.as_str(), field.widget, field.value.as_str()))
            .collect();
        assert_eq!(
            widgets,
            [
                ("month", "text", ""),
                ("lines", "json", "[]"),
                ("top", "number", ""),
                ("rate", "number", ""),
                ("dry", "checkbox", ""),
            ]
        );
    }

    #[test]
    fn typed_fields_become_inputs_of_their_types() {
        let typed: BTreeMap<String, String> = [
            ("month", "2026-11"),
            ("lines", "[1, 2]"),
            ("top", " 3 "),
            ("rate", "4.5"),
            ("dry", "true"),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(
            super::form_inputs(&workflow(), &typed).unwrap(),
            serde_json::json!({"month": "2026-11", "lines": [1, 2], "top": 3, "rate": 4.5, "dry": true})
        );
    }

    #[test]
    fn a_field_that_does_not_fit_its_type_gets_its_own_error() {
        let typed: BTreeMap<String, String> = [("top", "three"), ("lines", "{\"a\": 1}")]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        let errors = super::form_inputs(&workflow(), &typed).unwrap_err();
        assert_eq!(errors["top"], "Write a whole number, such as 42.");
        assert_eq!(errors["lines"], "Write a JSON array, such as [1, 2].");
        assert_eq!(errors["rate"], "Write a number, such as 4.5.");
        assert!(!errors.contains_key("month") && !errors.contains_key("dry"));
    }
}
