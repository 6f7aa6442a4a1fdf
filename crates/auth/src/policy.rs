//! The route policy table: every route of the server, API and console, with the least access it
//! needs, in one place (G26), and [`authorize`], the one function that answers a request.
//!
//! The server registers exactly these routes; its test walks the real router, finds each route
//! here with [`find_policy`], and checks the answers of [`authorize`] for every role, for no
//! credentials and for another account. Handlers check scope again (the resource's account)
//! by passing it as `resource_account`.
//!
//! Paths are axum 0.8 patterns (`{id}` for a segment, `{*path}` for the rest).

use crate::Role::{Admin, Member, Owner, Viewer};
use crate::{Principal, Role};
use storage::AccountId;

/// The least access a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, with or without credentials (sign-in, the OpenAPI document, static files).
    Public,
    /// Whoever holds a share token (`/s/{token}`); the token is the credential, not the caller.
    Share,
    /// Whoever holds an approve-link token; the route only shows, it never decides.
    Link,
    /// A principal of the resource's account with at least this role.
    Role(Role),
}

/// Which kinds of principal a role-guarded route admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A signed-in person or an API key.
    PersonOrKey,
    /// A signed-in person only: deciding through a link, managing one's own sessions, handing
    /// over ownership, the console's forms. An API key never acts as a person.
    PersonOnly,
}

/// One route and what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutePolicy {
    /// The HTTP method, upper case.
    pub method: &'static str,
    /// The axum path pattern, e.g. `/api/runs/{id}`.
    pub path: &'static str,
    /// The least access the route needs.
    pub least_role: Access,
    /// Which kinds of principal it admits; meaningful for [`Access::Role`] only.
    pub caller: Caller,
}

/// The answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Go ahead only if the token in the path verifies; every failure answers
    /// [`crate::SHARE_NOT_FOUND_BODY`] (share) or the same not-found page (link).
    VerifyToken(TokenRoute),
    /// No credentials on a route that needs them (401, or the sign-in page on the console).
    Unauthenticated,
    /// Credentials of the right account, but too low a role or the wrong kind (403).
    Forbidden,
    /// A principal of another account: answered exactly as a resource that does not exist (404).
    NotFound,
}

/// Which token a [`Decision::VerifyToken`] route carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRoute {
    /// A share token, checked by its hash ([`crate::ShareToken::hash`]).
    Share,
    /// An approve-link token, checked by [`crate::verify_approve_token`].
    ApproveLink,
}

const fn public(method: &'static str, path: &'static str) -> RoutePolicy {
    RoutePolicy {
        method,
        path,
        least_role: Access::Public,
        caller: Caller::PersonOrKey,
    }
}

const fn role(method: &'static str, path: &'static str, least: Role) -> RoutePolicy {
    RoutePolicy {
        method,
        path,
        least_role: Access::Role(least),
        caller: Caller::PersonOrKey,
    }
}

const fn person(method: &'static str, path: &'static str, least: Role) -> RoutePolicy {
    RoutePolicy {
        method,
        path,
        least_role: Access::Role(least),
        caller: Caller::PersonOnly,
    }
}

const fn token(method: &'static str, path: &'static str, access: Access) -> RoutePolicy {
    RoutePolicy {
        method,
        path,
        least_role: access,
        caller: Caller::PersonOrKey,
    }
}

