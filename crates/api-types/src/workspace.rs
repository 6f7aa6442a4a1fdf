//! The wire types of an account's workspace over the API: its files, one file's contents, a
//! write (one revision of any number of changes) and the revision history with authors (G25).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;

use crate::limits;

/// One file of the workspace's working folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceFileItem {
    pub path: String,
    pub bytes: u64,
}

/// One file's contents, scrubbed of the account's current values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceFileView {
    pub path: String,
    /// The file's whole size.
    pub total_bytes: u64,
    /// `true` when `content` stops before the end of the file.
    pub truncated: bool,
    /// `utf-8` (the content is the text) or `base64` (the content is the bytes, encoded).
    #[schemars(extend("enum" = ["utf-8", "base64"]))]
    pub encoding: String,
    pub content: String,
}

/// One change of a write: `write` (with `content` in `encoding`, `utf-8` when left out) or
/// `delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceChange {
    #[schemars(length(max = limits::PATH_CHARS))]
    pub path: String,
    #[schemars(extend("enum" = ["write", "delete"]))]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::CONTENT_CHARS))]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["utf-8", "base64"]))]
    pub encoding: Option<String>,
}

/// The body of `POST /api/workspace/revisions`: every change lands in one revision or none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceWriteRequest {
    /// Why, in the writer's words; kept in the history.
    #[schemars(length(max = limits::REVISION_MESSAGE_CHARS))]
    pub message: String,
    pub changes: Vec<WorkspaceChange>,
    /// The saved workflows whose changed reach the writer was shown and confirms, by name: a
    /// write that changes what a saved workflow may reach or run (an agent file, or a script
    /// an agent names) is refused with the list unless each is named here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(max = limits::NAME_CHARS)))]
    pub confirm_reach: Vec<String>,
}

/// One path a revision changed: its new content's hash, none for a deletion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceChangedPath {
    pub path: String,
    pub deleted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// One revision of the history: who (a person, an API key, an agent, a run's step, the CLI),
/// when, why and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceRevisionView {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `person`, `api_key`, `agent`, `run_step` or `cli`.
    pub author_kind: String,
    /// The person's or key's id, the agent's name, `<run>/<step>/<attempt>`, the OS user.
    pub author: String,
    pub at: i64,
    pub message: String,
    pub changes: Vec<WorkspaceChangedPath>,
}

/// A value of every type of this module with every optional field set, by schema name.
#[cfg(test)]
pub(crate) fn samples() -> Vec<(&'static str, Value)> {
    fn value<T: Serialize>(sample: T) -> Value {
        serde_json::to_value(sample).unwrap()
    }
    let change = WorkspaceChange {
        path: "a.txt".into(),
        action: "write".into(),
        content: Some("a".into()),
        encoding: Some("utf-8".into()),
    };
    let changed = WorkspaceChangedPath {
        path: "a.txt".into(),
        deleted: false,
        blob: Some("h".into()),
    };
    vec![
        (
            "WorkspaceFileItem",
            value(WorkspaceFileItem {
                path: "a.txt".into(),
                bytes: 1,
            }),
        ),
        (
            "WorkspaceFileView",
            value(WorkspaceFileView {
                path: "a.txt".into(),
                total_bytes: 1,
                truncated: false,
                encoding: "utf-8".into(),
                content: "a".into(),
            }),
        ),
        ("WorkspaceChange", value(change.clone())),
        (
            "WorkspaceWriteRequest",
            value(WorkspaceWriteRequest {
                message: "m".into(),
                changes: vec![change],
                confirm_reach: vec!["payroll".into()],
            }),
        ),
        ("WorkspaceChangedPath", value(changed.clone())),
        (
            "WorkspaceRevisionView",
            value(WorkspaceRevisionView {
                id: "r".into(),
                parent: Some("p".into()),
                author_kind: "person".into(),
                author: "p".into(),
                at: 1,
                message: "m".into(),
                changes: vec![changed],
            }),
        ),
    ]
}
