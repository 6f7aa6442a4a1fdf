//! JSON wire types shared by the CLI's `--json` output and (later) the HTTP API.
//!
//! Plain data with `Serialize`/`Deserialize` and no logic: domain crates never serialize
//! themselves; the edge converts into these types (STYLE 14).

#![forbid(unsafe_code)]

pub mod interview;
pub mod limits;
pub mod models;
pub mod repairs;
pub mod runs;
pub mod schemas;
pub mod tool_tests;
pub mod workspace;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One problem found in a definition file, with its place and what would be right.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub code: String,
    pub message: String,
    pub help: String,
}

/// The result of `stepward check` for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckReport {
    pub file: String,
    pub valid: bool,
    pub diagnostics: Vec<Diagnostic>,
    /// What would fail on this machine only (a `python:` version it lacks): the file stays
    /// valid, since it may be meant for another server.
    #[serde(default)]
    pub warnings: Vec<Diagnostic>,
}

/// Whether a step may reach the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Internet {
    Yes,
    No,
    /// The reach could not be determined (an agent file that is missing); never read as "no".
    Unknown,
}

/// One row of the panel "What each step can reach" (G27).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReachRow {
    pub step: String,
    pub gate: bool,
    /// `code` or `agent`.
    pub kind: String,
    /// The agent an agent step hands its task to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub internet: Internet,
    /// Why `internet` is `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_reason: Option<String>,
    pub connections: Vec<String>,
    pub secrets: Vec<String>,
    /// Agent steps: each secret with the agent (the step's or a colleague's) that holds it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_holders: Vec<SecretHolder>,
    /// Agent steps: every colleague the agent can consult, at any depth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub colleagues: Vec<String>,
    /// Agent steps: the models (provider and host) that receive the step's data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelReach>,
    /// The limits the step declared (non-default only), as `key: value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

/// A secret of an agent step and the agent that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretHolder {
    pub secret: String,
    pub agent: String,
}

/// A model an agent of a step talks to: its provider receives the step's data (G27).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelReach {
    pub agent: String,
    pub model: String,
    /// The provider's name; absent: the account's default, which it has none of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's host, when the account has that provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The whole panel: its caption, word for word, and one row per step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReachReport {
    pub workflow: String,
    pub caption: String,
    pub rows: Vec<ReachRow>,
    /// Where the steps run unisolated (`--backend unisolated`): says so, and that what the
    /// rows declare is not enforced. Absent where steps run in sandboxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// The server's JSON API: run details, gate decisions, signing in, sessions, share links and
// the error body. Lists of runs reuse `runs::RunListItem`, steps reuse `runs::StepSummary`.
// ---------------------------------------------------------------------------------------------

/// One run with its steps and decisions (`GET /api/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunDetail {
    #[serde(flatten)]
    pub summary: runs::RunSummary,
    pub workflow: String,
    /// The run's short number within its workflow ("ledger #12"), 1 for the first.
    pub number: u64,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    pub decisions: Vec<DecisionView>,
}

/// Who decided, through which door, with what note (G23).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// `approve`, `reject`, `retry` or `stop`.
    pub decision: String,
    /// `person`, `api_key`, `cli`, `engine` or `supervisor`.
    pub actor_kind: String,
    pub actor_id: String,
    pub actor_name: String,
    /// `cli`, `console`, `link` or `api`.
    pub door: String,
    pub note: String,
    pub at: i64,
}

/// The body of a gate decision (`POST /api/runs/{id}/steps/{step}/approve` or `/reject`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// What the decision rests on: required, kept in the record with who decided.
    #[schemars(length(min = 1, max = limits::NOTE_CHARS))]
    pub note: String,
}

