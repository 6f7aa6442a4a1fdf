//! The reconstruction of a run's state from its typed events alone (G25).
//!
//! Every change of state the engine makes is also an event (see [`crate::journal`]): the
//! run's status, each attempt's start and end, parking at a gate. So the events are enough to
//! rebuild the run's status, every attempt and every output, and [`reconstruct`] does exactly
//! that, reading only [`crate::journal::Event`]s.

use std::collections::BTreeMap;

use storage::{AttemptRecord, AttemptStatus, NetworkMode, RunStatus};

use crate::journal::{Entry, Event};

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

/// Rebuilds a run's final state from its events alone (G25). Every kind is named: one that
/// changes no state (printed text, decisions, refusals) says so here, so a new kind cannot be
/// added without deciding whether it does.
pub fn reconstruct(entries: &[Entry]) -> RunState {
    let mut state = RunState {
        status: None,
        attempts: Vec::new(),
        parked_at: None,
    };
    let mut index_of: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    for entry in entries {
        match &entry.event {
            Event::RunCreated(created) => state.status = Some(created.status),
            Event::RunStatus(changed) => {
                state.status = Some(changed.status);
                if changed.status != RunStatus::WaitingApproval {
                    state.parked_at = None;
                }
            }
            Event::GateParked(parked) => state.parked_at = Some(parked.step.clone()),
            Event::AttemptStarted(started) => {
                index_of.insert((&started.step, started.attempt), state.attempts.len());
                state.attempts.push(AttemptState {
                    step_id: started.step.clone(),
                    attempt: started.attempt,
                    network: started.network,
                    status: AttemptStatus::Running,
                    output: None,
                });
            }
            Event::AttemptFinished(finished) => {
                let Some(attempt) = index_of
                    .get(&(finished.step.as_str(), finished.attempt))
                    .and_then(|&index| state.attempts.get_mut(index))
                else {
                    continue;
                };
                attempt.status = finished.status;
                // A succeeded attempt always has an output, JSON null included (a `main` that
                // returns `None`); the event writes no output as null too, so the status
                // tells the two apart.
                attempt.output = match finished.status {
                    AttemptStatus::Succeeded => {
                        Some(finished.output.clone().unwrap_or(serde_json::Value::Null))
                    }
                    _ => finished.output.clone().filter(|output| !output.is_null()),
                };
            }
            Event::SecretsResolved(_)
            | Event::DefinitionsPinned(_)
            | Event::SecretsUnavailable(_)
            | Event::Decision(_)
            | Event::StepPrinted(_)
            | Event::CopyBackRefused(_)
            | Event::WorkspaceRevision(_)
            | Event::SupervisorDecision(_)
            | Event::SupervisorRetryRefused(_)
            | Event::Recovery(_)
            | Event::AgentTurn(_)
            | Event::ToolCalled(_)
            | Event::ToolFinished(_)
            | Event::ToolRefused(_)
            | Event::AgentLimit(_)
            | Event::RepairAccepted(_)
            | Event::RepairProposed(_) => {}
        }
    }
    state
}
