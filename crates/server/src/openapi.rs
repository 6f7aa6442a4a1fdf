//! The OpenAPI 3.1 document of the JSON API (`GET /api/openapi.json`), generated from the code:
//! the paths and methods from [`crate::registered_routes`] (the list the router is built from),
//! the least role of each from [`auth::policy_table`] (as the `x-least-role` extension, with
//! the security schemes a route admits), and the bodies from the schemas that `api-types` keeps
//! next to its wire types ([`api_types::schemas::component_schemas`]).
//!
//! The one hand-written part is [`json_bodies`]: which wire type each route reads and answers.
//! A route missing from it is still documented (with its parameters, roles and error body),
//! just without a success schema; a unit test keeps the two lists in step.

use api_types::schemas::{component_schemas, reference};
use auth::{Access, Caller, find_policy};
use axum::Json;
use schemars::{Schema, schema_for};
use serde_json::{Map, Value, json};

use crate::registered_routes;

/// What a success answer carries.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// One value of this schema.
    One(u16, &'static str),
    /// A JSON array of this schema.
    List(&'static str),
    /// No body (204).
    NoContent,
    /// This document.
    Document,
}

/// What a JSON route reads (`request`, a schema name) and answers.
struct Bodies {
    request: Option<&'static str>,
    answer: Answer,
}

/// The bodies of every JSON route, by (method, path pattern). The handlers' `Json<...>` types
/// say the same; this table is checked against the router by a test.
fn json_bodies(method: &str, path: &str) -> Option<Bodies> {
    use Answer::{Document, List, NoContent, One};
    let (request, answer) = match (method, path) {
        ("POST", "/api/signin") => (Some("SignInRequest"), One(200, "SignInResponse")),
        ("POST", "/api/signout") => (None, NoContent),
        ("GET", "/api/openapi.json") => (None, Document),
        ("GET", "/api/sessions") => (None, List("SessionView")),
        ("DELETE", "/api/sessions" | "/api/sessions/{id}" | "/api/people/{id}/sessions") => {
            (None, NoContent)
        }
        ("GET", "/api/people") => (None, List("PersonView")),
        ("POST", "/api/people") => (Some("InvitePersonRequest"), One(201, "PersonInvited")),
        ("PUT", "/api/people/{id}/role") => (Some("RoleChangeRequest"), One(200, "PersonView")),
        ("DELETE", "/api/people/{id}") => (None, NoContent),
        ("POST", "/api/ownership") => (Some("OwnershipRequest"), NoContent),
        ("GET", "/api/keys") => (None, List("ApiKeyView")),
        ("POST", "/api/keys") => (Some("CreateApiKeyRequest"), One(201, "ApiKeyCreated")),
        ("DELETE", "/api/keys/{id}") => (None, NoContent),
        ("GET", "/api/workspace/files") => (None, List("WorkspaceFileItem")),
        ("GET", "/api/workspace/file") => (None, One(200, "WorkspaceFileView")),
        ("GET", "/api/workspace/revisions") => (None, List("WorkspaceRevisionView")),
        ("POST", "/api/workspace/revisions") => (
            Some("WorkspaceWriteRequest"),
            One(201, "WorkspaceRevisionView"),
        ),
        ("GET", "/api/workflows") => (None, List("WorkflowListItem")),
        ("GET", "/api/workflows/{name}") => (None, One(200, "WorkflowView")),
        ("GET", "/api/workflows/{name}/reach") => (None, One(200, "ReachReport")),
        ("PUT", "/api/workflows/{name}") => {
            (Some("SaveWorkflowRequest"), One(201, "WorkflowVersionView"))
        }
        ("GET", "/api/workflows/{name}/versions") => (None, List("WorkflowVersionView")),
        ("GET", "/api/workflows/{name}/versions/{number}" | "/api/workflows/{name}/export") => {
            (None, One(200, "WorkflowVersionText"))
        }
        ("GET", "/api/workflows/{name}/diff") => (None, One(200, "WorkflowDiff")),
        ("GET", "/api/runs") => (None, List("RunListItem")),
        ("POST", "/api/runs") => (Some("StartRunRequest"), One(202, "RunDetail")),
        ("GET", "/api/runs/{id}") => (None, One(200, "RunDetail")),
        ("GET", "/api/runs/{id}/events") => (None, List("Event")),
        ("GET" | "POST", "/api/runs/{id}/steps/{step}/repair") => {
            (None, One(200, "RepairProposalView"))
        }
        ("POST", "/api/runs/{id}/steps/{step}/repair/accept") => {
            (Some("AcceptRepairRequest"), One(202, "RepairAcceptedView"))
        }
        ("GET", "/api/supervisor") => (None, One(200, "SupervisorSettingsView")),
        ("PUT", "/api/supervisor") => (
            Some("SupervisorSettingsRequest"),
            One(200, "SupervisorSettingsView"),
        ),
        (
            "POST",
            "/api/runs/{id}/steps/{step}/approve"
            | "/api/runs/{id}/steps/{step}/reject"
            | "/api/runs/{id}/stop",
        ) => (Some("DecisionRequest"), One(202, "RunDetail")),
        ("POST", "/api/runs/{id}/steps/{step}/attempts/{attempt}/retry") => {
            (Some("RetryRequest"), One(202, "RunDetail"))
        }
        ("GET", "/api/approvals") => (None, List("ApprovalView")),
        ("POST", "/api/people/{id}/sign-in-link") => (None, One(201, "PersonInvited")),
        ("GET", "/api/runs/{id}/approve-link") => (None, One(200, "ApproveLinkView")),
        ("GET", "/api/vault/secrets") => (None, List("VaultSecretView")),
        ("PUT", "/api/vault/secrets/{name}") => {
            (Some("SetSecretRequest"), One(200, "VaultSecretView"))
        }
        ("DELETE", "/api/vault/secrets/{name}") => (None, NoContent),
        ("GET", "/api/vault/connections") => (None, List("VaultConnectionView")),
        ("PUT", "/api/vault/connections/{alias}") => (
            Some("SetConnectionRequest"),
            One(200, "VaultConnectionView"),
        ),
        ("DELETE", "/api/vault/connections/{alias}") => (None, NoContent),
        ("POST", "/api/vault/connections/{alias}/revoke") => (None, NoContent),
        ("GET", "/api/vault/model-keys") => (None, List("VaultModelKeyView")),
        ("PUT", "/api/vault/model-keys/{provider}") => {
            (Some("SetModelKeyRequest"), One(200, "VaultModelKeyView"))
        }
        ("DELETE", "/api/vault/model-keys/{provider}") => (None, NoContent),
        ("GET", "/api/models") => (None, List("ModelProviderView")),
        ("PUT", "/api/models/{provider}") => (
            Some("SaveModelProviderRequest"),
            One(200, "ModelProviderView"),
        ),
        ("DELETE", "/api/models/{provider}") => (None, NoContent),
        ("POST", "/api/models/{provider}/default") => (None, NoContent),
        ("POST", "/api/models/{provider}/test") => {
            (Some("ModelTestRequest"), One(200, "ModelTestResult"))
        }
        ("GET", "/api/agents/{name}/tools/{tool}/test") => {
            (None, One(200, "ToolTestConfirmationView"))
        }
        ("POST", "/api/agents/{name}/tools/{tool}/test") => {
            (Some("ToolTestRequest"), One(200, "ToolTestView"))
        }
        ("POST", "/api/interviews") => (Some("StartInterviewRequest"), One(201, "InterviewView")),
        ("GET", "/api/interviews/{id}") => (None, One(200, "InterviewView")),
        ("POST", "/api/interviews/{id}/messages") => {
            (Some("InterviewMessageRequest"), One(200, "InterviewView"))
        }
        ("POST", "/api/interviews/{id}/confirm") => (
            Some("ConfirmInterviewRequest"),
            One(200, "InterviewConfirmed"),
        ),
        ("GET", "/api/audit") => (None, One(200, "AuditPageView")),
        ("GET", "/api/audit/verify") => (None, One(200, "AuditVerifyView")),
        ("GET", "/api/shares") => (None, List("ShareLinkView")),
        ("POST", "/api/runs/{id}/shares") => {
            (Some("CreateShareRequest"), One(201, "ShareLinkCreated"))
        }
        ("DELETE", "/api/shares/{id}") => (None, NoContent),
        _ => return None,
    };
    Some(Bodies { request, answer })
}

/// The schema of the body a JSON route reads, if it reads one.
pub(crate) fn request_schema(method: &str, path: &str) -> Option<&'static str> {
    json_bodies(method, path)?.request
}

