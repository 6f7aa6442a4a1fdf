//! The router: one list of routes ([`registered_routes`] reads the same list [`router`]
//! builds from, so tests walk exactly what is served), the policy middleware on every route,
//! and the outermost middleware (request id, error bodies, security headers) on every answer.

use axum::Router;
use axum::handler::Handler;
use axum::http::Uri;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};

use crate::handlers::{
    admin, approve, assets, audit, audit_page, console, files, interview, interview_page, keys,
    live, models, people, person_actions, repairs, runs, sessions, shares, signin, supervisor,
    tool_tests, vault, vault_page, workflow_versions, workflow_versions_page, workflows,
};
use crate::layers::{enforce_policy, finish};
use crate::openapi;
use crate::{AppState, Error};

#[derive(Debug, Clone, Copy)]
enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

struct RouteEntry {
    method: &'static str,
    path: &'static str,
    handler: MethodRouter<AppState>,
}

/// One route; the method name and the method filter come from the same [`Verb`], so the name
/// the tests see is the method that is served.
fn entry<H, T>(verb: Verb, path: &'static str, handler: H) -> RouteEntry
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let (method, filter) = match verb {
        Verb::Get => ("GET", MethodFilter::GET),
        Verb::Post => ("POST", MethodFilter::POST),
        Verb::Put => ("PUT", MethodFilter::PUT),
        Verb::Delete => ("DELETE", MethodFilter::DELETE),
    };
    RouteEntry {
        method,
        path,
        handler: on(filter, handler),
    }
}