/// The body of a retry (`POST /api/runs/{id}/steps/{step}/attempts/{attempt}/retry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    #[serde(default)]
    #[schemars(length(max = limits::NOTE_CHARS))]
    pub note: String,
    /// New inputs for the step, by name: each replaces the input of that name, and the step's
    /// other inputs stay as they were (as `stepward runs retry --input NAME=VALUE`). Left out,
    /// the step runs again as its attempt ran: with the new inputs of an earlier retry of it
    /// (a person's or the supervisor's), if there was one.
    #[serde(default)]
    pub inputs: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The body of `POST /api/signin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInRequest {
    #[schemars(length(max = limits::IDENTIFIER_CHARS))]
    pub account: String,
    #[schemars(length(max = limits::IDENTIFIER_CHARS))]
    pub email: String,
    #[schemars(length(max = limits::PASSWORD_CHARS))]
    pub password: String,
}

/// The answer to a successful `POST /api/signin`; the session itself is in the cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignInResponse {
    pub person_id: String,
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
    /// Sent back in the `X-CSRF-Token` header with every request that changes something.
    pub csrf_token: String,
}

/// One live session of the signed-in person (`GET /api/sessions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionView {
    pub id: String,
    pub created_at: i64,
    pub last_used_at: i64,
    /// Whether this is the session the request came with.
    pub current: bool,
    /// The browser it signed in with, in words ("Chrome 131 on Linux"), when it named one.
    pub browser: Option<String>,
    /// The address it signed in from, when the server knew it.
    pub address: Option<String>,
}

/// The body of `POST /api/runs/{id}/shares`, which may be left out (nothing ticked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateShareRequest {
    /// Whether the share page shows agent tool calls' results, not only each call's name,
    /// path and outcome. Recorded with the link and in the audit log.
    #[serde(default)]
    pub include_tool_results: bool,
}

/// A new share link (`POST /api/runs/{id}/shares`): its address is shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShareLinkCreated {
    pub id: String,
    /// `/s/<token>`, relative to the server.
    pub path: String,
    pub expires_at: i64,
}

/// A share link in a list (`GET /api/shares`); never its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShareLinkView {
    pub id: String,
    pub run: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked: bool,
    /// Whether its page shows agent tool calls' results.
    pub include_tool_results: bool,
    /// Who made it, in words (a person by name); `None` for a link from before links kept it.
    pub created_by: Option<String>,
    /// The run's workflow and its number within it ("ledger #12").
    pub workflow: Option<String>,
    pub number: Option<u64>,
}

/// The body of every error answer of the JSON API: a stable code (one of [`ERROR_CODES`]) for
/// programs, a safe message for people, and the request id to quote; the details are only in
/// the server's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    #[schemars(extend("enum" = ERROR_CODES))]
    pub code: String,
    pub error: String,
    pub request_id: String,
}

/// Every `code` an [`ErrorBody`] may carry; listed in the OpenAPI document.
pub const ERROR_CODES: &[&str] = &[
    "unauthenticated",
    "forbidden",
    "role_rule",
    "conflict",
    "csrf_token_missing",
    "not_found",
    "method_not_allowed",
    "invalid_input",
    "invalid_json",
    "unsupported_media_type",
    "too_large",
    "too_long",
    "sign_in_failed",
    "rate_limited",
    "busy",
    "run_conflict",
    "repair_refused",
    "workflows_unavailable",
    "workflow_invalid",
    "definition_refused",
    "run_refused",
    "vault_unavailable",
    "models_unavailable",
    "invalid_secret",
    "holds_secret",
    "workspace_full",
    "path_conflict",
    "path_refused",
    "interview_refused",
    "no_assistant",
    "internal",
];

/// A person of the account (`GET /api/people`); never a password hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PersonView {
    pub id: String,
    pub display_name: String,
    pub email: String,
    /// `viewer`, `member`, `admin` or `owner`.
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
    /// Whether the person has set a password yet.
    pub has_password: bool,
    pub created_at: i64,
}

/// The body of `POST /api/people`: invite a person with a role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvitePersonRequest {
    #[schemars(length(max = limits::DISPLAY_NAME_CHARS))]
    pub display_name: String,
    #[schemars(length(max = limits::IDENTIFIER_CHARS))]
    pub email: String,
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
}

/// The answer to an invitation: the one-time sign-in link, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PersonInvited {
    pub person_id: String,
    /// `/welcome/<token>`, relative to the server.
    pub sign_in_path: String,
    pub expires_at: i64,
}

/// The body of `PUT /api/people/{id}/role`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChangeRequest {
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
}

/// The body of `POST /api/ownership`: hand the account over to another person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnershipRequest {
    #[schemars(length(max = limits::ID_CHARS))]
    pub new_owner: String,
}

/// An API key of the account (`GET /api/keys`); never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApiKeyView {
    pub key_id: String,
    pub name: String,
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
    pub created_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<i64>,
    pub revoked: bool,
    /// The id of the person who created the key (or took it over when its creator was
    /// removed); absent for a key older than this record whose creator is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// That person's display name, while they are in the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_name: Option<String>,
}