/// The names of the `{param}` segments of an axum path pattern (`{*rest}` gives `rest`).
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| name.trim_start_matches('*'))
        .collect()
}

/// The query parameters of a route, from its handler's `Query<...>` type (so the document
/// cannot drift from what the handler reads), and the names the handler requires although the
/// type lets them be absent (it answers a clear error instead of axum's rejection).
fn query_parameters(method: &str, path: &str) -> (Option<Schema>, &'static [&'static str]) {
    use crate::handlers::{audit, files, workflow_versions};
    match (method, path) {
        ("GET", "/api/workspace/file") => (Some(schema_for!(files::PathQuery)), &["path"]),
        ("GET", "/api/audit") => (Some(schema_for!(audit::AuditQuery)), &[]),
        ("GET", "/api/workflows/{name}/diff") => {
            (Some(schema_for!(workflow_versions::DiffQuery)), &[])
        }
        _ => (None, &[]),
    }
}

/// One OpenAPI parameter object per property of a `Query` type's schema.
fn query_parameter_objects(schema: &Schema, also_required: &[&str]) -> Vec<Value> {
    let value = schema.as_value();
    let required: Vec<&str> = value["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = value["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            let description = property
                .as_object_mut()
                .and_then(|object| object.remove("description"));
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()) || also_required.contains(&name.as_str()),
                "schema": property,
            });
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

