//! The step loop: run the steps in order, park at gates, and refuse to start a step whose
//! latest attempt only a person can get past (G14). Each attempt is `crate::attempt`.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use spec::Step;
use storage::queue::{Fence, JobId};
use storage::{AttemptRecord, AttemptStatus, DecisionKind, DecisionRecord, RunStatus};

use crate::Error;
use crate::attempt::StepEnd;
use crate::context::RunContext;
use crate::engine::Engine;
use crate::jobs::JobClaim;
use crate::journal::{Event, GateParked, SupervisorChoice};

/// The key of a parked state that holds the supervisor's new inputs for the gated step.
pub(crate) const RETRY_INPUTS: &str = "supervisor_retry_inputs";

/// How a run is continued.
pub(crate) enum Resume {
    /// From the first step without a succeeded attempt.
    Continue,
    /// As [`Resume::Continue`], with a person's new inputs for this step.
    Retry { step: String, inputs: Option<Value> },
}

/// Where a walk over a run's steps left it.
pub(crate) enum Walk {
    /// The run's next attempt is queued, with the inputs in force for it.
    Queued(JobId, Resume),
    /// The run parked, ended or waits for a person.
    Ended,
    /// The worker's job is no longer the run's next attempt: nothing was written.
    Stale,
    /// The worker's lease was taken before its attempt started: nothing was written.
    Lost,
}

/// Why a step must not start: its latest attempt ended in a way only a person can get past.
struct Block {
    status: RunStatus,
    reason: String,
}

/// The failure policy's choke point (G14): a step whose latest attempt is `unknown`,
/// `refused`, `needs_repair` or still `running` starts again only if a person's `retry`
/// decision names that very attempt. A `failed` attempt (offline, or before the code started)
/// may run again.
fn latest_attempt_blocks(
    attempts: &[AttemptRecord],
    decisions: &[DecisionRecord],
    step: &str,
) -> Option<Block> {
    let latest = attempts
        .iter()
        .rev()
        .find(|attempt| attempt.step_id == step)?;
    let person_retry = decisions.iter().any(|decision| {
        decision.kind == DecisionKind::Retry
            && decision.step_id.as_deref() == Some(step)
            && decision.attempt == Some(latest.attempt)
    });
    if person_retry {
        return None;
    }
    let status = match latest.status {
        AttemptStatus::Succeeded | AttemptStatus::Failed => return None,
        AttemptStatus::NeedsRepair => RunStatus::NeedsRepair,
        AttemptStatus::Unknown | AttemptStatus::Refused | AttemptStatus::Running => {
            RunStatus::NeedsAttention
        }
    };
    Some(Block {
        status,
        reason: format!(
            "step `{step}` attempt {} is {}; only a person's recorded decision can run it again",
            latest.attempt, latest.status
        ),
    })
}

/// Whether a person approved the gate `step` for its current inputs: an approval recorded
/// against attempt `from` or later (see [`Engine::gate_decisions_from`]).
fn gate_approved(decisions: &[DecisionRecord], step: &str, from: u32) -> bool {
    decisions.iter().any(|decision| {
        decision.kind == DecisionKind::Approve
            && decision.step_id.as_deref() == Some(step)
            && decision.attempt.unwrap_or(0) >= from
    })
}

impl Engine {
    /// Whether `step`'s latest attempt is running and its job is held by a worker.
    fn running_under_a_lease(
        &self,
        run: &storage::RunId,
        attempts: &[AttemptRecord],
        step: &str,
    ) -> Result<bool, Error> {
        let Some(latest) = attempts
            .iter()
            .rev()
            .find(|attempt| attempt.step_id == step)
        else {
            return Ok(false);
        };
        if latest.status != AttemptStatus::Running {
            return Ok(false);
        }
        Ok(self
            .store
            .jobs_of_run(run)?
            .iter()
            .any(|job| job.step == step && job.attempt == latest.attempt && job.state.is_held()))
    }