/// Every route of the server. Console pages are for people (cookies and CSRF-protected forms);
/// the JSON API under `/api/` admits people and keys, except where a key must not act.
static POLICY_TABLE: &[RoutePolicy] = &[
    // Signing in and out, and the one-time sign-in link that lets a new person set a password
    // (the handler checks that one-time token itself).
    public("GET", "/signin"),
    public("POST", "/signin"),
    public("GET", "/welcome/{token}"),
    public("POST", "/welcome/{token}"),
    person("POST", "/signout", Viewer),
    public("POST", "/api/signin"),
    person("POST", "/api/signout", Viewer),
    // One's own sessions: list, revoke one, revoke all.
    person("GET", "/api/sessions", Viewer),
    person("DELETE", "/api/sessions", Viewer),
    person("DELETE", "/api/sessions/{id}", Viewer),
    person("GET", "/sessions", Viewer),
    person("POST", "/sessions/revoke-all", Viewer),
    person("POST", "/sessions/{id}/revoke", Viewer),
    // Documents anyone may read.
    public("GET", "/api/openapi.json"),
    public("GET", "/static/{*path}"),
    // Workflows and their reach panel.
    role("GET", "/api/workflows", Viewer),
    role("GET", "/api/workflows/{name}", Viewer),
    role("GET", "/api/workflows/{name}/reach", Viewer),
    // Workflow versions: reading them, and saving the next one (members write workflows).
    role("PUT", "/api/workflows/{name}", Member),
    role("GET", "/api/workflows/{name}/versions", Viewer),
    role("GET", "/api/workflows/{name}/versions/{number}", Viewer),
    role("GET", "/api/workflows/{name}/diff", Viewer),
    role("GET", "/api/workflows/{name}/export", Viewer),
    // The interview with the assistant: a person's conversation (it spends the account's
    // model budget and ends in a saved version, so members and above; keys never confirm).
    person("POST", "/api/interviews", Member),
    person("GET", "/api/interviews/{id}", Member),
    person("POST", "/api/interviews/{id}/messages", Member),
    person("POST", "/api/interviews/{id}/confirm", Member),
    person("GET", "/interview", Member),
    person("POST", "/interview", Member),
    person("GET", "/interview/{id}", Member),
    person("POST", "/interview/{id}/messages", Member),
    person("POST", "/interview/{id}/confirm", Member),
    person("GET", "/", Viewer),
    person("GET", "/workflows", Viewer),
    person("GET", "/workflows/{name}", Viewer),
    person("GET", "/workflows/{name}/versions", Viewer),
    person("GET", "/workflows/{name}/versions/{number}", Viewer),
    person("GET", "/workflows/{name}/diff", Viewer),
    // Runs: reading them, starting them, deciding their gates. Members decide; viewers do not.
    role("GET", "/api/runs", Viewer),
    role("POST", "/api/runs", Member),
    role("GET", "/api/runs/{id}", Viewer),
    role("GET", "/api/runs/{id}/events", Viewer),
    role("POST", "/api/runs/{id}/steps/{step}/approve", Member),
    role("POST", "/api/runs/{id}/steps/{step}/reject", Member),
    // A run that needs attention (G14, G15): only a person re-runs a step that may have
    // acted; a key may stop the run.
    person(
        "POST",
        "/api/runs/{id}/steps/{step}/attempts/{attempt}/retry",
        Member,
    ),
    role("POST", "/api/runs/{id}/stop", Member),
    role("GET", "/api/approvals", Member),
    // An approve link is handed to a person who may decide, never to a key.
    person("GET", "/api/runs/{id}/approve-link", Member),
    person("GET", "/runs", Viewer),
    person("POST", "/runs", Member),
    person("GET", "/runs/{id}", Viewer),
    person("GET", "/runs/{id}/stream", Viewer),
    person("POST", "/runs/{id}/steps/{step}/decide", Member),
    person("POST", "/runs/{id}/attend", Member),
    person("GET", "/approvals", Member),
    // Repairs (G9): viewers look at a proposal; members ask for one; a person whose role may
    // save workflows accepts it, recorded by name (never a key: the version is accepted by
    // a person).
    role("GET", "/api/runs/{id}/steps/{step}/repair", Viewer),
    role("POST", "/api/runs/{id}/steps/{step}/repair", Member),
    person("POST", "/api/runs/{id}/steps/{step}/repair/accept", Member),
    person("POST", "/runs/{id}/steps/{step}/repair", Member),
    person("POST", "/runs/{id}/steps/{step}/repair/accept", Member),
    // Approve links: opening one only shows the decision page; deciding is a POST by a
    // signed-in person whose role may decide, recorded with the door `link`.
    token(
        "GET",
        "/approve/{run}/{step}/{attempt}/{token}",
        Access::Link,
    ),
    person("POST", "/approve/{run}/{step}/{attempt}/{token}", Member),
    // The vault: members see names; admins set and remove values (never read them).
    role("GET", "/api/vault/secrets", Member),
    role("PUT", "/api/vault/secrets/{name}", Admin),
    role("DELETE", "/api/vault/secrets/{name}", Admin),
    person("GET", "/vault", Member),
    person("POST", "/vault/secrets", Admin),
    person("POST", "/vault/secrets/{name}/remove", Admin),
    role("GET", "/api/vault/connections", Member),
    role("PUT", "/api/vault/connections/{alias}", Admin),
    role("DELETE", "/api/vault/connections/{alias}", Admin),
    role("POST", "/api/vault/connections/{alias}/revoke", Admin),
    role("GET", "/api/vault/model-keys", Member),
    role("PUT", "/api/vault/model-keys/{provider}", Admin),
    role("DELETE", "/api/vault/model-keys/{provider}", Admin),
    person("POST", "/vault/connections", Admin),
    person("POST", "/vault/connections/{alias}/remove", Admin),
    person("POST", "/vault/connections/{alias}/revoke", Admin),
    person("POST", "/vault/model-keys", Admin),
    person("POST", "/vault/model-keys/{provider}/remove", Admin),
    // The account's workspace: viewers read its files and history; members write, each write
    // a revision authored by the person or key (G25).
    role("GET", "/api/workspace/files", Viewer),
    role("GET", "/api/workspace/file", Viewer),
    role("GET", "/api/workspace/revisions", Viewer),
    role("POST", "/api/workspace/revisions", Member),
    person("GET", "/files", Viewer),
    person("GET", "/files/view", Viewer),
    person("POST", "/files", Member),
    person("POST", "/files/delete", Member),
    // Model providers: admins list, add, replace, remove, pick the default and test (a
    // base URL may name an internal host; a test spends the account's money). Members, who
    // write agent files, learn the providers' names from the vault's names-only listing
    // of model keys.
    role("GET", "/api/models", Admin),
    role("PUT", "/api/models/{provider}", Admin),
    role("DELETE", "/api/models/{provider}", Admin),
    role("POST", "/api/models/{provider}/default", Admin),
    role("POST", "/api/models/{provider}/test", Admin),
    person("GET", "/models", Admin),
    person("POST", "/models", Admin),
    person("POST", "/models/{provider}/remove", Admin),
    person("POST", "/models/{provider}/default", Admin),
    person("POST", "/models/{provider}/test", Admin),
    // Tool tests (issue 40): a member runs a custom tool without secrets; an admin or owner
    // with its agent's secrets (the handler checks it, and the engine wants the script
    // confirmed); a viewer reads the agents and runs nothing.
    role("GET", "/api/agents/{name}/tools/{tool}/test", Admin),
    role("POST", "/api/agents/{name}/tools/{tool}/test", Member),
    person("GET", "/agents", Viewer),
    person("GET", "/agents/{name}", Viewer),
    person("POST", "/agents/{name}/tools/{tool}/test", Member),
    // Who sees failures and the supervisor's retries (G15): anyone may read, admins set it.
    role("GET", "/api/supervisor", Viewer),
    role("PUT", "/api/supervisor", Admin),
    person("POST", "/models/supervisor", Admin),
    // People and roles. Ownership moves only by the owner's transfer.
    role("GET", "/api/people", Admin),
    // Inviting answers a one-time sign-in link: a person's act, never a key's (a key that
    // could invite could redeem the link and become a person).
    person("POST", "/api/people", Admin),
    role("PUT", "/api/people/{id}/role", Admin),
    role("DELETE", "/api/people/{id}", Admin),
    role("DELETE", "/api/people/{id}/sessions", Admin),
    person("POST", "/api/ownership", Owner),
    // Answers a one-time sign-in link, like inviting: for people only.
    person("POST", "/api/people/{id}/sign-in-link", Admin),
    person("POST", "/people/{id}/sign-in-link", Admin),
    person("GET", "/people", Admin),
    person("POST", "/people", Admin),
    person("POST", "/people/{id}/role", Admin),
    person("GET", "/people/{id}/remove", Admin),
    person("POST", "/people/{id}/remove", Admin),
    person("POST", "/people/{id}/sessions/revoke", Admin),
    person("POST", "/ownership", Owner),
    // API keys.
    role("GET", "/api/keys", Admin),
    // A key cannot mint keys (it could outlive its own revocation through them).
    person("POST", "/api/keys", Admin),
    role("DELETE", "/api/keys/{id}", Admin),
    person("GET", "/keys", Admin),
    person("POST", "/keys", Admin),
    person("POST", "/keys/{id}/revoke", Admin),
    // The audit log.
    role("GET", "/api/audit", Admin),
    // An account's admin checks the account's own chain (the operator checks every account
    // with `stepward audit verify`).
    role("GET", "/api/audit/verify", Admin),
    person("GET", "/audit", Admin),
    person("GET", "/audit/verify", Admin),
    // Share links: members create, list and revoke them; anyone holding one reads one run.
    role("GET", "/api/shares", Member),
    role("POST", "/api/runs/{id}/shares", Member),
    role("DELETE", "/api/shares/{id}", Member),
    person("GET", "/shares", Member),
    person("POST", "/runs/{id}/shares", Member),
    person("POST", "/shares/{id}/revoke", Member),
    token("GET", "/s/{token}", Access::Share),
];