/// The least access as the `x-least-role` extension names it.
fn least_role_name(access: Access) -> &'static str {
    match access {
        Access::Public => "public",
        Access::Share => "share",
        Access::Link => "link",
        Access::Role(role) => role.as_str(),
    }
}

fn operation(method: &str, path: &str) -> Value {
    let mut operation = Map::new();
    operation.insert("operationId".to_owned(), json!(operation_id(method, path)));
    let mut parameters: Vec<Value> = path_parameters(path)
        .into_iter()
        .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }))
        .collect();
    if let (Some(schema), also_required) = query_parameters(method, path) {
        parameters.extend(query_parameter_objects(&schema, also_required));
    }
    if !parameters.is_empty() {
        operation.insert("parameters".to_owned(), Value::Array(parameters));
    }
    match find_policy(method, path) {
        Some(policy) => {
            operation.insert(
                "x-least-role".to_owned(),
                json!(least_role_name(policy.least_role)),
            );
            let security = match (policy.least_role, policy.caller) {
                (Access::Role(_), Caller::PersonOrKey) => {
                    json!([{ "session": [] }, { "apiKey": [] }])
                }
                (Access::Role(_), Caller::PersonOnly) => json!([{ "session": [] }]),
                (Access::Public | Access::Share | Access::Link, _) => json!([]),
            };
            operation.insert("security".to_owned(), security);
        }
        // The router refuses a route without a policy (500); the document says so rather
        // than guessing a role.
        None => {
            operation.insert("x-least-role".to_owned(), json!("refused: no policy"));
        }
    }
    let bodies = json_bodies(method, path);
    if let Some(request) = bodies.as_ref().and_then(|bodies| bodies.request) {
        // A share link's body may be left out (nothing ticked).
        let required = (method, path) != ("POST", "/api/runs/{id}/shares");
        operation.insert(
            "requestBody".to_owned(),
            json!({
                "required": required,
                "content": { "application/json": { "schema": reference(request) } },
            }),
        );
    }
    let mut responses = Map::new();
    match bodies.map(|bodies| bodies.answer) {
        Some(Answer::Document) => {
            responses.insert(
                "200".to_owned(),
                json!({
                    "description": "The OpenAPI document.",
                    "content": { "application/json": { "schema": { "type": "object" } } },
                }),
            );
        }
        Some(Answer::One(status, schema)) => {
            responses.insert(status.to_string(), success(reference(schema)));
        }
        Some(Answer::List(schema)) => {
            responses.insert(
                "200".to_owned(),
                success(json!({ "type": "array", "items": reference(schema) })),
            );
        }
        Some(Answer::NoContent) => {
            responses.insert("204".to_owned(), json!({ "description": "Done." }));
        }
        None => {
            responses.insert("2XX".to_owned(), json!({ "description": "Done." }));
        }
    }
    responses.insert(
        "default".to_owned(),
        json!({
            "description": "An error: a stable code (see ErrorBody), a safe message and the request id to quote.",
            "content": { "application/json": { "schema": reference("ErrorBody") } },
        }),
    );
    operation.insert("responses".to_owned(), Value::Object(responses));
    Value::Object(operation)
}