    /// The first attempt a gate decision on `step` must be recorded against to count (G15,
    /// G23, G9): after a supervisor's retry of the gated step's attempt N, or an accepted repair
    /// of it, only a decision on attempt N + 1 or later (the new inputs, the new code) lets it
    /// run; before any, every decision counts.
    pub(crate) fn gate_decisions_from(
        &self,
        context: &RunContext,
        step: &str,
    ) -> Result<u32, Error> {
        let retried = crate::journal::read_all(&self.store.events(&context.run.id)?)?
            .into_iter()
            .filter_map(|entry| match entry.event {
                Event::SupervisorDecision(decided)
                    if decided.step == step
                        && matches!(decided.decision, SupervisorChoice::Retry { .. }) =>
                {
                    Some(decided.attempt.saturating_add(1))
                }
                // An accepted repair is new code: the approval of the old one does not count.
                Event::RepairAccepted(accepted) if accepted.step == step => {
                    Some(accepted.attempt.saturating_add(1))
                }
                // A person's retry with new inputs: the approval was for the old ones.
                Event::Decision(decided)
                    if decided.decision == DecisionKind::Retry
                        && decided.step.as_deref() == Some(step)
                        && decided.new_inputs.is_some() =>
                {
                    decided.attempt.map(|attempt| attempt.saturating_add(1))
                }
                _ => None,
            })
            .max();
        Ok(retried.unwrap_or(0))
    }

    /// Walks a run's steps from where its record says it is. A door's walk (`job` `None`)
    /// parks, stops or ends the run where no step must run, and queues the attempt where one
    /// must. A worker's walk (`job`) runs its job's attempt first, when it is still the run's
    /// next (otherwise it writes nothing: [`Walk::Stale`]), after marking the job started,
    /// then walks on as a door does.
    pub(crate) fn walk(
        &self,
        context: &mut RunContext,
        resume: Resume,
        job: Option<&dyn JobClaim>,
    ) -> Result<Walk, Error> {
        let attempts = self.store.attempts(&context.run.id)?;
        let decisions = self.store.decisions(&context.run.id)?;
        let mut outputs: BTreeMap<String, Value> = BTreeMap::new();
        for attempt in attempts
            .iter()
            .filter(|attempt| attempt.status == AttemptStatus::Succeeded)
        {
            outputs.insert(
                attempt.step_id.clone(),
                attempt.output.clone().unwrap_or(Value::Null),
            );
        }
        let (mut retry_step, mut retry_inputs) = match resume {
            Resume::Continue => (None, None),
            Resume::Retry { step, inputs } => (Some(step), inputs),
        };
        // A worker's job is made once, before anything else is written.
        let mut pending = job;
        let steps = context.workflow.steps().to_vec();
        for step in &steps {
            if outputs.contains_key(step.id()) {
                continue;
            }
            if let Some(block) = latest_attempt_blocks(&attempts, &decisions, step.id()) {
                if pending.is_some() {
                    return Ok(Walk::Stale);
                }
                // A step a worker runs right now (another door's decision queued it a moment
                // ago) is that worker's to end: this door writes nothing over it.
                if self.running_under_a_lease(&context.run.id, &attempts, step.id())? {
                    return Ok(Walk::Ended);
                }
                self.set_status(context, block.status, Some(&block.reason))?;
                return Ok(Walk::Ended);
            }
            if step.is_gate()
                && !gate_approved(
                    &decisions,
                    step.id(),
                    self.gate_decisions_from(context, step.id())?,
                )
            {
                if pending.is_some() {
                    return Ok(Walk::Stale);
                }
                // A retry's new inputs wait in the parked state for the decision on them.
                let waiting = match retry_step.as_deref() == Some(step.id()) {
                    true => retry_inputs
                        .as_ref()
                        .map(|inputs| (inputs, "the new inputs of a person's retry")),
                    false => None,
                };
                self.park(context, step, &outputs, waiting)?;
                return Ok(Walk::Ended);
            }
            let mut overrides = if retry_step.as_deref() == Some(step.id()) {
                retry_step = None;
                retry_inputs.take()
            } else {
                None
            };
            loop {
                let number = self.next_attempt_number(&context.run.id, step.id())?;
                let claim = match pending.take() {
                    Some(claim) => {
                        let lease = claim.lease();
                        if lease.step != step.id() || lease.attempt != number {
                            return Ok(Walk::Stale);
                        }
                        if claim.start()? == Fence::Lost {
                            return Ok(Walk::Lost);
                        }
                        claim
                    }
                    None => {
                        let job = self.enqueue_attempt(context, step, number)?;
                        let resume = Resume::Retry {
                            step: step.id().to_owned(),
                            inputs: overrides,
                        };
                        return Ok(Walk::Queued(job, resume));
                    }
                };
                let end = self.run_attempt(context, step, &outputs, overrides.as_ref(), claim)?;
                // A worker whose lease was taken while its step ran (it stalled past its
                // lease, and the step was judged stranded) walks no further: what comes next
                // is the rules' to decide, and its outcome was written only if the attempt was
                // still running.
                if !claim.held() {
                    return Ok(Walk::Lost);
                }
                match end {
                    StepEnd::Succeeded(output) => {
                        outputs.insert(step.id().to_owned(), output);
                        break;
                    }
                    StepEnd::Halt { status, reason } => {
                        self.set_status(context, status, Some(&reason))?;
                        return Ok(Walk::Ended);
                    }
                    StepEnd::RetryWith(inputs) => overrides = Some(inputs),
                    // A gate's approval was for the inputs it was shown: new inputs get a new
                    // decision (G15, G23).
                    StepEnd::ParkForRetry(inputs) => {
                        let waiting = (&inputs, "the supervisor's new inputs");
                        self.park(context, step, &outputs, Some(waiting))?;
                        return Ok(Walk::Ended);
                    }
                }
            }
        }
        if pending.is_some() {
            return Ok(Walk::Stale);
        }
        self.set_status(context, RunStatus::Succeeded, None)?;
        Ok(Walk::Ended)
    }