fn route_entries() -> Vec<RouteEntry> {
    use Verb::{Delete, Get, Post, Put};
    vec![
        // Signing in and out.
        entry(Get, "/signin", signin::sign_in_form),
        entry(Post, "/signin", signin::sign_in_with_form),
        entry(Get, "/welcome/{token}", signin::welcome_form),
        entry(Post, "/welcome/{token}", signin::welcome_set_password),
        entry(Post, "/signout", signin::sign_out_with_form),
        entry(Post, "/api/signin", signin::sign_in_with_json),
        entry(Post, "/api/signout", signin::sign_out_with_json),
        entry(Get, "/", signin::home),
        // The OpenAPI document of the JSON API, generated from this list and the policy table.
        entry(Get, "/api/openapi.json", openapi::serve_document),
        // The console's stylesheet, compiled in.
        entry(Get, "/static/{*path}", assets::serve),
        // Sessions.
        entry(Get, "/api/sessions", sessions::list_own),
        entry(Delete, "/api/sessions", sessions::revoke_all_own),
        entry(Delete, "/api/sessions/{id}", sessions::revoke_own),
        entry(
            Delete,
            "/api/people/{id}/sessions",
            sessions::revoke_all_of_person,
        ),
        entry(Get, "/sessions", admin::sessions_page),
        entry(Post, "/sessions/revoke-all", admin::revoke_all_sessions),
        entry(Post, "/sessions/{id}/revoke", admin::revoke_session),
        // People, roles and ownership.
        entry(Get, "/api/people", people::list),
        entry(Post, "/api/people", people::invite),
        entry(Put, "/api/people/{id}/role", people::change_role),
        entry(Delete, "/api/people/{id}", people::remove),
        entry(Post, "/api/ownership", people::transfer),
        entry(Post, "/api/people/{id}/sign-in-link", people::reissue_link),
        entry(Get, "/people", admin::people_page),
        entry(Post, "/people", admin::invite_person),
        entry(Post, "/people/{id}/role", admin::change_role),
        entry(Get, "/people/{id}/remove", person_actions::confirm),
        entry(Post, "/people/{id}/remove", person_actions::remove),
        entry(
            Post,
            "/people/{id}/sessions/revoke",
            admin::revoke_person_sessions,
        ),
        entry(Post, "/ownership", admin::transfer_ownership),
        entry(
            Post,
            "/people/{id}/sign-in-link",
            person_actions::reissue_link,
        ),
        // API keys.
        entry(Get, "/api/keys", keys::list),
        entry(Post, "/api/keys", keys::create),
        entry(Delete, "/api/keys/{id}", keys::revoke),
        entry(Get, "/keys", admin::keys_page),
        entry(Post, "/keys", admin::create_key),
        entry(Post, "/keys/{id}/revoke", admin::revoke_key),
        // Workflows and their reach panel.
        entry(Get, "/api/workflows", workflows::list),
        entry(Get, "/api/workflows/{name}", workflows::show),
        entry(Get, "/api/workflows/{name}/reach", workflows::reach),
        entry(Put, "/api/workflows/{name}", workflow_versions::save),
        entry(
            Get,
            "/api/workflows/{name}/versions",
            workflow_versions::list,
        ),
        entry(
            Get,
            "/api/workflows/{name}/versions/{number}",
            workflow_versions::show,
        ),
        entry(Get, "/api/workflows/{name}/diff", workflow_versions::diff),
        entry(
            Get,
            "/api/workflows/{name}/export",
            workflow_versions::export,
        ),
        entry(Get, "/workflows", workflows::list_page),
        entry(Get, "/workflows/{name}", workflows::workflow_page),
        entry(
            Get,
            "/workflows/{name}/versions",
            workflow_versions_page::list_page,
        ),
        entry(
            Get,
            "/workflows/{name}/versions/{number}",
            workflow_versions_page::version_page,
        ),
        entry(
            Get,
            "/workflows/{name}/diff",
            workflow_versions_page::diff_page,
        ),
        // The interview with the assistant: nothing runs; a member confirms a version.
        entry(Post, "/api/interviews", interview::start),
        entry(Get, "/api/interviews/{id}", interview::show),
        entry(Post, "/api/interviews/{id}/messages", interview::message),
        entry(Post, "/api/interviews/{id}/confirm", interview::confirm),
        entry(Get, "/interview", interview_page::start_page),
        entry(Post, "/interview", interview_page::start_with_form),
        entry(Get, "/interview/{id}", interview_page::page),
        entry(
            Post,
            "/interview/{id}/messages",
            interview_page::message_with_form,
        ),
        entry(
            Post,
            "/interview/{id}/confirm",
            interview_page::confirm_with_form,
        ),
        // Runs and their gates.
        entry(Get, "/api/runs", runs::list),
        entry(Post, "/api/runs", workflows::start_with_json),
        entry(Post, "/runs", workflows::start_with_form),
        entry(Get, "/api/runs/{id}", runs::show),
        entry(Get, "/api/runs/{id}/events", runs::events),
        entry(Post, "/api/runs/{id}/steps/{step}/approve", runs::approve),
        entry(Post, "/api/runs/{id}/steps/{step}/reject", runs::reject),
        entry(
            Post,
            "/api/runs/{id}/steps/{step}/attempts/{attempt}/retry",
            runs::retry,
        ),
        entry(Post, "/api/runs/{id}/stop", runs::stop),
        entry(Get, "/api/approvals", runs::approvals),
        entry(Get, "/api/runs/{id}/approve-link", runs::approve_link),
        entry(Get, "/runs", console::runs_page),
        entry(Get, "/runs/{id}", console::run_page),
        entry(Get, "/runs/{id}/stream", live::run_stream),
        entry(
            Post,
            "/runs/{id}/steps/{step}/decide",
            runs::decide_with_form,
        ),
        entry(Post, "/runs/{id}/attend", runs::attend_with_form),
        entry(Get, "/approvals", console::approvals_page),
        // Repairs of a step in `needs_repair` (G9): look, ask the assistant, accept.
        entry(Get, "/api/runs/{id}/steps/{step}/repair", repairs::show),
        entry(Post, "/api/runs/{id}/steps/{step}/repair", repairs::propose),
        entry(
            Post,
            "/api/runs/{id}/steps/{step}/repair/accept",
            repairs::accept,
        ),
        entry(
            Post,
            "/runs/{id}/steps/{step}/repair",
            repairs::propose_with_form,
        ),
        entry(
            Post,
            "/runs/{id}/steps/{step}/repair/accept",
            repairs::accept_with_form,
        ),
        // Approve links: opening one only shows; a signed-in member decides with a POST.
        entry(
            Get,
            "/approve/{run}/{step}/{attempt}/{token}",
            approve::show,
        ),
        entry(
            Post,
            "/approve/{run}/{step}/{attempt}/{token}",
            approve::decide_with_link,
        ),
        // The vault: names to members, values in (never out) for admins.
        entry(Get, "/api/vault/secrets", vault::list),
        entry(Put, "/api/vault/secrets/{name}", vault::set),
        entry(Delete, "/api/vault/secrets/{name}", vault::remove),
        entry(Get, "/api/vault/connections", vault::list_connections),
        entry(Put, "/api/vault/connections/{alias}", vault::set_connection),
        entry(
            Delete,
            "/api/vault/connections/{alias}",
            vault::remove_connection,
        ),
        entry(
            Post,
            "/api/vault/connections/{alias}/revoke",
            vault::revoke_connection,
        ),
        entry(Get, "/api/vault/model-keys", vault::list_model_keys),
        entry(
            Put,
            "/api/vault/model-keys/{provider}",
            vault::set_model_key,
        ),
        entry(
            Delete,
            "/api/vault/model-keys/{provider}",
            vault::remove_model_key,
        ),
        entry(Get, "/vault", vault_page::vault_page),
        entry(Post, "/vault/secrets", vault_page::set_secret),
        entry(
            Post,
            "/vault/secrets/{name}/remove",
            vault_page::remove_secret,
        ),
        entry(Post, "/vault/connections", vault_page::set_connection),
        entry(
            Post,
            "/vault/connections/{alias}/remove",
            vault_page::remove_connection,
        ),
        entry(
            Post,
            "/vault/connections/{alias}/revoke",
            vault_page::revoke_connection,
        ),
        entry(Post, "/vault/model-keys", vault_page::set_model_key),
        entry(
            Post,
            "/vault/model-keys/{provider}/remove",
            vault_page::remove_model_key,
        ),
        // The account's model providers: settings as rows, keys in the vault (never out).
        entry(Get, "/api/models", models::list),
        entry(Put, "/api/models/{provider}", models::put),
        entry(Delete, "/api/models/{provider}", models::delete),
        entry(Post, "/api/models/{provider}/default", models::set_default),
        entry(Post, "/api/models/{provider}/test", models::run_test),
        entry(Get, "/models", models::models_page),
        entry(Post, "/models", models::add_with_form),
        entry(Post, "/models/{provider}/remove", models::remove_with_form),
        entry(
            Post,
            "/models/{provider}/default",
            models::default_with_form,
        ),
        entry(Post, "/models/{provider}/test", models::test_with_form),
        // The agents and their custom tools, each tested once in a fresh sandbox (issue 40).
        entry(
            Get,
            "/api/agents/{name}/tools/{tool}/test",
            tool_tests::confirmation_api,
        ),
        entry(
            Post,
            "/api/agents/{name}/tools/{tool}/test",
            tool_tests::test_api,
        ),
        entry(Get, "/agents", tool_tests::agents_page),
        entry(Get, "/agents/{name}", tool_tests::agent_page),
        entry(
            Post,
            "/agents/{name}/tools/{tool}/test",
            tool_tests::test_with_form,
        ),
        // Who sees failures and the supervisor's retries (G15).
        entry(Get, "/api/supervisor", supervisor::show),
        entry(Put, "/api/supervisor", supervisor::put),
        entry(Post, "/models/supervisor", supervisor::set_with_form),
        // The account's workspace: its files, one file, writes as revisions, the history.
        entry(Get, "/api/workspace/files", files::list),
        entry(Get, "/api/workspace/file", files::show),
        entry(Get, "/api/workspace/revisions", files::history),
        entry(Post, "/api/workspace/revisions", files::write),
        entry(Get, "/files", files::files_page),
        entry(Get, "/files/view", files::file_page),
        entry(Post, "/files", files::write_with_form),
        entry(Post, "/files/delete", files::delete_with_form),
        // The audit log.
        entry(Get, "/api/audit", audit::list),
        entry(Get, "/api/audit/verify", audit::verify),
        entry(Get, "/audit", audit_page::page),
        entry(Get, "/audit/verify", audit_page::verify),
        // Share links.
        entry(Get, "/api/shares", shares::list),
        entry(Post, "/api/runs/{id}/shares", shares::create),
        entry(Delete, "/api/shares/{id}", shares::revoke),
        entry(Get, "/shares", admin::shares_page),
        entry(Post, "/runs/{id}/shares", admin::create_share),
        entry(Post, "/shares/{id}/revoke", admin::revoke_share),
        entry(Get, "/s/{token}", shares::view),
    ]
}

/// Every route the router serves, as (method, axum path pattern).
pub fn registered_routes() -> Vec<(&'static str, &'static str)> {
    route_entries()
        .into_iter()
        .map(|route| (route.method, route.path))
        .collect()
}

/// An address no route matches. Under `/s/` it is a failed share-link fetch like any other
/// and gets the same bytes; elsewhere the ordinary not-found answer.
async fn fallback(uri: Uri) -> Response {
    if uri.path().starts_with("/s/") {
        shares::share_not_found()
    } else {
        Error::NotFound {
            what: "page",
            id: String::new(),
        }
        .into_response()
    }
}

/// The whole HTTP application over `state`.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for route in route_entries() {
        router = router.route(route.path, route.handler);
    }
    router
        .route_layer(from_fn_with_state(state.clone(), enforce_policy))
        .fallback(fallback)
        .layer(from_fn_with_state(state.clone(), finish))
        .with_state(state)
}
