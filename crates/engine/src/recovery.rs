//! Recovery after a restart (G14), called after the sandbox sweep has killed whatever a crash
//! left running.
//!
//! An attempt still marked running is finished from outside: with network it becomes `unknown`
//! and its run waits for a person (the step is never re-run); without network it is `failed`
//! ("interrupted") and the run goes on, which runs the step again. Runs left `running` between
//! two steps go on; a gate decided just before the crash takes effect.

use serde_json::Value;
use storage::{AttemptStatus, DecisionKind, NetworkMode, RunId, RunStatus};

use crate::Error;
use crate::attempt::Finished;
use crate::drive::Resume;
use crate::engine::Engine;
use crate::journal::{Event, Recovered, SupervisorChoice};

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Networked attempts found running, now `unknown`; their runs need a person.
    pub marked_unknown: Vec<(RunId, String, u32)>,
    /// Offline attempts found running, now `failed`; their steps run again.
    pub interrupted_offline: Vec<(RunId, String, u32)>,
    /// Runs driven on.
    pub resumed: Vec<RunId>,
    /// Runs recovery could not load (their stored workflow no longer parses, the secret
    /// source is down), with the reason. Their attempts stay `running`, so a networked step is
    /// still never re-run; the next recovery tries again.
    pub skipped: Vec<(RunId, String)>,
}

impl Engine {
    /// Finishes what a crash left and drives runs on; see the module docs.
    pub fn recover(&self) -> Result<RecoveryReport, Error> {
        let mut report = RecoveryReport::default();
        let mut to_drive: Vec<RunId> = Vec::new();
        for attempt in self.store.running_attempts()? {
            let mut context = match self.load_context(&attempt.run) {
                Ok(context) => context,
                Err(error) => {
                    report
                        .skipped
                        .push((attempt.run.clone(), crate::with_causes(&error)));
                    continue;
                }
            };
            let key = (
                attempt.run.clone(),
                attempt.step_id.clone(),
                attempt.attempt,
            );
            if attempt.network == NetworkMode::PublicEgress {
                let reason = format!(
                    "the platform stopped while step `{}` attempt {} was running with network \
                     access; what it did is not known, so it is not run again",
                    attempt.step_id, attempt.attempt
                );
                self.finish(
                    &context,
                    &attempt.step_id,
                    attempt.attempt,
                    AttemptStatus::Unknown,
                    Finished::reason(&context.redactor, &reason),
                )?;
                self.event(
                    &context,
                    Event::Recovery(Recovered {
                        step: attempt.step_id.clone(),
                        attempt: attempt.attempt,
                        found: AttemptStatus::Running,
                        now: AttemptStatus::Unknown,
                    }),
                )?;
                if !context.run.status.is_terminal() {
                    self.set_status(&mut context, RunStatus::NeedsAttention, Some(&reason))?;
                }
                report.marked_unknown.push(key);
            } else {
                let reason = format!(
                    "the platform stopped while step `{}` attempt {} was running without network \
                     access; it runs again",
                    attempt.step_id, attempt.attempt
                );
                self.finish(
                    &context,
                    &attempt.step_id,
                    attempt.attempt,
                    AttemptStatus::Failed,
                    Finished::reason(&context.redactor, &reason),
                )?;
                self.event(
                    &context,
                    Event::Recovery(Recovered {
                        step: attempt.step_id.clone(),
                        attempt: attempt.attempt,
                        found: AttemptStatus::Running,
                        now: AttemptStatus::Failed,
                    }),
                )?;
                if !to_drive.contains(&attempt.run) {
                    to_drive.push(attempt.run.clone());
                }
                report.interrupted_offline.push(key);
            }
        }
        for run in self
            .store
            .runs_with_status(&[RunStatus::Running, RunStatus::Queued])?
        {
            if !to_drive.contains(&run.id) {
                to_drive.push(run.id);
            }
        }
        for run in self.store.runs_with_status(&[RunStatus::WaitingApproval])? {
            if self.gate_decided_before_crash(&run.id)? && !to_drive.contains(&run.id) {
                to_drive.push(run.id);
            }
        }
        for run in to_drive {
            match self.resume_after_crash(&run) {
                Ok(true) => report.resumed.push(run),
                Ok(false) => {}
                Err(error @ Error::Storage(_)) => return Err(error),
                Err(error) => report.skipped.push((run, crate::with_causes(&error))),
            }
        }
        Ok(report)
    }