    /// Parks the run before a gate (G23), storing its state with credential values stripped
    /// and names kept (G18). `retry_inputs`: a retry's new inputs for the gated step (the
    /// supervisor's or a person's, as the words say), which the step gets once a person
    /// approves them.
    fn park(
        &self,
        context: &mut RunContext,
        step: &Step,
        outputs: &BTreeMap<String, Value>,
        retry_inputs: Option<(&Value, &str)>,
    ) -> Result<(), Error> {
        let gate = self.gate(&context.run.account, &context.run.id, step.id())?;
        let attempt = gate.attempt;
        let names: Vec<String> = context
            .secrets
            .names()
            .iter()
            .map(ToString::to_string)
            .collect();
        let mut state = json!({
            "gate": step.id(),
            "attempt": attempt,
            "outputs": outputs,
            "inputs": context.run.inputs,
            "credential_names": names,
        });
        if let (Some((retry_inputs, _)), Value::Object(fields)) = (retry_inputs, &mut state) {
            fields.insert(RETRY_INPUTS.to_owned(), retry_inputs.clone());
        }
        let event = self.new_event(
            context,
            Event::GateParked(GateParked {
                step: step.id().to_owned(),
                attempt,
            }),
        )?;
        // The approve link's mail, in the park's transaction (issue 41): names and the
        // explanation only, never the step's inputs or outputs, scrubbed like the state.
        let notify = context.workflow.notify();
        let mail = storage::mail::NewGateMail {
            account: context.run.account.clone(),
            attempt,
            content: context.redactor.scrub_json(&json!({
                "workflow": context.workflow.name(),
                "step": step.id(),
                "explain": step.explain(),
            })),
            people: notify.people().to_vec(),
            remind_after_secs: notify.remind_after().map(|after| after.as_secs()),
        };
        self.store.park(
            &context.run.id,
            step.id(),
            &context.redactor.scrub_json(&state),
            event.at,
            &event,
            &mail,
        )?;
        let reason = if let Some((_, whose)) = retry_inputs {
            format!(
                "waiting for a person's decision at the gate `{}` on {whose}",
                step.id()
            )
        } else {
            format!(
                "waiting for a person's decision at the gate `{}`",
                step.id()
            )
        };
        self.set_status(context, RunStatus::WaitingApproval, Some(&reason))
    }
}
