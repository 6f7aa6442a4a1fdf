//! Recovery after a restart (G14), called after the sandbox sweep has killed whatever a crash
//! left running.
//!
//! An attempt still marked running is finished from outside: with network it becomes `unknown`
//! and its run waits for a person (the step is never re-run); without network it is `failed`
//! ("interrupted") and the run goes on, which runs the step again. Runs left `running` between
//! two steps go on; a gate decided just before the crash takes effect.
//!
//! Each stored run is taken on its own: a run whose stored state does not load, whose
//! resumption fails or panics, goes to `needs_attention` with the reason (its running attempts
//! finished as above: `unknown` with network, `failed` without), and recovery goes on with the
//! others. A record that cannot resume never stops the platform.

use std::panic::AssertUnwindSafe;

use serde_json::Value;
use storage::{AttemptFinish, AttemptStatus, DecisionKind, NetworkMode, RunId, RunStatus};

use crate::Error;
use crate::attempt::Finished;
use crate::drive::Resume;
use crate::engine::Engine;
use crate::journal::{AttemptFinished, Event, Recovered, RunStatusChanged, SupervisorChoice};

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Networked attempts found running, now `unknown`; their runs need a person.
    pub marked_unknown: Vec<(RunId, String, u32)>,
    /// Offline attempts found running, now `failed`; their steps run again.
    pub interrupted_offline: Vec<(RunId, String, u32)>,
    /// Runs driven on.
    pub resumed: Vec<RunId>,
    /// Runs recovery could not load or resume (their stored workflow no longer parses, the
    /// secret source is down, resuming them failed or panicked), with the reason: each went to
    /// `needs_attention` with it, its running attempts finished (`unknown` with network,
    /// `failed` without), so a networked step is still never re-run.
    pub skipped: Vec<(RunId, String)>,
    /// Attempts whose step's workers died twice running it (issue 38): their runs need a
    /// person, and no worker claims the step again.
    pub stopped_twice: Vec<(RunId, String, u32)>,
}

/// The words of a panic's payload.
fn panic_words(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
        })
        .unwrap_or_else(|| "an internal error".to_owned())
}

