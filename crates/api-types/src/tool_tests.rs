//! The wire types of tool tests (issue 40): a person runs one custom tool of an agent with
//! arguments they give, with or without the agent's secrets, and reads the scrubbed record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits;

/// The body of `POST /api/agents/{name}/tools/{tool}/test`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolTestRequest {
    /// The tool's arguments, checked against what the agent file declares.
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Run with the agent's `secrets:` in the environment: admins and owners only, and only
    /// with `confirm_sha256`.
    #[serde(default)]
    pub with_secrets: bool,
    /// The `confirm_sha256` the caller confirmed (from the 409 answer or `GET .../test`):
    /// the script, the agent file and every file the tool runs with; anything of them
    /// changed since runs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 64, max = 64))]
    pub confirm_sha256: Option<String>,
    /// The Python the tool runs under, `MAJOR.MINOR`; 3.11 unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::NAME_CHARS))]
    pub python: Option<String>,
}

/// What a person confirms before a tool runs with its agent's secrets (answered with 409 to a
/// test with secrets and without a confirmation of the script saved now, and by
/// `GET /api/agents/{name}/tools/{tool}/test`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolTestConfirmationView {
    pub agent: String,
    pub tool: String,
    /// The script's path in the workspace.
    pub script: String,
    /// The script's SHA-256.
    pub script_sha256: String,
    /// What the caller confirms, in one SHA-256: the script, the agent file (its secrets,
    /// network and limits) and every file staged for the tool. Send it back as
    /// `confirm_sha256`.
    pub confirm_sha256: String,
    /// The secrets the tool would receive, by name.
    pub secrets: Vec<String>,
    /// What it may reach: `none` or `public_egress`.
    pub network: String,
    /// Who wrote the script's current version; `None` when no revision wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_changed_by: Option<String>,
    /// When, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_changed_at: Option<u64>,
    /// Who last ran it with secrets, when, and the script's SHA-256 then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tested_with_secrets_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tested_with_secrets_at: Option<i64>,
    /// The unified diff of the script since the last test with secrets (all of it when it
    /// never ran with secrets), scrubbed.
    pub diff: String,
}

/// One tool test as recorded: scrubbed of every value of the account, bounded like a step's
/// output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolTestView {
    pub id: String,
    pub agent: String,
    pub tool: String,
    /// The workspace revision the agent file and script were pinned at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub script_sha256: String,
    pub with_secrets: bool,
    /// Who ran it, in words.
    pub by: String,
    /// When, in milliseconds since the epoch.
    pub at: i64,
    pub arguments: serde_json::Value,
    /// `succeeded`, `failed`, `unknown`, `needs_repair` or `refused`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it printed (stdout, then stderr after `[stderr]`).
    pub printed: String,
    /// Whether `printed` was cut at the output bound.
    pub truncated: bool,
}

#[cfg(test)]
pub(crate) fn samples() -> Vec<(&'static str, serde_json::Value)> {
    fn value<T: Serialize>(sample: &T) -> serde_json::Value {
        serde_json::to_value(sample).unwrap()
    }
    vec![
        (
            "ToolTestRequest",
            value(&ToolTestRequest {
                arguments: serde_json::Map::new(),
                with_secrets: true,
                confirm_sha256: Some("a".repeat(64)),
                python: Some("3.11".into()),
            }),
        ),
        (
            "ToolTestConfirmationView",
            value(&ToolTestConfirmationView {
                agent: "digest".into(),
                tool: "lookup".into(),
                script: "agents/digest/tools/lookup.py".into(),
                script_sha256: "a".repeat(64),
                confirm_sha256: "b".repeat(64),
                secrets: vec!["TOKEN".into()],
                network: "none".into(),
                last_changed_by: Some("person p-1".into()),
                last_changed_at: Some(1),
                last_tested_with_secrets_by: Some("Ada".into()),
                last_tested_with_secrets_at: Some(2),
                diff: "+x".into(),
            }),
        ),
        (
            "ToolTestView",
            value(&ToolTestView {
                id: "tt_1".into(),
                agent: "digest".into(),
                tool: "lookup".into(),
                revision: Some("r".into()),
                script_sha256: "a".repeat(64),
                with_secrets: false,
                by: "Ada".into(),
                at: 1,
                arguments: serde_json::json!({}),
                outcome: "succeeded".into(),
                result: Some(serde_json::json!(1)),
                error: Some("e".into()),
                printed: "p".into(),
                truncated: false,
            }),
        ),
    ]
}
