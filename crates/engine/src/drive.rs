//! The step loop: run the steps in order, park at gates, record every attempt, hand failures
//! to the supervisor, and enforce the failure policy (G14).

use std::collections::BTreeMap;

use redact::{Redacted, Redactor};
use serde_json::{Value, json};
use spec::Step;
use storage::{
    AttemptFinish, AttemptRecord, AttemptStatus, DecisionKind, DecisionRecord, NetworkMode,
    NewAttempt, RunStatus,
};

use crate::Error;
use crate::context::{RunContext, step_env};
use crate::engine::{Engine, RunSummary};
use crate::executor::{CodePhase, ExecutionOutcome, ExecutionReport, ExecutionRequest};
use crate::inputs::{step_inputs, without_forbidden_values};
use crate::journal::{
    AttemptFinished, AttemptStarted, Event, GateParked, PrintedStream, StepFailure, StepPrinted,
    SupervisorChoice, SupervisorDecided, SupervisorRetryRefused,
};
use crate::supervisor::{FailureView, RetryPermission, SupervisorDecision, UNKNOWN_MEANS_STOP};

/// How a run is continued.
pub(crate) enum Resume {
    /// From the first step without a succeeded attempt.
    Continue,
    /// As [`Resume::Continue`], with a person's new inputs for this step.
    Retry { step: String, inputs: Option<Value> },
}

/// How one attempt ended, for the loop.
enum StepEnd {
    Succeeded(Value),
    Halt { status: RunStatus, reason: String },
    RetryWith(Value),
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

fn gate_approved(decisions: &[DecisionRecord], step: &str) -> bool {
    decisions.iter().any(|decision| {
        decision.kind == DecisionKind::Approve && decision.step_id.as_deref() == Some(step)
    })
}

fn network_mode(step: &Step) -> NetworkMode {
    match step.network() {
        spec::Network::None => NetworkMode::None,
        spec::Network::PublicEgress => NetworkMode::PublicEgress,
    }
}

impl Engine {
    /// Drives a run from where its record says it is, then returns its summary.
    pub(crate) fn drive(
        &self,
        mut context: RunContext,
        resume: Resume,
    ) -> Result<RunSummary, Error> {
        let result = self.drive_steps(&mut context, resume);
        let run = context.run.id.clone();
        result?;
        self.summary(&run)
    }

    fn drive_steps(&self, context: &mut RunContext, resume: Resume) -> Result<(), Error> {
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
        let steps = context.workflow.steps().to_vec();
        for step in &steps {
            if outputs.contains_key(step.id()) {
                continue;
            }
            if let Some(block) = latest_attempt_blocks(&attempts, &decisions, step.id()) {
                self.set_status(context, block.status, Some(&block.reason))?;
                return Ok(());
            }
            if step.is_gate() && !gate_approved(&decisions, step.id()) {
                return self.park(context, step, &outputs);
            }
            let mut overrides = if retry_step.as_deref() == Some(step.id()) {
                retry_step = None;
                retry_inputs.take()
            } else {
                None
            };
            let mut supervisor_retries = 0_u32;
            loop {
                match self.run_attempt(
                    context,
                    step,
                    &outputs,
                    overrides.as_ref(),
                    supervisor_retries,
                )? {
                    StepEnd::Succeeded(output) => {
                        outputs.insert(step.id().to_owned(), output);
                        break;
                    }
                    StepEnd::Halt { status, reason } => {
                        self.set_status(context, status, Some(&reason))?;
                        return Ok(());
                    }
                    StepEnd::RetryWith(inputs) => {
                        supervisor_retries = supervisor_retries.saturating_add(1);
                        overrides = Some(inputs);
                    }
                }
            }
        }
        self.set_status(context, RunStatus::Succeeded, None)
    }

    /// Parks the run before a gate (G23), storing its state with credential values stripped
    /// and names kept (G18).
    fn park(
        &self,
        context: &mut RunContext,
        step: &Step,
        outputs: &BTreeMap<String, Value>,
    ) -> Result<(), Error> {
        let gate = self.gate(&context.run.account, &context.run.id, step.id())?;
        let attempt = gate.attempt;
        let names: Vec<String> = context
            .secrets
            .names()
            .iter()
            .map(ToString::to_string)
            .collect();
        let state = json!({
            "gate": step.id(),
            "attempt": attempt,
            "outputs": outputs,
            "inputs": context.run.inputs,
            "credential_names": names,
        });
        let event = self.new_event(
            context,
            Event::GateParked(GateParked {
                step: step.id().to_owned(),
                attempt,
            }),
        )?;
        self.store.park(
            &context.run.id,
            step.id(),
            &context.redactor.scrub_json(&state),
            event.at,
            &event,
        )?;
        let reason = format!(
            "waiting for a person's decision at the gate `{}`",
            step.id()
        );
        self.set_status(context, RunStatus::WaitingApproval, Some(&reason))
    }