/// The body of `POST /api/keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKeyRequest {
    #[schemars(length(max = limits::KEY_NAME_CHARS))]
    pub name: String,
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
}

/// A new API key: its text is in this answer only, never again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApiKeyCreated {
    pub key_id: String,
    /// `sw_<key id>_<secret>`: sent as `Authorization: Bearer <key>`.
    pub key: String,
    pub name: String,
    #[schemars(extend("enum" = ["viewer", "member", "admin", "owner"]))]
    pub role: String,
}

/// One entry of the account's audit log (`GET /api/audit`), with its place in the hash chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntryView {
    pub seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub actor_kind: String,
    pub actor_id: String,
    pub actor_name: String,
    /// A stable machine name: `session.sign_in`, `role.change`, `run.approve`, ...
    pub action: String,
    /// Scrubbed when it was written.
    pub detail: serde_json::Value,
    pub at: i64,
    /// The hash of the entry before it in the account's chain.
    pub prev_hash: String,
    pub hash: String,
    /// How many times it happened: 1, or for a tallied entry (key use per key, route class
    /// and minute; refused attempts per client address, reason and minute) the uses counted
    /// in its window. Not covered by the hash.
    pub count: u64,
    /// The last time it happened (`at` for an entry that is not tallied).
    pub last_at: i64,
}

/// One page of the account's audit log (`GET /api/audit`), newest first, and the cursors of
/// the pages beside it: pass `older` as `?older=` for the next page, `newer` as `?newer=` for
/// the one before. A cursor left out means there is nothing more that way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditPageView {
    pub entries: Vec<AuditEntryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub older: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newer: Option<String>,
}

/// The account's audit chain checked (`GET /api/audit/verify`, admins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditVerifyView {
    pub intact: bool,
    /// How many entries were checked before the first broken link (all of them when intact).
    pub entries: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<AuditBreakView>,
}

/// The first broken link of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditBreakView {
    /// The entry's sequence number in the account's chain.
    pub seq: u64,
    pub reason: String,
    /// The break in words, naming the account and the entry.
    pub message: String,
}

/// A gate waiting for a decision (`GET /api/approvals`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalView {
    pub run: String,
    pub workflow: String,
    /// The run's short number within its workflow.
    pub number: u64,
    pub step: String,
    /// When the run parked at the gate.
    pub waiting_since: i64,
}

/// The approve link of a gate waiting for a decision (`GET /api/runs/{id}/approve-link`, for a
/// person who may decide). Opening it never decides; it shows the decision form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveLinkView {
    pub run: String,
    pub step: String,
    /// The attempt a decision through the link is recorded against.
    pub attempt: u32,
    /// `/approve/{run}/{step}/{attempt}/{token}`, on this server's origin.
    pub path: String,
}

/// An agent secret of the account's vault as the API shows it: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VaultSecretView {
    pub name: String,
    /// 1 when first set, one more at each change of value.
    pub version: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The body of `PUT /api/vault/secrets/{name}`: the value goes in and never comes back out.
/// Its `Debug` shows `<redacted>` for the value, so a logged request holds no credential.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSecretRequest {
    #[schemars(length(max = limits::SECRET_VALUE_CHARS))]
    pub value: String,
}

impl std::fmt::Debug for SetSecretRequest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SetSecretRequest")
            .field("value", &Redacted)
            .finish()
    }
}

/// A connection of the account's vault as the API shows it: its alias and the names of its
/// fields, never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VaultConnectionView {
    pub alias: String,
    /// Field names in ascending order; a step sees each as `CONN_<ALIAS>_<FIELD>`.
    pub fields: Vec<String>,
    /// 1 when first added, one more at each change of its fields.
    pub version: u64,
    /// Whether runs that ask for it are refused (until it is set again).
    pub revoked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The body of `PUT /api/vault/connections/{alias}`: every field by name with its value. It
/// replaces all the connection's fields (and lifts a revocation); values never come back out.
/// Its `Debug` shows each field name with `<redacted>` for its value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetConnectionRequest {
    #[schemars(extend(
        "minProperties" = 1,
        "propertyNames" = { "maxLength": limits::FIELD_NAME_CHARS },
        "additionalProperties" = { "type": "string", "maxLength": limits::SECRET_VALUE_CHARS },
    ))]
    pub fields: std::collections::BTreeMap<String, String>,
}