fn success(schema: Value) -> Value {
    json!({
        "description": "Done.",
        "content": { "application/json": { "schema": schema } },
    })
}

/// `get_api_runs_id_steps_step_approve`: unique per (method, path).
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_lowercase();
    for part in path.split(|character: char| !character.is_ascii_alphanumeric()) {
        if !part.is_empty() {
            id.push('_');
            id.push_str(part);
        }
    }
    id
}

/// The whole document: every `/api/` route the router serves.
pub fn openapi_document() -> Value {
    let mut paths = Map::new();
    for (method, path) in registered_routes() {
        if !path.starts_with("/api/") {
            continue;
        }
        let item = paths
            .entry(path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(method.to_lowercase(), operation(method, path));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "stepward",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The JSON API of a stepward server. Each operation's `x-least-role` \
                is the least role it needs (`public`: anyone). A signed-in person sends the \
                session cookie and, on every request that changes something, the CSRF token \
                of the sign-in answer in the `X-CSRF-Token` header; an API key is sent as \
                `Authorization: Bearer <key>` and never acts as a person. A resource of \
                another account answers 404, as one that does not exist.",
        },
        "paths": paths,
        "components": {
            "schemas": component_schemas(),
            "securitySchemes": {
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": auth::session_cookie_name(auth::TlsMode::PlainHttp),
                    "description": "The session cookie set by signing in; named \
                        `__Host-stepward_session` when the server is reached over TLS.",
                },
                "apiKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (`sw_<key id>_<secret>`), shown once when created.",
                },
            },
        },
    })
}

