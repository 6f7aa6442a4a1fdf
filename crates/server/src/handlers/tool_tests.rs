//! Tool tests (issue 40): the agents of the account and their custom tools, on the console
//! (`/agents`, `/agents/{name}`) and the API (`POST /api/agents/{name}/tools/{tool}/test`). A
//! member runs a tool without secrets; an admin or owner may run it with the agent's secrets
//! after confirming the script (who last changed it and when, and what changed since the last
//! test with secrets); a viewer runs nothing. What it shows is the engine's scrubbed record,
//! and the served scrub runs over every answer again.

use api_types::tool_tests::{ToolTestConfirmationView, ToolTestRequest, ToolTestView};
use askama::Template;
use auth::Role;
use axum::Extension;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use engine::{SecretsChoice, ToolArguments, ToolTestConfirmation};
use storage::tool_tests::ToolTest;
use storage::{AccountId, Actor};

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::blocking;
use crate::handlers::vault::json_body;
use crate::html::{csrf_token, render, segment, when};
use crate::{AppState, Error};

/// The most agents `/agents` lists.
const MAX_AGENTS: usize = 500;
/// How many of a tool's tests its agent's page shows.
const SHOWN_TESTS: usize = 10;

/// What came of asking for a test.
enum Asked {
    Ran(Box<ToolTest>),
    Confirm(Box<ToolTestConfirmation>),
}

/// Runs the test as asked, checking who may ask for secrets: admins and owners (who may read
/// the vault's metadata and set secrets); a member runs without them.
async fn run(
    state: &AppState,
    authenticated: &Authenticated,
    request: engine::ToolTestRequest,
) -> Result<Asked, Error> {
    let with_secrets = request.secrets != SecretsChoice::Without;
    if with_secrets && authenticated.principal.role() < Role::Admin {
        return Err(Error::Forbidden {
            principal: format!("{:?}", authenticated.principal),
            method: "POST".to_owned(),
            route: "a tool test with the agent's secrets (admins and owners only)".to_owned(),
        });
    }
    let engine = state.shared.engine.clone();
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("test a tool", move || {
        match engine.test_tool(&account, actor, &request) {
            Ok(test) => Ok(Asked::Ran(Box::new(test))),
            Err(engine::Error::ToolTestNeedsConfirmation { confirmation }) => {
                Ok(Asked::Confirm(confirmation))
            }
            Err(error) => Err(refusal(error)),
        }
    })
    .await?
}

/// The Python a request names (`MAJOR.MINOR`); `None`, the engine's default, when it names
/// none.
fn python_of(given: Option<&str>) -> Result<Option<spec::PythonVersion>, Error> {
    match given.map(str::trim).filter(|text| !text.is_empty()) {
        None => Ok(None),
        Some(text) => {
            spec::PythonVersion::parse(text)
                .map(Some)
                .ok_or_else(|| Error::InvalidInput {
                    field: "python",
                    reason: format!("`{text}` is not a Python version such as 3.11"),
                })
        }
    }
}

/// An engine error as the answer to a tool test: what the person can fix is a 400 in words.
fn refusal(error: engine::Error) -> Error {
    match error {
        engine::Error::ToolTestRefused { .. } => Error::InvalidInput {
            field: "tool",
            reason: error.to_string(),
        },
        // Looked up in the caller's own account: none of that name there.
        engine::Error::ToolTestNotFound { agent, tool, .. } => Error::NotFound {
            what: "agent's custom tool",
            id: if tool.is_empty() {
                agent
            } else {
                format!("{agent}/{tool}")
            },
        },
        other => Error::engine_operation("test a tool", other),
    }
}

/// A test as the API shows it.
pub(crate) fn view(test: ToolTest) -> ToolTestView {
    platform::views::tool_test_view(test)
}

fn confirmation_view(confirmation: ToolTestConfirmation) -> ToolTestConfirmationView {
    let (by, at) = match confirmation.last_tested_with_secrets {
        Some((by, at, _)) => (Some(actor_words(&by)), Some(at)),
        None => (None, None),
    };
    ToolTestConfirmationView {
        agent: confirmation.agent,
        tool: confirmation.tool,
        script: confirmation.script,
        script_sha256: confirmation.script_sha256,
        confirm_sha256: confirmation.confirm_sha256,
        secrets: confirmation.secrets,
        network: confirmation.network,
        last_changed_by: confirmation.last_changed_by,
        last_changed_at: confirmation.last_changed_at,
        last_tested_with_secrets_by: by,
        last_tested_with_secrets_at: at,
        diff: confirmation.diff,
    }
}

fn actor_words(actor: &Actor) -> String {
    platform::views::actor_words(actor)
}

// ---------------------------------------------------------------------------------------------
// The JSON API.
// ---------------------------------------------------------------------------------------------