impl std::fmt::Debug for SetConnectionRequest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: std::collections::BTreeMap<&str, Redacted> = self
            .fields
            .keys()
            .map(|field| (field.as_str(), Redacted))
            .collect();
        formatter
            .debug_struct("SetConnectionRequest")
            .field("fields", &fields)
            .finish()
    }
}

/// A model provider's key of the account's vault as the API shows it: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VaultModelKeyView {
    pub provider: String,
    /// 1 when first set, one more at each change of value.
    pub version: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The body of `PUT /api/vault/model-keys/{provider}`: the key goes in and never comes back out.
/// Its `Debug` shows `<redacted>` for the key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetModelKeyRequest {
    #[schemars(length(max = limits::SECRET_VALUE_CHARS))]
    pub value: String,
}

impl std::fmt::Debug for SetModelKeyRequest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SetModelKeyRequest")
            .field("value", &Redacted)
            .finish()
    }
}

/// What the `Debug` of a request holding a credential prints in place of the value.
struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("<redacted>")
    }
}

/// A workflow of the account (`GET /api/workflows`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowListItem {
    pub name: String,
    pub file: String,
    /// Whether it passes the parser; an invalid workflow cannot run.
    pub valid: bool,
}

/// One step of a workflow as the workflow screen shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowStepView {
    pub id: String,
    /// Whether the run parks for a person before this step.
    pub gate: bool,
    pub explain: String,
}

/// A workflow with its steps, or the problems that keep it from running
/// (`GET /api/workflows/{name}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowView {
    pub name: String,
    pub file: String,
    pub valid: bool,
    pub steps: Vec<WorkflowStepView>,
    pub problems: Vec<String>,
}

/// One saved version of a workflow (`GET /api/workflows/{name}/versions`): the workspace
/// revision that wrote `workflows/NAME.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowVersionView {
    pub name: String,
    /// 1 for the first save.
    pub number: u32,
    /// `person`, `api_key`, `cli`, `assistant` (with the accepting person's id), `platform`.
    pub author_kind: String,
    pub author: String,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    pub message: String,
    /// The workspace revision's id.
    pub revision: String,
}

/// A version and its text, scrubbed of every current value of the account
/// (`GET /api/workflows/{name}/versions/{number}`, `GET /api/workflows/{name}/export`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowVersionText {
    pub version: WorkflowVersionView,
    pub text: String,
}

/// The unified diff between two versions (`GET /api/workflows/{name}/diff?from=A&to=B`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowDiff {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub diff: String,
}

/// The body of `PUT /api/workflows/{name}`: the next version's text, parsed before it is
/// saved (G1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveWorkflowRequest {
    #[schemars(length(max = limits::WORKFLOW_TEXT_CHARS))]
    pub text: String,
    #[serde(default)]
    #[schemars(length(max = limits::REVISION_MESSAGE_CHARS))]
    pub message: String,
}

/// The body of `POST /api/runs`: start a run of a workflow of the account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRunRequest {
    #[schemars(length(max = limits::NAME_CHARS))]
    pub workflow: String,
    /// The run's inputs by name, checked against the workflow's declared types.
    #[serde(default = "empty_inputs")]
    #[schemars(extend("type" = "object"))]
    pub inputs: serde_json::Value,
}

fn empty_inputs() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{SetConnectionRequest, SetModelKeyRequest, SetSecretRequest};

    const VALUE: &str = "sk_live_DebugMustNotShow7Qw3";

    #[test]
    fn g16_debug_of_vault_requests_names_fields_and_never_shows_a_value() {
        let printed = [
            format!(
                "{:?}",
                SetSecretRequest {
                    value: VALUE.to_owned()
                }
            ),
            format!(
                "{:?}",
                SetConnectionRequest {
                    fields: BTreeMap::from([
                        ("api_key".to_owned(), VALUE.to_owned()),
                        ("base-url".to_owned(), format!("https://u:{VALUE}@x.test")),
                    ]),
                }
            ),
            format!(
                "{:#?}",
                SetModelKeyRequest {
                    value: VALUE.to_owned()
                }
            ),
        ];
        for text in &printed {
            assert!(!text.contains(VALUE), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
        assert_eq!(printed[0], "SetSecretRequest { value: <redacted> }");
        assert_eq!(
            printed[1],
            "SetConnectionRequest { fields: {\"api_key\": <redacted>, \"base-url\": <redacted>} }"
        );
    }
}
