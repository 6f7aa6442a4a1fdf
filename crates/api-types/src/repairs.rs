//! Repairs (G9) and the supervisor's setting (G15) on the wire: the assistant's proposal for a
//! step that needs repair, shown as the diff of that step's code with the checks it passed;
//! what accepting it made; and who sees a run's failures with the account's retry budget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;

use crate::{RunDetail, WorkflowVersionView};

/// The proposal recorded for a step that needs repair (`GET` and `POST
/// /api/runs/{id}/steps/{step}/repair`), scrubbed like the run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RepairProposalView {
    pub run: String,
    pub step: String,
    /// The attempt that needed repair.
    pub attempt: u32,
    /// The step's code as the run has it, and the proposed code.
    pub old_code: String,
    pub code: String,
    /// The unified diff of the step's code, old to proposed.
    pub diff: String,
    /// The assistant's one sentence on what it changed.
    pub note: String,
    pub provider: String,
    pub model: String,
    /// What the proposal passed before it was shown, in words.
    pub checks: Vec<String>,
    /// The earlier proposals refused before anything was shown, with why.
    pub refused: Vec<String>,
    /// Whether the run still needs this repair (it was made for the attempt and workflow text
    /// the run has now); a stale proposal cannot be accepted.
    pub current: bool,
    /// The SHA-256 (hex) of the proposed code as recorded: sent back when accepting, so that
    /// only the proposal a person read is accepted, never a newer one.
    pub proposal: String,
}

/// The body of `POST /api/runs/{id}/steps/{step}/repair/accept`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptRepairRequest {
    #[serde(default)]
    #[schemars(length(max = crate::limits::NOTE_CHARS))]
    pub note: String,
    /// The `proposal` of the view that was read: the acceptance is refused when the newest
    /// proposal is another one. Left out, the newest proposal is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub proposal: Option<String>,
}

/// What accepting a repair made (`POST /api/runs/{id}/steps/{step}/repair/accept`): the
/// workflow's new version and the run after it went on from the repaired step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepairAcceptedView {
    pub version: WorkflowVersionView,
    pub run: RunDetail,
}

/// Who sees a failed step of the account's runs, and how often the supervisor may retry one
/// step of one run (`GET /api/supervisor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SupervisorSettingsView {
    /// In words: the assistant on which provider and model (a failed step's inputs and
    /// printed text leave to it), or a person and why.
    pub failures_go_to: String,
    /// The provider that sees failures, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The account's number, when it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// The number that holds: the account's, or the default.
    pub effective_retries: u32,
    pub default_retries: u32,
    pub max_retries: u32,
}

/// The body of `PUT /api/supervisor`: the supervisor's retries per step per run, 0 to 5;
/// `null` (or leaving it out) goes back to the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupervisorSettingsRequest {
    #[serde(default)]
    #[schemars(range(max = 5))]
    pub retries: Option<u32>,
}

#[cfg(test)]
pub(crate) fn samples() -> Vec<(&'static str, Value)> {
    fn value<T: Serialize>(sample: &T) -> Value {
        serde_json::to_value(sample).unwrap()
    }
    vec![
        (
            "RepairProposalView",
            value(&RepairProposalView {
                run: "r".into(),
                step: "s".into(),
                attempt: 1,
                old_code: "o".into(),
                code: "c".into(),
                diff: "d".into(),
                note: "n".into(),
                provider: "p".into(),
                model: "m".into(),
                checks: vec!["k".into()],
                refused: vec!["x".into()],
                current: true,
                proposal: "0a".into(),
            }),
        ),
        (
            "AcceptRepairRequest",
            value(&AcceptRepairRequest {
                note: "n".into(),
                proposal: Some("0a".into()),
            }),
        ),
        (
            "RepairAcceptedView",
            value(&RepairAcceptedView {
                version: crate::schemas::tests::version_view(),
                run: crate::schemas::tests::run_detail(),
            }),
        ),
        (
            "SupervisorSettingsView",
            value(&SupervisorSettingsView {
                failures_go_to: "f".into(),
                provider: Some("p".into()),
                retries: Some(1),
                effective_retries: 1,
                default_retries: 2,
                max_retries: 5,
            }),
        ),
        (
            "SupervisorSettingsRequest",
            value(&SupervisorSettingsRequest { retries: Some(3) }),
        ),
    ]
}