    /// Whether a run waiting at a gate already has the gate's decision (the crash came between
    /// recording it and acting on it), or lost its parked state.
    /// A decision counts only if it is on the gate's current inputs: after a supervisor's
    /// retry of the gated step parked it again, an approval of the earlier inputs does not.
    fn gate_decided_before_crash(&self, run: &RunId) -> Result<bool, Error> {
        let Some(parked) = self.store.parked(run)? else {
            return Ok(true);
        };
        let context = self.load_context(run)?;
        let from = self.gate_decisions_from(&context, &parked.step_id)?;
        let decided = self.store.decisions(run)?.iter().any(|decision| {
            matches!(decision.kind, DecisionKind::Approve | DecisionKind::Reject)
                && decision.step_id.as_deref() == Some(parked.step_id.as_str())
                && decision.attempt.unwrap_or(0) >= from
        });
        Ok(decided)
    }

    fn resume_after_crash(&self, run: &RunId) -> Result<bool, Error> {
        let mut context = self.load_context(run)?;
        let mut resume = Resume::Continue;
        match context.run.status {
            RunStatus::Running | RunStatus::Queued => {
                // A retry's new inputs still to run (no attempt yet, or one the crash
                // interrupted) run, never the inputs they corrected.
                if let Some((step, inputs)) = self.retry_inputs_in_force(run)? {
                    resume = Resume::Retry {
                        step,
                        inputs: Some(inputs),
                    };
                }
            }
            RunStatus::WaitingApproval => {
                let parked = self.store.parked(run)?;
                let decisions = self.store.decisions(run)?;
                let gate = parked.as_ref().map(|parked| parked.step_id.clone());
                let from = match &gate {
                    Some(step) => self.gate_decisions_from(&context, step)?,
                    None => 0,
                };
                let rejected = decisions.iter().any(|decision| {
                    decision.kind == DecisionKind::Reject
                        && (gate.is_none() || decision.step_id == gate)
                        && if from > 0 {
                            decision.attempt.unwrap_or(0) >= from
                        } else {
                            !self.step_has_attempts(run, decision.step_id.as_deref())
                        }
                });
                // A retry's new inputs for the gated step, which the decision was on: kept in
                // the parked state, or, when the crash came after the approval cleared it, in
                // force from the person's retry.
                let waiting = match &parked {
                    Some(parked) => gate
                        .clone()
                        .zip(parked.state.get(crate::drive::RETRY_INPUTS).cloned()),
                    None => self.retry_inputs_in_force(run)?,
                };
                if let Some((step, inputs)) = waiting {
                    resume = Resume::Retry {
                        step,
                        inputs: Some(inputs),
                    };
                }
                self.store.clear_parked(run)?;
                if rejected {
                    self.set_status(
                        &mut context,
                        RunStatus::Stopped,
                        Some("rejected at the gate"),
                    )?;
                    return Ok(true);
                }
                self.set_status(&mut context, RunStatus::Running, None)?;
            }
            RunStatus::NeedsRepair
            | RunStatus::NeedsAttention
            | RunStatus::Succeeded
            | RunStatus::Failed
            | RunStatus::Stopped => {
                return Ok(false);
            }
        }
        self.drive(context, resume)?;
        Ok(true)
    }

    /// The new inputs a retry put in force, and its step: the run's last retry, when it is a
    /// person's with new inputs or the supervisor's (whose are accepted only when checked).
    /// Every attempt of that step since was made with them, so a step the crash left to run
    /// again (no attempt yet, an offline attempt interrupted, an approval of them half written)
    /// runs with them, never with the inputs they corrected; and a person's retry that gives
    /// none runs them again.
    pub(crate) fn retry_inputs_in_force(
        &self,
        run: &RunId,
    ) -> Result<Option<(String, Value)>, Error> {
        let last_retry = crate::journal::read_all(&self.store.events(run)?)?
            .into_iter()
            .rev()
            .find_map(|entry| match entry.event {
                Event::Decision(decided) if decided.decision == DecisionKind::Retry => {
                    Some(decided.step.zip(decided.new_inputs))
                }
                Event::SupervisorDecision(decided) => match decided.decision {
                    SupervisorChoice::Retry { inputs } => Some(Some((decided.step, inputs))),
                    _ => None,
                },
                _ => None,
            });
        Ok(last_retry.flatten())
    }

    fn step_has_attempts(&self, run: &RunId, step: Option<&str>) -> bool {
        let Some(step) = step else {
            return false;
        };
        self.store
            .attempts(run)
            .map(|attempts| attempts.iter().any(|attempt| attempt.step_id == step))
            .unwrap_or(false)
    }
}