/// Every route of the server with the least access it needs.
pub fn policy_table() -> &'static [RoutePolicy] {
    POLICY_TABLE
}

/// The policy of the route with this method and path pattern (as axum's `MatchedPath` gives
/// it). A route that is not in the table has no policy, and the server refuses it.
pub fn find_policy(method: &str, path_pattern: &str) -> Option<&'static RoutePolicy> {
    POLICY_TABLE
        .iter()
        .find(|policy| policy.method == method && policy.path == path_pattern)
}

/// Answers one request to a route. `resource_account` is the account of the resource the
/// request names, once the handler knows it (or `None` for routes over the caller's own
/// account, such as lists). The order matters: no credentials first, then another account
/// (answered as not found, before any role check, so a stranger learns nothing), then the kind
/// of principal and the role.
pub fn authorize(
    policy: &RoutePolicy,
    principal: Option<&Principal>,
    resource_account: Option<&AccountId>,
) -> Decision {
    let least = match policy.least_role {
        Access::Public => return Decision::Allow,
        Access::Share => return Decision::VerifyToken(TokenRoute::Share),
        Access::Link => return Decision::VerifyToken(TokenRoute::ApproveLink),
        Access::Role(least) => least,
    };
    let Some(principal) = principal else {
        return Decision::Unauthenticated;
    };
    if let Some(resource_account) = resource_account
        && resource_account != principal.account_id()
    {
        return Decision::NotFound;
    }
    if policy.caller == Caller::PersonOnly && matches!(principal, Principal::ApiKey { .. }) {
        return Decision::Forbidden;
    }
    if principal.role() < least {
        return Decision::Forbidden;
    }
    Decision::Allow
}