/// `POST /api/agents/{name}/tools/{tool}/test`: 200 with the record; 409 with what to confirm
/// for a test with secrets whose script the caller has not confirmed as it is saved now.
pub(crate) async fn test_api(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((agent, tool)): Path<(String, String)>,
    body: Result<Json<ToolTestRequest>, JsonRejection>,
) -> Result<Response, Error> {
    let request = json_body(body, "such as {\"arguments\": {\"NAME\": VALUE}}")?;
    let asked = run(
        &state,
        &authenticated,
        engine::ToolTestRequest {
            agent,
            tool,
            arguments: ToolArguments::Json(request.arguments),
            secrets: SecretsChoice::asked(request.with_secrets, request.confirm_sha256),
            python: python_of(request.python.as_deref())?,
        },
    )
    .await?;
    Ok(match asked {
        Asked::Ran(test) => Json(view(*test)).into_response(),
        Asked::Confirm(confirmation) => {
            (StatusCode::CONFLICT, Json(confirmation_view(*confirmation))).into_response()
        }
    })
}

/// `GET /api/agents/{name}/tools/{tool}/test`: what an admin confirms before running the tool
/// with its agent's secrets.
pub(crate) async fn confirmation_api(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((agent, tool)): Path<(String, String)>,
) -> Result<Json<ToolTestConfirmationView>, Error> {
    let engine = state.shared.engine.clone();
    let account = authenticated.account();
    let confirmation = blocking("read a tool's confirmation", move || {
        engine
            .tool_test_confirmation(&account, &agent, &tool)
            .map_err(refusal)
    })
    .await??;
    Ok(Json(confirmation_view(confirmation)))
}

// ---------------------------------------------------------------------------------------------
// The console.
// ---------------------------------------------------------------------------------------------

struct AgentLine {
    name: String,
    segment: String,
    description: String,
    tools: usize,
    problem: String,
}

#[derive(Template)]
#[template(path = "agents.html")]
struct AgentsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    agents: Vec<AgentLine>,
}

/// The agents of the account's workspace, each parsed (one that does not parse says why).
fn agent_lines(state: &AppState, account: &AccountId) -> Result<Vec<AgentLine>, Error> {
    let engine = &state.shared.engine;
    let names = engine
        .agent_names(account, MAX_AGENTS)
        .map_err(|error| Error::engine_operation("list the agents", error))?;
    Ok(names
        .into_iter()
        .map(|name| {
            let (description, tools, problem) = match engine.saved_agent(account, &name) {
                Ok(agent) => (
                    agent.description().to_owned(),
                    agent.custom_tools().len(),
                    String::new(),
                ),
                Err(error) => (String::new(), 0, error.to_string()),
            };
            AgentLine {
                segment: segment(&name),
                name,
                description,
                tools,
                problem,
            }
        })
        .collect())
}

/// `GET /agents`.
pub(crate) async fn agents_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let account = authenticated.account();
    let shown = state.clone();
    let agents = blocking("list the agents", move || agent_lines(&shown, &account)).await??;
    Ok(render(&AgentsPage {
        title: "Agents",
        chrome: chrome::current(),
        agents,
    }))
}

struct ArgumentField {
    name: String,
    kind: &'static str,
    optional: bool,
    value: String,
}

struct TestLine {
    by: String,
    at: String,
    with_secrets: bool,
    outcome: String,
    result: String,
    error: String,
    printed: String,
    truncated: bool,
}

struct ToolBlock {
    name: String,
    segment: String,
    explain: String,
    script: String,
    arguments: Vec<ArgumentField>,
    tests: Vec<TestLine>,
}

#[derive(Template)]
#[template(path = "agent.html")]
struct AgentPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    name: String,
    segment: String,
    description: String,
    network: String,
    secrets: Vec<String>,
    may_run: bool,
    may_use_secrets: bool,
    tools: Vec<ToolBlock>,
    error: Option<String>,
    /// The tool whose form refused, with what was typed.
    refused_tool: String,
}

fn test_line(test: ToolTest) -> TestLine {
    TestLine {
        by: actor_words(&test.actor),
        at: when(test.at.0),
        with_secrets: test.with_secrets,
        result: test
            .result
            .map(|result| serde_json::to_string_pretty(&result).unwrap_or_default())
            .unwrap_or_default(),
        outcome: test.outcome,
        error: test.error.unwrap_or_default(),
        printed: test.printed,
        truncated: test.truncated,
    }
}