impl Engine {
    /// Finishes what a crash left and drives runs on; see the module docs.
    pub fn recover(&self) -> Result<RecoveryReport, Error> {
        let mut report = RecoveryReport::default();
        let mut to_drive: Vec<RunId> = Vec::new();
        let mut set_aside: Vec<RunId> = Vec::new();
        // The queue's jobs first: leases that ran out, or whose holder is proven dead, end;
        // a started job's run is judged by the engine's rules (see `Engine::strand`).
        let reaped = self.store.reap(&self.options.holder_dead)?;
        for stranded in &reaped.stranded {
            let run = stranded.job.run.clone();
            let applied = std::panic::catch_unwind(AssertUnwindSafe(|| {
                self.strand_into(stranded, &mut report, &mut to_drive)
            }));
            match applied {
                Ok(Ok(())) => {}
                Ok(Err(error @ Error::Storage(_))) => return Err(error),
                Ok(Err(error)) => {
                    self.set_aside(&run, &crate::with_causes(&error), &mut report)?;
                    set_aside.push(run);
                }
                Err(payload) => {
                    self.set_aside(&run, &panic_words(payload.as_ref()), &mut report)?;
                    set_aside.push(run);
                }
            }
            self.store.settle(stranded.job.id)?;
        }
        for attempt in self.store.running_attempts()? {
            if set_aside.contains(&attempt.run) {
                continue;
            }
            // An attempt of a job is the queue's: held by a live worker, or judged above.
            // An attempt of a job still queued, held or stranded is the queue's (a live
            // worker's, or judged above); one whose job was given back without its outcome
            // (its worker failed after the step began) is judged here, as after a crash.
            let of_a_job = self.store.jobs_of_run(&attempt.run)?.iter().any(|job| {
                job.step == attempt.step_id
                    && job.attempt == attempt.attempt
                    && (job.state.is_open() || job.state == storage::queue::JobState::Stranded)
            });
            if of_a_job {
                continue;
            }
            let loaded =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.load_context(&attempt.run)));
            let why = match loaded {
                Ok(Ok(context)) => {
                    self.recover_attempt(context, &attempt, &mut report, &mut to_drive)?;
                    continue;
                }
                Ok(Err(error @ Error::Storage(_))) => return Err(error),
                Ok(Err(error)) => crate::with_causes(&error),
                Err(payload) => panic_words(payload.as_ref()),
            };
            self.set_aside(&attempt.run, &why, &mut report)?;
            set_aside.push(attempt.run.clone());
        }
        for run in self
            .store
            .runs_with_status(&[RunStatus::Running, RunStatus::Queued])?
        {
            if !to_drive.contains(&run.id)
                && !set_aside.contains(&run.id)
                && !self.held_by_a_worker(&run.id)?
            {
                to_drive.push(run.id);
            }
        }
        for run in self.store.runs_with_status(&[RunStatus::WaitingApproval])? {
            let decided = std::panic::catch_unwind(AssertUnwindSafe(|| {
                self.gate_decided_before_crash(&run.id)
            }));
            match decided {
                Ok(Ok(true)) if !to_drive.contains(&run.id) => to_drive.push(run.id),
                Ok(Ok(_)) => {}
                Ok(Err(error @ Error::Storage(_))) => return Err(error),
                Ok(Err(error)) => {
                    self.set_aside(&run.id, &crate::with_causes(&error), &mut report)?
                }
                Err(payload) => {
                    self.set_aside(&run.id, &panic_words(payload.as_ref()), &mut report)?
                }
            }
        }
        for run in to_drive {
            let resumed =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.resume_after_crash(&run)));
            match resumed {
                Ok(Ok(true)) => report.resumed.push(run),
                Ok(Ok(false)) => {}
                Ok(Err(error @ Error::Storage(_))) => return Err(error),
                Ok(Err(error)) => self.set_aside(&run, &crate::with_causes(&error), &mut report)?,
                Err(payload) => {
                    self.set_aside(&run, &panic_words(payload.as_ref()), &mut report)?
                }
            }
        }
        Ok(report)
    }

    /// Whether a job of the run is held by a worker whose lease has not ended.
    fn held_by_a_worker(&self, run: &RunId) -> Result<bool, Error> {
        Ok(self
            .store
            .jobs_of_run(run)?
            .iter()
            .any(|job| job.state.is_held()))
    }

    /// Finishes one attempt a crash left running (see the module docs).
    pub(crate) fn recover_attempt(
        &self,
        mut context: crate::context::RunContext,
        attempt: &storage::AttemptRecord,
        report: &mut RecoveryReport,
        to_drive: &mut Vec<RunId>,
    ) -> Result<(), Error> {
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
            self.finish_from_outside(&context, attempt, AttemptStatus::Unknown, &reason)?;
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
            self.finish_from_outside(&context, attempt, AttemptStatus::Failed, &reason)?;
            if !to_drive.contains(&attempt.run) {
                to_drive.push(attempt.run.clone());
            }
            report.interrupted_offline.push(key);
        }
        Ok(())
    }

    /// Ends an attempt found running with nobody running it (a crash, a dead worker) as `now`,
    /// with `reason`, and records that recovery found it so.
    pub(crate) fn finish_from_outside(
        &self,
        context: &crate::context::RunContext,
        attempt: &storage::AttemptRecord,
        now: AttemptStatus,
        reason: &str,
    ) -> Result<(), Error> {
        self.finish(
            context,
            &attempt.step_id,
            attempt.attempt,
            now,
            Finished::reason(&context.redactor, reason),
        )?;
        self.event(
            context,
            Event::Recovery(Recovered {
                step: attempt.step_id.clone(),
                attempt: attempt.attempt,
                found: AttemptStatus::Running,
                now,
            }),
        )?;
        Ok(())
    }

    /// Sends `run` to a person: its stored state could not be loaded or resumed (`why`). Its
    /// running attempts are finished from outside as after a crash (`unknown` with network,
    /// `failed` without), and the run goes to `needs_attention` with the reason, written with
    /// the account's values scrubbed (the run's own set could not be loaded).
    pub(crate) fn set_aside(
        &self,
        run: &RunId,
        why: &str,
        report: &mut RecoveryReport,
    ) -> Result<(), Error> {
        let reason = format!(
            "this run cannot be resumed: {why}; it waits for a person, who can retry its step or \
             stop it"
        );
        report.skipped.push((run.clone(), reason.clone()));
        let Some(record) = self.store.run(run)? else {
            return Ok(());
        };
        let secrets = redact::RunSecrets::collect(
            run,
            &record.account,
            &self.scrub_sets,
            &redact::SecretRequest::default(),
        )
        .map_err(|source| Error::Secrets {
            run: run.clone(),
            source,
        })?;
        let redactor = secrets.redactor();
        let event =
            |event: Event| crate::context::stored_event(&redactor, &event, self.clock.now());
        for attempt in self.store.attempts(run)? {
            if attempt.status != AttemptStatus::Running {
                continue;
            }
            let now = if attempt.network == NetworkMode::PublicEgress {
                AttemptStatus::Unknown
            } else {
                AttemptStatus::Failed
            };
            let finished = Finished::reason(&redactor, &reason);
            let finish = AttemptFinish {
                status: now,
                finished_at: self.clock.now(),
                interpreter_version: None,
                backend: None,
                isolation_notes: None,
                output: None,
                reason: finished.reason.clone(),
            };
            let written = event(Event::AttemptFinished(AttemptFinished {
                step: attempt.step_id.clone(),
                attempt: attempt.attempt,
                status: now,
                output: None,
                error: None,
                reason: finished.reason.as_ref().map(|text| text.get().clone()),
                interpreter_version: None,
                backend: None,
                isolation_notes: None,
            }))?;
            self.store
                .finish_attempt(run, &attempt.step_id, attempt.attempt, &finish, &written)?;
            self.store.append(
                run,
                &event(Event::Recovery(Recovered {
                    step: attempt.step_id.clone(),
                    attempt: attempt.attempt,
                    found: AttemptStatus::Running,
                    now,
                }))?,
            )?;
        }
        if !record.status.is_terminal() && record.status != RunStatus::NeedsAttention {
            if record.status == RunStatus::WaitingApproval {
                self.store.clear_parked(run)?;
            }
            let written = event(Event::RunStatus(RunStatusChanged {
                status: RunStatus::NeedsAttention,
                reason: Some(reason),
            }))?;
            self.store
                .set_run_status(run, RunStatus::NeedsAttention, written.at, &written)?;
        }
        Ok(())
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
                resume = self.resume_from_record(run)?;
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
