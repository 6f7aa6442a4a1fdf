//! The run's record: the event kinds the engine writes, and the reconstruction of a run's
//! state from its events alone (G25).
//!
//! Every change of state the engine makes is also an event: the run's status (`run.status`),
//! each attempt's start (`attempt.started`) and end (`attempt.finished`), parking at a gate
//! (`gate.parked`). So the events are enough to rebuild the run's status, every attempt and
//! every output, and [`reconstruct`] does exactly that.

use std::collections::BTreeMap;

use storage::{AttemptRecord, AttemptStatus, EventRecord, NetworkMode, RunStatus};

/// Event kinds. Stable names: stored in the journal and read by the CLI and the console.
pub mod kind {
    /// The run was created: workflow name, file, hash, inputs, who started it.
    pub const RUN_CREATED: &str = "run.created";
    /// The run's status changed (`status`, optional `reason`).
    pub const RUN_STATUS: &str = "run.status";
    /// The credential names the run holds (names only, never values).
    pub const SECRETS_RESOLVED: &str = "secrets.resolved";
    /// A connection or secret could not be resolved (names only).
    pub const SECRETS_UNAVAILABLE: &str = "secrets.unavailable";
    /// The run parked before a gate.
    pub const GATE_PARKED: &str = "gate.parked";
    /// A person's decision: approve, reject, retry, stop.
    pub const DECISION: &str = "decision";
    /// An attempt was recorded as running, before the executor was called.
    pub const ATTEMPT_STARTED: &str = "attempt.started";
    /// An attempt ended (status, output or error).
    pub const ATTEMPT_FINISHED: &str = "attempt.finished";
    /// What a step printed (scrubbed, then bounded).
    pub const STEP_PRINTED: &str = "step.printed";
    /// A file the copy-back filter or the engine refused.
    pub const COPY_BACK_REFUSED: &str = "copy_back.refused";
    /// The copy-back written as a workspace revision.
    pub const WORKSPACE_REVISION: &str = "workspace.revision";
    /// The supervisor's decision after a failure.
    pub const SUPERVISOR_DECISION: &str = "supervisor.decision";
    /// A supervisor retry the engine refused (an `unknown` attempt, a spent budget).
    pub const SUPERVISOR_RETRY_REFUSED: &str = "supervisor.retry_refused";
    /// Recovery after a restart found this attempt running.
    pub const RECOVERY: &str = "recovery";
}

/// One attempt as the record shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptState {
    pub step_id: String,
    pub attempt: u32,
    pub network: NetworkMode,
    pub status: AttemptStatus,
    pub output: Option<serde_json::Value>,
}

/// A run's state: what [`reconstruct`] rebuilds from events and
/// [`crate::Engine::stored_state`] reads from the store; the two must agree.
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    pub status: Option<RunStatus>,
    pub attempts: Vec<AttemptState>,
    /// The gate the run is parked at, if it is waiting.
    pub parked_at: Option<String>,
}

impl AttemptState {
    pub(crate) fn from_record(record: &AttemptRecord) -> AttemptState {
        AttemptState {
            step_id: record.step_id.clone(),
            attempt: record.attempt,
            network: record.network,
            status: record.status,
            output: record.output.clone(),
        }
    }
}

fn text<'a>(event: &'a EventRecord, field: &str) -> Option<&'a str> {
    event.payload.get(field).and_then(serde_json::Value::as_str)
}

fn attempt_number(event: &EventRecord) -> Option<u32> {
    event
        .payload
        .get("attempt")
        .and_then(serde_json::Value::as_u64)
        .and_then(|number| u32::try_from(number).ok())
}

/// Rebuilds a run's final state from its events alone (G25). Events of kinds this function
/// does not model (printed text, decisions, refusals) do not change the state.
pub fn reconstruct(events: &[EventRecord]) -> RunState {
    let mut state = RunState {
        status: None,
        attempts: Vec::new(),
        parked_at: None,
    };
    let mut index_of: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for event in events {
        match event.kind.as_str() {
            kind::RUN_CREATED => {
                state.status = text(event, "status").and_then(|status| status.parse().ok());
            }
            kind::RUN_STATUS => {
                if let Some(status) = text(event, "status").and_then(|status| status.parse().ok()) {
                    state.status = Some(status);
                    if status != RunStatus::WaitingApproval {
                        state.parked_at = None;
                    }
                }
            }
            kind::GATE_PARKED => {
                state.parked_at = text(event, "step").map(str::to_owned);
            }
            kind::ATTEMPT_STARTED => {
                let (Some(step), Some(attempt)) = (text(event, "step"), attempt_number(event))
                else {
                    continue;
                };
                let network = text(event, "network")
                    .and_then(|network| network.parse().ok())
                    .unwrap_or(NetworkMode::PublicEgress);
                index_of.insert((step.to_owned(), attempt), state.attempts.len());
                state.attempts.push(AttemptState {
                    step_id: step.to_owned(),
                    attempt,
                    network,
                    status: AttemptStatus::Running,
                    output: None,
                });
            }
            kind::ATTEMPT_FINISHED => {
                let (Some(step), Some(attempt)) = (text(event, "step"), attempt_number(event))
                else {
                    continue;
                };
                let Some(&index) = index_of.get(&(step.to_owned(), attempt)) else {
                    continue;
                };
                if let Some(status) = text(event, "status").and_then(|status| status.parse().ok()) {
                    state.attempts[index].status = status;
                }
                // A succeeded attempt always has an output, JSON null included (a `main` that
                // returns `None`); the event writes no output as null too, so the status
                // tells the two apart.
                let output = event.payload.get("output").cloned();
                state.attempts[index].output = match state.attempts[index].status {
                    AttemptStatus::Succeeded => Some(output.unwrap_or(serde_json::Value::Null)),
                    _ => output.filter(|output| !output.is_null()),
                };
            }
            _ => {}
        }
    }
    state
}