async fn agent_page_with(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
    typed: Option<(String, Vec<(String, String)>)>,
    error: Option<String>,
) -> Result<Html<String>, Error> {
    let account = authenticated.account();
    let engine = state.shared.engine.clone();
    let may_run = authenticated.principal.role() >= Role::Member;
    let lookup = name.clone();
    let (agent, tests) = blocking("read an agent", move || {
        let agent = engine.saved_agent(&account, &lookup).map_err(refusal)?;
        let mut tests = Vec::new();
        for tool in agent.custom_tools() {
            let shown = if may_run {
                engine
                    .tool_tests(&account, &lookup, tool.name(), SHOWN_TESTS)
                    .map_err(|error| Error::engine_operation("read a tool's tests", error))?
            } else {
                Vec::new()
            };
            tests.push(shown);
        }
        Ok::<_, Error>((agent, tests))
    })
    .await??;
    let (refused_tool, typed_values) = typed.unwrap_or_default();
    let tools = agent
        .custom_tools()
        .iter()
        .zip(tests)
        .map(|(tool, tests)| ToolBlock {
            segment: segment(tool.name()),
            explain: tool.explain().to_owned(),
            script: tool.script().to_owned(),
            arguments: tool
                .arguments()
                .iter()
                .map(|argument| ArgumentField {
                    value: if tool.name() == refused_tool {
                        typed_values
                            .iter()
                            .find(|(field, _)| field == argument.name())
                            .map(|(_, value)| value.clone())
                            .unwrap_or_default()
                    } else {
                        String::new()
                    },
                    name: argument.name().to_owned(),
                    kind: argument.kind().as_str(),
                    optional: argument.optional(),
                })
                .collect(),
            name: tool.name().to_owned(),
            tests: tests.into_iter().map(test_line).collect(),
        })
        .collect();
    Ok(render(&AgentPage {
        title: "Agent",
        chrome: chrome::current(),
        csrf: csrf_token(&state.shared, authenticated),
        segment: segment(&name),
        description: agent.description().to_owned(),
        network: agent.network().to_string(),
        secrets: agent.secrets().to_vec(),
        may_run,
        may_use_secrets: authenticated.principal.role() >= Role::Admin,
        tools,
        name,
        error,
        refused_tool,
    }))
}

/// `GET /agents/{name}`: the agent and its custom tools, each with its test form and its
/// latest tests.
pub(crate) async fn agent_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Html<String>, Error> {
    agent_page_with(&state, &authenticated, name, None, None).await
}

#[derive(Template)]
#[template(path = "tool_test.html")]
struct ToolTestPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    agent: String,
    agent_segment: String,
    tool: String,
    tool_segment: String,
    /// Set when the person must confirm before it runs with secrets.
    confirm: Option<ToolTestConfirmationView>,
    changed_at: String,
    tested_at: String,
    /// The arguments as typed, handed on through the confirmation.
    typed: Vec<(String, String)>,
    test: Option<TestLine>,
}

/// `POST /agents/{name}/tools/{tool}/test`: the form's fields are the arguments
/// (`arg.NAME`), `with_secrets` (a checkbox) and `confirm` (the script's hash, from the
/// confirmation page). A refused test answers the agent's page with the refusal beside the
/// tool's form and what was typed kept.
pub(crate) async fn test_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((agent, tool)): Path<(String, String)>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, Error> {
    let typed: Vec<(String, String)> = fields
        .iter()
        .filter_map(|(field, value)| {
            field
                .strip_prefix("arg.")
                .map(|name| (name.to_owned(), value.clone()))
        })
        .filter(|(_, value)| !value.is_empty())
        .collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
    };
    let with_secrets = field("with_secrets").is_some_and(|value| value == "on" || value == "yes");
    let confirm = field("confirm").filter(|value| !value.is_empty());
    let asked = match python_of(field("python").as_deref()) {
        Ok(python) => {
            let request = engine::ToolTestRequest {
                agent: agent.clone(),
                tool: tool.clone(),
                arguments: ToolArguments::Text(typed.clone()),
                secrets: SecretsChoice::asked(with_secrets, confirm),
                python,
            };
            run(&state, &authenticated, request).await
        }
        Err(error) => Err(error),
    };
    let page = |confirm: Option<ToolTestConfirmationView>, test: Option<TestLine>| {
        render(&ToolTestPage {
            title: "Tool test",
            chrome: chrome::current(),
            csrf: csrf_token(&state.shared, &authenticated),
            agent_segment: segment(&agent),
            tool_segment: segment(&tool),
            changed_at: confirm
                .as_ref()
                .and_then(|c| c.last_changed_at)
                .map(|at| when(i64::try_from(at).unwrap_or(i64::MAX)))
                .unwrap_or_default(),
            tested_at: confirm
                .as_ref()
                .and_then(|c| c.last_tested_with_secrets_at)
                .map(when)
                .unwrap_or_default(),
            agent: agent.clone(),
            tool: tool.clone(),
            confirm,
            typed: typed.clone(),
            test,
        })
    };
    match asked {
        Ok(Asked::Ran(test)) => Ok(page(None, Some(test_line(*test))).into_response()),
        Ok(Asked::Confirm(confirmation)) => {
            Ok(page(Some(confirmation_view(*confirmation)), None).into_response())
        }
        Err(error) => {
            let mistake = crate::html::FormMistake::of(error)?;
            let shown = agent_page_with(
                &state,
                &authenticated,
                agent.clone(),
                Some((tool.clone(), typed.clone())),
                Some(mistake.message),
            )
            .await?;
            Ok((mistake.status, shown).into_response())
        }
    }
}