    /// One attempt: record it as running (synced), call the executor, record what it saw.
    fn run_attempt(
        &self,
        context: &RunContext,
        step: &Step,
        outputs: &BTreeMap<String, Value>,
        overrides: Option<&Value>,
        supervisor_retries: u32,
    ) -> Result<StepEnd, Error> {
        let attempt = self.next_attempt_number(&context.run.id, step.id())?;
        let network = network_mode(step);
        let built = step_inputs(step, &context.run.inputs, outputs, overrides);
        let mut refusal = None;
        let mut holds_forbidden_keys = false;
        let inputs = match built {
            Ok(inputs) => {
                let forbidden = spec::forbidden_keys_in(&inputs);
                if !forbidden.is_empty() {
                    holds_forbidden_keys = true;
                    refusal = Some(format!(
                        "the step's inputs hold forbidden keys (credentials are never inputs): {}",
                        forbidden.join(", ")
                    ));
                }
                inputs
            }
            Err(reason) => {
                refusal = Some(reason);
                Value::Object(serde_json::Map::new())
            }
        };
        // Each account's steps see and write only that account's folder.
        let workspace = self
            .options
            .workspaces
            .for_account(context.run.account.as_str())
            .map_err(|error| {
                format!(
                    "the account's workspace cannot be opened: {}",
                    self.without_host_paths(&crate::with_causes(&error))
                )
            });
        let env = match step_env(step, &context.secrets, &context.unavailable) {
            Ok(env) => env,
            Err(reason) => {
                refusal.get_or_insert(reason);
                Vec::new()
            }
        };
        // G4: what sits under a forbidden key may be a credential no redactor knows (typed in
        // by hand), so the refused attempt's record keeps the key and masks its value.
        let scrubbed_inputs = if holds_forbidden_keys {
            context
                .redactor
                .scrub_json(&without_forbidden_values(&inputs))
        } else {
            context.redactor.scrub_json(&inputs)
        };
        let started = self.new_event(
            context,
            Event::AttemptStarted(AttemptStarted {
                step: step.id().to_owned(),
                attempt,
                network,
                inputs: scrubbed_inputs.get().clone(),
            }),
        )?;
        // G14: this row is synced before the executor is called.
        self.store.begin_attempt(
            &NewAttempt {
                run: context.run.id.clone(),
                step_id: crate::engine::step_id(step.id())?,
                attempt,
                network,
                inputs: scrubbed_inputs.clone(),
                started_at: started.at,
            },
            &started,
        )?;
        let workspace = match (refusal, workspace) {
            (None, Ok(workspace)) => workspace,
            (Some(reason), _) | (None, Err(reason)) => {
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::Refused,
                    Finished::reason(&context.redactor, &reason),
                )?;
                return Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason,
                });
            }
        };
        let report = self.executor.execute(ExecutionRequest {
            account: context.run.account.as_str(),
            run_id: context.run.id.as_str(),
            step,
            python: context.workflow.python(),
            inputs,
            env,
            attempt,
            work_dir: workspace.files_dir(),
        });
        self.record_printed(
            context,
            step.id(),
            attempt,
            PrintedStream::Stdout,
            &report.stdout,
        )?;
        self.record_printed(
            context,
            step.id(),
            attempt,
            PrintedStream::Stderr,
            &report.stderr,
        )?;
        self.record_copy_back(context, step.id(), attempt, &report, &workspace)?;
        let mut finished = Finished::observed(&context.redactor, &report);
        let redactor = &context.redactor;
        match report.outcome {
            ExecutionOutcome::Succeeded { output } => {
                // G4: a value under a forbidden key may be a credential no redactor knows (a
                // token the step minted); the output keeps the key and loses the value, so
                // neither this step's record nor the next step's inputs hold it (a next step
                // that takes it is refused for the key).
                let output = match redactor.scrub_json_text(output.as_text()) {
                    Ok(scrubbed) => redactor.scrub_json(&without_forbidden_values(scrubbed.get())),
                    // The executor checked the text; one that still does not parse is shown as
                    // no output rather than as text nobody checked.
                    Err(_) => redactor.scrub_json(&Value::Null),
                };
                finished.output = Some(output.clone());
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::Succeeded,
                    finished,
                )?;
                Ok(StepEnd::Succeeded(output.into_inner()))
            }
            ExecutionOutcome::NeedsRepair { module, detail } => {
                let reason = if module.is_empty() {
                    // Not an import: code that does not compile (a syntax error).
                    format!("step `{}` needs repair: {detail}", step.id())
                } else {
                    format!(
                        "step `{}` needs repair: it imports `{module}`, which the pinned Python \
                         {} does not have: {detail}",
                        step.id(),
                        context.workflow.python()
                    )
                };
                finished.reason = Some(redactor.scrub(&reason));
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::NeedsRepair,
                    finished,
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::NeedsRepair,
                    reason: redactor.scrub(&reason).into_inner(),
                })
            }
            ExecutionOutcome::Refused { reason } => {
                let reason = redactor.scrub(&reason);
                finished.reason = Some(reason.clone());
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::Refused,
                    finished,
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason: reason.into_inner(),
                })
            }
            ExecutionOutcome::Unknown { reason } => {
                let reason = redactor.scrub(&reason);
                finished.reason = Some(reason.clone());
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::Unknown,
                    finished,
                )?;
                let failure = Failure {
                    error_kind: redactor.scrub("unknown"),
                    message: reason,
                    traceback: redactor.scrub(""),
                };
                self.consult(
                    context,
                    step,
                    attempt,
                    AttemptStatus::Unknown,
                    failure,
                    scrubbed_inputs,
                    RetryPermission::Forbidden,
                )
            }
            ExecutionOutcome::Failed { error, phase } => {
                // G14: after the code of a networked step started, a failure may have had
                // effects outside; its outcome is unknown, whatever the code reported.
                let status =
                    if network == NetworkMode::PublicEgress && phase == CodePhase::CodeStarted {
                        AttemptStatus::Unknown
                    } else {
                        AttemptStatus::Failed
                    };
                let failure = Failure {
                    error_kind: redactor.scrub_truncated(&error.kind, self.options.max_error_bytes),
                    message: redactor.scrub_truncated(&error.message, self.options.max_error_bytes),
                    traceback: redactor
                        .scrub_truncated(&error.traceback, self.options.max_error_bytes),
                };
                finished.reason = Some(redactor.scrub(&format!(
                    "{}: {}",
                    failure.error_kind.get(),
                    failure.message.get()
                )));
                finished.error = Some(StepFailure {
                    kind: failure.error_kind.get().clone(),
                    message: failure.message.get().clone(),
                    traceback: failure.traceback.get().clone(),
                    code_started: phase == CodePhase::CodeStarted,
                });
                self.finish(context, step.id(), attempt, status, finished)?;
                let permission = if status == AttemptStatus::Unknown
                    || supervisor_retries >= self.options.max_supervisor_retries
                {
                    RetryPermission::Forbidden
                } else {
                    RetryPermission::Allowed
                };
                self.consult(
                    context,
                    step,
                    attempt,
                    status,
                    failure,
                    scrubbed_inputs,
                    permission,
                )
            }
        }
    }

    /// Hands a failure to the supervisor and enforces what it may do (G15).
    #[allow(clippy::too_many_arguments)]
    fn consult(
        &self,
        context: &RunContext,
        step: &Step,
        attempt: u32,
        status: AttemptStatus,
        failure: Failure,
        inputs: Redacted<Value>,
        retry: RetryPermission,
    ) -> Result<StepEnd, Error> {
        let view = FailureView {
            run_id: context.run.id.clone(),
            step_id: step.id().to_owned(),
            attempt,
            network: network_mode(step),
            status,
            error_kind: failure.error_kind,
            message: failure.message,
            traceback: failure.traceback,
            inputs,
            retry,
            policy: UNKNOWN_MEANS_STOP,
        };
        let decision = self.supervisor.on_failure(&view);
        let step_id = step.id();
        match decision {
            SupervisorDecision::Retry { inputs } if retry == RetryPermission::Allowed => {
                // G4: a value under a forbidden key may be a credential that no redactor knows;
                // the decision is recorded without it, and the attempt refuses the inputs.
                let recorded = without_forbidden_values(&inputs);
                self.event(
                    context,
                    supervisor_decided(
                        step_id,
                        attempt,
                        SupervisorChoice::Retry { inputs: recorded },
                    ),
                )?;
                Ok(StepEnd::RetryWith(inputs))
            }
            SupervisorDecision::Retry { .. } => {
                let reason = if status == AttemptStatus::Unknown {
                    format!(
                        "step `{step_id}` attempt {attempt} is unknown; the supervisor may not retry it, only a person can"
                    )
                } else {
                    format!(
                        "step `{step_id}` used up its {} supervisor retries",
                        self.options.max_supervisor_retries
                    )
                };
                self.event(
                    context,
                    Event::SupervisorRetryRefused(SupervisorRetryRefused {
                        step: step_id.to_owned(),
                        attempt,
                        reason: reason.clone(),
                    }),
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason,
                })
            }
            SupervisorDecision::Stop { reason } => {
                let reason = context.redactor.scrub(&reason).into_inner();
                self.event(
                    context,
                    supervisor_decided(
                        step_id,
                        attempt,
                        SupervisorChoice::Stop {
                            reason: reason.clone(),
                        },
                    ),
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::Stopped,
                    reason: format!("stopped by the supervisor: {reason}"),
                })
            }
            SupervisorDecision::AskPerson => {
                self.event(
                    context,
                    supervisor_decided(step_id, attempt, SupervisorChoice::AskPerson),
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason: format!(
                        "step `{step_id}` attempt {attempt} is {status}; a person decides: retry or stop"
                    ),
                })
            }
        }
    }

    /// Ends an attempt in the store, then records it as an event.
    pub(crate) fn finish(
        &self,
        context: &RunContext,
        step: &str,
        attempt: u32,
        status: AttemptStatus,
        finished: Finished,
    ) -> Result<(), Error> {
        let finish = AttemptFinish {
            status,
            finished_at: self.clock.now(),
            interpreter_version: finished.interpreter_version.clone(),
            backend: finished.backend.clone(),
            isolation_notes: finished.isolation_notes.clone(),
            output: finished.output.clone(),
            reason: finished.reason.clone(),
        };
        let text = |value: &Option<Redacted<String>>| value.as_ref().map(|text| text.get().clone());
        let event = self.new_event(
            context,
            Event::AttemptFinished(AttemptFinished {
                step: step.to_owned(),
                attempt,
                status,
                output: finished.output.as_ref().map(|output| output.get().clone()),
                error: finished.error,
                reason: text(&finished.reason),
                interpreter_version: text(&finished.interpreter_version),
                backend: text(&finished.backend),
                isolation_notes: text(&finished.isolation_notes),
            }),
        )?;
        self.store
            .finish_attempt(&context.run.id, step, attempt, &finish, &event)?;
        Ok(())
    }

    /// What a step printed: scrubbed first, then bounded (G17).
    fn record_printed(
        &self,
        context: &RunContext,
        step: &str,
        attempt: u32,
        stream: PrintedStream,
        bytes: &[u8],
    ) -> Result<(), Error> {
        if bytes.is_empty() {
            return Ok(());
        }
        // The executor may have cut the stream at its own cap, at any byte, before the engine
        // saw it: the bytes are scrubbed as they are, a value cut there is masked by its
        // beginning, and only then is the text decoded and bounded.
        let kept = context
            .redactor
            .scrub_printed(bytes, self.options.max_printed_bytes);
        self.event(
            context,
            Event::StepPrinted(StepPrinted {
                step: step.to_owned(),
                attempt,
                stream,
                text: kept.get().clone(),
                printed_bytes: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            }),
        )?;
        Ok(())
    }
}