/// `GET /api/openapi.json`.
pub(crate) async fn serve_document() -> Json<Value> {
    Json(openapi_document())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::{json_bodies, openapi_document, path_parameters};
    use crate::registered_routes;

    fn api_routes() -> Vec<(&'static str, &'static str)> {
        registered_routes()
            .into_iter()
            .filter(|(_, path)| path.starts_with("/api/"))
            .collect()
    }

    #[test]
    fn g26_every_api_route_of_the_router_is_in_the_document_with_its_least_role() {
        let document = openapi_document();
        let routes = api_routes();
        assert!(routes.contains(&("GET", "/api/openapi.json")));
        for (method, path) in &routes {
            let operation = &document["paths"][*path][method.to_lowercase()];
            assert!(operation.is_object(), "{method} {path} is not documented");
            let least = operation["x-least-role"].as_str().unwrap();
            assert!(
                [
                    "public", "share", "link", "viewer", "member", "admin", "owner"
                ]
                .contains(&least),
                "{method} {path}: {least}"
            );
        }
        let documented: usize = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(
            documented,
            routes.len(),
            "the document has a route the router lacks"
        );
    }

    /// The query parameters come from the handlers' own `Query` types: every filter and cursor
    /// of the audit log, both ends of a diff, and a file's path (required by its handler).
    #[test]
    fn g26_query_parameters_are_documented_from_the_handlers_query_types() {
        let document = openapi_document();
        let query = |method: &str, path: &str| -> Vec<(String, bool)> {
            document["paths"][path][method]["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|parameter| parameter["in"] == "query")
                .map(|parameter| {
                    (
                        parameter["name"].as_str().unwrap().to_owned(),
                        parameter["required"].as_bool().unwrap(),
                    )
                })
                .collect()
        };
        let audit = query("get", "/api/audit");
        for name in ["actor", "action", "from", "to", "older", "newer", "limit"] {
            assert!(
                audit.contains(&(name.to_owned(), false)),
                "{name}: {audit:?}"
            );
        }
        assert_eq!(audit.len(), 7, "{audit:?}");
        let diff = query("get", "/api/workflows/{name}/diff");
        assert_eq!(
            diff,
            vec![("from".to_owned(), false), ("to".to_owned(), false)]
        );
        assert_eq!(
            query("get", "/api/workspace/file"),
            vec![("path".to_owned(), true)]
        );
        let limit = &document["paths"]["/api/audit"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == "limit")
            .unwrap()["schema"];
        assert!(limit.to_string().contains("integer"), "{limit}");
    }

    #[test]
    fn every_api_route_has_its_bodies_declared() {
        for (method, path) in api_routes() {
            assert!(
                json_bodies(method, path).is_some(),
                "{method} {path} has no entry in json_bodies"
            );
        }
    }

    /// The structure OpenAPI 3.1 requires: the top-level fields, a response on every operation,
    /// every templated path parameter declared (and nothing else declared in the path), every
    /// reference resolving, unique operation ids.
    #[test]
    fn the_document_is_structurally_valid_openapi_3_1() {
        let document = openapi_document();
        assert_eq!(document["openapi"], "3.1.0");
        assert!(document["info"]["title"].is_string());
        assert!(document["info"]["version"].is_string());
        let schemas = document["components"]["schemas"].as_object().unwrap();
        let schemes = document["components"]["securitySchemes"]
            .as_object()
            .unwrap();
        let mut operation_ids = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            assert!(path.starts_with('/'), "{path}");
            let templated: BTreeSet<&str> = path_parameters(path).into_iter().collect();
            for (method, operation) in item.as_object().unwrap() {
                assert!(
                    ["get", "put", "post", "delete", "patch"].contains(&method.as_str()),
                    "{method}"
                );
                let declared: BTreeSet<&str> = operation["parameters"]
                    .as_array()
                    .map(|parameters| {
                        parameters
                            .iter()
                            .filter(|parameter| parameter["in"] == "path")
                            .inspect(|parameter| assert_eq!(parameter["required"], true))
                            .map(|parameter| parameter["name"].as_str().unwrap())
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(declared, templated, "{method} {path}");
                assert!(
                    !operation["responses"].as_object().unwrap().is_empty(),
                    "{method} {path} has no responses"
                );
                assert!(operation_ids.insert(operation["operationId"].to_string()));
                for requirement in operation["security"].as_array().unwrap() {
                    for scheme in requirement.as_object().unwrap().keys() {
                        assert!(schemes.contains_key(scheme), "{scheme}");
                    }
                }
            }
        }
        let text = document.to_string();
        let prefix = "#/components/schemas/";
        for (index, _) in text.match_indices(prefix) {
            let name: String = text[index + prefix.len()..]
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            assert!(
                schemas.contains_key(&name),
                "{name} is referenced but missing"
            );
        }
        assert!(matches!(document["paths"], Value::Object(_)));
    }
}
