//! Runs, their steps, events and decisions on the wire (the CLI's `--json` and the API).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    pub run: String,
    /// `queued`, `running`, `waiting_approval`, `needs_repair`, `needs_attention`,
    /// `succeeded`, `failed` or `stopped`.
    pub status: String,
    /// The gate the run waits at, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_at: Option<String>,
    /// Why the run is not going on by itself, if it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub steps: Vec<StepSummary>,
}

/// One step's latest attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepSummary {
    pub step: String,
    pub attempt: u32,
    /// `running`, `succeeded`, `failed`, `unknown`, `needs_repair` or `refused`.
    pub status: String,
    /// The step's output (scrubbed), when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One line of `runs list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunListItem {
    pub run: String,
    pub workflow: String,
    /// The run's short number within its workflow ("ledger #12"), 1 for the first.
    pub number: u64,
    pub status: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
}

/// One entry of a run's event log (already scrubbed when it was written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub seq: u64,
    pub kind: String,
    pub at: i64,
    /// The journal version the event was stored in: which shape its payload has (versions 1
    /// to 4 differ only by fields a later version added).
    pub version: u32,
    pub payload: serde_json::Value,
}