/// A failure's scrubbed text.
struct Failure {
    error_kind: Redacted<String>,
    message: Redacted<String>,
    traceback: Redacted<String>,
}

/// What is recorded when an attempt ends.
pub(crate) struct Finished {
    pub(crate) interpreter_version: Option<Redacted<String>>,
    pub(crate) backend: Option<Redacted<String>>,
    pub(crate) isolation_notes: Option<Redacted<String>>,
    pub(crate) output: Option<Redacted<Value>>,
    pub(crate) reason: Option<Redacted<String>>,
    pub(crate) error: Option<StepFailure>,
}

impl Finished {
    /// Only a reason (a refusal, a recovery).
    pub(crate) fn reason(redactor: &Redactor, reason: &str) -> Finished {
        Finished {
            interpreter_version: None,
            backend: None,
            isolation_notes: None,
            output: None,
            reason: Some(redactor.scrub(reason)),
            error: None,
        }
    }

    fn observed(redactor: &Redactor, report: &ExecutionReport) -> Finished {
        let notes = report.isolation_notes.join("; ");
        Finished {
            interpreter_version: report
                .interpreter_version
                .as_deref()
                .map(|version| redactor.scrub(version)),
            backend: Some(redactor.scrub(&report.backend)),
            isolation_notes: (!notes.is_empty()).then(|| redactor.scrub(&notes)),
            output: None,
            reason: None,
            error: None,
        }
    }
}

/// The supervisor's decision on an attempt, as an event.
fn supervisor_decided(step: &str, attempt: u32, decision: SupervisorChoice) -> Event {
    Event::SupervisorDecision(SupervisorDecided {
        step: step.to_owned(),
        attempt,
        decision,
    })
}
