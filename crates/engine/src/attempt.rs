//! One attempt of one step, in the failure policy's own words (G14, G15):
//!
//! 1. **Before the code starts** ([`Engine::before_code`]): the step's inputs, environment and
//!    workspace are checked, and the attempt is recorded as running, with its network mode,
//!    durably, before the executor is called. A refusal here ends the attempt `refused`;
//!    nothing of the step ran.
//! 2. **After it started** ([`Engine::after_started`]): what the executor observed once it
//!    was called is recorded whatever the outcome: what the step printed (scrubbed, then
//!    bounded, G17) and the files it wrote back (G12, G25).
//! 3. **The outcome** ([`Engine::outcome`]): the attempt's status, from what the executor
//!    observed from outside the sandbox ([`outcome_status`]: a networked step that failed
//!    after its code started is `unknown`), then the supervisor, held to what the status
//!    allows ([`retry_permission`]: `unknown` means stop).

use std::collections::BTreeMap;

use redact::{Redacted, Redactor, SecretValue};
use serde_json::Value;
use spec::Step;
use storage::{AttemptFinish, AttemptStatus, NetworkMode, NewAttempt, RunStatus};
use workspace::Workspace;

use crate::Error;
use crate::context::{RunContext, step_env};
use crate::engine::Engine;
use crate::executor::{CodePhase, ExecutionOutcome, ExecutionReport, ExecutionRequest};
use crate::inputs::{
    check_supervisor_retry_inputs, declaration, step_inputs, without_forbidden_values,
};
use crate::journal::{
    AttemptFinished, AttemptStarted, Event, PrintedStream, StepFailure, StepPrinted, SupervisorBy,
    SupervisorChoice, SupervisorDecided, SupervisorRetryRefused,
};
use crate::supervisor::{
    FailureView, MAX_SUPERVISOR_RETRIES, RetryPermission, Supervised, SupervisorDecision,
    SupervisorIdentity, UNKNOWN_MEANS_STOP,
};

/// How one attempt ended, for the step loop.
pub(crate) enum StepEnd {
    Succeeded(Value),
    Halt {
        status: RunStatus,
        reason: String,
    },
    RetryWith(Value),
    /// The supervisor retries a gated step: the run parks again for a person's decision on
    /// these inputs (G15, G23).
    ParkForRetry(Value),
}

/// An attempt recorded as running: what its code is started with.
pub(crate) struct Started<'a> {
    attempt: u32,
    network: NetworkMode,
    /// The inputs as the step gets them.
    inputs: Value,
    /// The inputs as the record and the supervisor see them.
    scrubbed_inputs: Redacted<Value>,
    env: Vec<(String, &'a SecretValue)>,
    workspace: Workspace,
    /// What the step may see, a snapshot of `workspace` staged by the executor.
    files: workspace::StepFiles,
}

/// What came of the checks before the code starts.
enum BeforeCode<'a> {
    /// Recorded as running; the executor may be called.
    Ready(Started<'a>),
    /// Recorded and ended as refused; nothing of the step ran.
    Refused(StepEnd),
}

/// A failed attempt handed to the supervisor.
struct Failed {
    status: AttemptStatus,
    failure: Failure,
    /// What it printed, scrubbed and bounded.
    printed: Redacted<String>,
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

/// The engine's side of [`crate::StepJournal`] for one attempt: each event scrubbed with the
/// run's redactor and appended before `record` returns.
struct AttemptJournal<'a> {
    engine: &'a Engine,
    context: &'a RunContext,
    step: &'a str,
    attempt: u32,
}

impl crate::executor::StepJournal for AttemptJournal<'_> {
    fn record(
        &self,
        event: crate::executor::AgentEvent,
    ) -> Result<(), crate::executor::NotJournalled> {
        use crate::executor::AgentEvent;
        // The executor names its step and attempt; the engine's own stand, whatever it said.
        let event = match event {
            AgentEvent::Turn(mut turn) => {
                (turn.step, turn.attempt) = (self.step.to_owned(), self.attempt);
                Event::AgentTurn(turn)
            }
            AgentEvent::ToolCalled(mut called) => {
                (called.step, called.attempt) = (self.step.to_owned(), self.attempt);
                Event::ToolCalled(called)
            }
            AgentEvent::ToolFinished(mut finished) => {
                (finished.step, finished.attempt) = (self.step.to_owned(), self.attempt);
                Event::ToolFinished(finished)
            }
            AgentEvent::ToolRefused(mut refused) => {
                (refused.step, refused.attempt) = (self.step.to_owned(), self.attempt);
                Event::ToolRefused(refused)
            }
            AgentEvent::Limit(mut limit) => {
                (limit.step, limit.attempt) = (self.step.to_owned(), self.attempt);
                Event::AgentLimit(limit)
            }
        };
        self.engine
            .event(self.context, event)
            .map(|_| ())
            .map_err(|error| crate::executor::NotJournalled::Store(Box::new(error)))
    }
}

/// The status of an attempt from what the executor observed (G14): the engine never takes a
/// status the step's code could have written. A networked step that failed after its code
/// started may have had effects outside, so its outcome is `unknown`, whatever the code
/// reported; before its code started, nothing it does can have happened.
pub(crate) fn outcome_status(network: NetworkMode, outcome: &ExecutionOutcome) -> AttemptStatus {
    match outcome {
        ExecutionOutcome::Succeeded { .. } => AttemptStatus::Succeeded,
        ExecutionOutcome::NeedsRepair { .. } => AttemptStatus::NeedsRepair,
        ExecutionOutcome::Refused { .. } => AttemptStatus::Refused,
        ExecutionOutcome::Unknown { .. } => AttemptStatus::Unknown,
        ExecutionOutcome::Failed { phase, .. } => match (network, phase) {
            (NetworkMode::PublicEgress, CodePhase::CodeStarted) => AttemptStatus::Unknown,
            (NetworkMode::PublicEgress, CodePhase::BeforeCode)
            | (NetworkMode::None, CodePhase::CodeStarted | CodePhase::BeforeCode) => {
                AttemptStatus::Failed
            }
        },
    }
}

/// Whether the supervisor may retry a failed attempt (G15): never an `unknown` one (unknown
/// means stop), and not once the step has used up its supervisor retries.
pub(crate) fn retry_permission(
    status: AttemptStatus,
    supervisor_retries: u32,
    max_supervisor_retries: u32,
) -> RetryPermission {
    if status == AttemptStatus::Unknown || supervisor_retries >= max_supervisor_retries {
        RetryPermission::Forbidden
    } else {
        RetryPermission::Allowed
    }
}

impl Engine {
    /// One attempt: before the code starts, after it started, the outcome (see the module
    /// docs).
    pub(crate) fn run_attempt(
        &self,
        context: &RunContext,
        step: &Step,
        outputs: &BTreeMap<String, Value>,
        overrides: Option<&Value>,
        claim: &dyn crate::jobs::JobClaim,
    ) -> Result<StepEnd, Error> {
        let mut started = match self.before_code(context, step, outputs, overrides)? {
            BeforeCode::Ready(started) => started,
            BeforeCode::Refused(end) => return Ok(end),
        };
        let journal = AttemptJournal {
            engine: self,
            context,
            step: step.id(),
            attempt: started.attempt,
        };
        let view = std::sync::Arc::new(crate::live::LiveView::new(self.options.max_printed_bytes));
        let live: std::sync::Arc<dyn crate::executor::LivePrinted> = view.clone();
        let request = ExecutionRequest {
            account: &context.run.account,
            run_id: &context.run.id,
            step,
            python: context.workflow.python(),
            // Handed over: from here on the record and the supervisor see the scrubbed ones.
            inputs: std::mem::take(&mut started.inputs),
            env: std::mem::take(&mut started.env),
            attempt: started.attempt,
            files: &started.files,
            redactor: &context.redactor,
            journal: &journal,
            definitions: &context.pinned,
            live: Some(live),
        };
        let report = self.with_live_view(context, step.id(), started.attempt, &view, || {
            self.executor.execute(request)
        });
        self.after_started(context, step, &started, &report, claim)?;
        self.outcome(context, step, &started, report)
    }

    /// Before the code starts: builds the step's inputs, environment and workspace, records
    /// the attempt as running with its network mode (synced before the executor is called,
    /// G14), and ends it as refused when any of them cannot be had.
    fn before_code<'a>(
        &self,
        context: &'a RunContext,
        step: &Step,
        outputs: &BTreeMap<String, Value>,
        overrides: Option<&Value>,
    ) -> Result<BeforeCode<'a>, Error> {
        let attempt = self.next_attempt_number(&context.run.id, step.id())?;
        let mut refusal = None;
        let mut holds_forbidden_keys = false;
        let inputs = match step_inputs(step, &context.run.inputs, outputs, overrides) {
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
            .for_account(&context.run.account)
            .map_err(|error| {
                format!(
                    "the account's workspace cannot be opened: {}",
                    self.without_host_paths(&crate::with_causes(&error))
                )
            });
        // An agent step's network is its agent file's (the executor reads it); an agent that
        // cannot be read refuses the attempt, recorded with the step's own network.
        let network = match &workspace {
            Err(_) => step.network(),
            Ok(workspace) => match self.executor.network_of(crate::executor::NetworkQuery {
                account: &context.run.account,
                step,
                files: &workspace.step_files(),
                definitions: &context.pinned,
            }) {
                Ok(network) => network,
                Err(reason) => {
                    refusal.get_or_insert(reason.to_string());
                    step.network()
                }
            },
        };
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
        match (refusal, workspace) {
            (None, Ok(workspace)) => Ok(BeforeCode::Ready(Started {
                attempt,
                network,
                inputs,
                scrubbed_inputs,
                env,
                files: workspace.step_files(),
                workspace,
            })),
            (Some(reason), _) | (None, Err(reason)) => {
                self.finish(
                    context,
                    step.id(),
                    attempt,
                    AttemptStatus::Refused,
                    Finished::reason(&context.redactor, &reason),
                )?;
                Ok(BeforeCode::Refused(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason,
                }))
            }
        }
    }

    /// After the attempt started: what the executor observed is recorded, whatever the
    /// outcome: the printed streams and the copy-back.
    fn after_started(
        &self,
        context: &RunContext,
        step: &Step,
        started: &Started<'_>,
        report: &ExecutionReport,
        claim: &dyn crate::jobs::JobClaim,
    ) -> Result<(), Error> {
        let attempt = started.attempt;
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
        // An archive the screen cannot open is refused from a step that held credentials.
        let unreadable = if step.connections().is_empty() {
            workspace::UnreadableArchives::Accept
        } else {
            workspace::UnreadableArchives::Refuse
        };
        let fence = crate::copyback::AttemptFence {
            engine: self,
            run: &context.run.id,
            step: step.id(),
            attempt,
            claim,
        };
        self.record_copy_back(context, report, &started.workspace, unreadable, &fence)
    }

    /// The outcome: the attempt ends with the status the executor's observation gives
    /// ([`outcome_status`]), and a failure goes to the supervisor.
    fn outcome(
        &self,
        context: &RunContext,
        step: &Step,
        started: &Started<'_>,
        report: ExecutionReport,
    ) -> Result<StepEnd, Error> {
        let attempt = started.attempt;
        let status = outcome_status(started.network, &report.outcome);
        let mut finished = Finished::observed(&context.redactor, &report);
        let redactor = &context.redactor;
        let failure = match report.outcome {
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
                self.finish(context, step.id(), attempt, status, finished)?;
                return Ok(StepEnd::Succeeded(output.into_inner()));
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
                self.finish(context, step.id(), attempt, status, finished)?;
                return Ok(StepEnd::Halt {
                    status: RunStatus::NeedsRepair,
                    reason: redactor.scrub(&reason).into_inner(),
                });
            }
            ExecutionOutcome::Refused { reason } => {
                let reason = redactor.scrub(&reason);
                finished.reason = Some(reason.clone());
                self.finish(context, step.id(), attempt, status, finished)?;
                return Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason: reason.into_inner(),
                });
            }
            ExecutionOutcome::Unknown { reason } => {
                let reason = redactor.scrub(&reason);
                finished.reason = Some(reason.clone());
                Failure {
                    error_kind: redactor.scrub("unknown"),
                    message: reason,
                    traceback: redactor.scrub(""),
                }
            }
            ExecutionOutcome::Failed { error, phase } => {
                let bound = self.options.max_error_bytes;
                let failure = Failure {
                    error_kind: redactor.scrub_truncated(&error.kind, bound),
                    message: redactor.scrub_truncated(&error.message, bound),
                    traceback: redactor.scrub_truncated(&error.traceback, bound),
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
                failure
            }
        };
        self.finish(context, step.id(), attempt, status, finished)?;
        let printed = self.printed_for_supervisor(context, &report.stdout, &report.stderr);
        self.consult(
            context,
            step,
            started,
            Failed {
                status,
                failure,
                printed,
            },
        )
    }

    /// What the attempt printed, as the supervisor sees it: each stream scrubbed, then
    /// bounded (G17), stdout then stderr.
    fn printed_for_supervisor(
        &self,
        context: &RunContext,
        stdout: &[u8],
        stderr: &[u8],
    ) -> Redacted<String> {
        let bound = self.options.max_printed_bytes;
        let mut text = String::new();
        for (name, bytes) in [("stdout", stdout), ("stderr", stderr)] {
            if bytes.is_empty() {
                continue;
            }
            let kept = context.redactor.scrub_printed(bytes, bound);
            text.push_str(&format!("--- {name} ---\n{}\n", kept.get()));
        }
        // Already scrubbed piece by piece; scrubbed again as one text for the type.
        context.redactor.scrub(&text)
    }

    /// Supervisor retries of `step` this run has had: its recorded retry decisions, so the
    /// budget holds across parks, restarts and a person's retries (G15).
    fn supervisor_retries_used(&self, context: &RunContext, step: &str) -> Result<u32, Error> {
        let used = crate::journal::read_all(&self.store.events(&context.run.id)?)?
            .into_iter()
            .filter(|entry| {
                matches!(&entry.event, Event::SupervisorDecision(decided)
                    if decided.step == step
                        && matches!(decided.decision, SupervisorChoice::Retry { .. }))
            })
            .count();
        Ok(u32::try_from(used).unwrap_or(u32::MAX))
    }

    /// The account's supervisor retries per step per run: its setting, or the engine's
    /// default, never more than [`MAX_SUPERVISOR_RETRIES`].
    fn supervisor_retry_budget(&self, context: &RunContext) -> Result<u32, Error> {
        let set = self.store.supervisor_retries(&context.run.account)?;
        Ok(set
            .unwrap_or(self.options.max_supervisor_retries)
            .min(MAX_SUPERVISOR_RETRIES))
    }

    /// Hands a failure to the supervisor and enforces what it may do (G15).
    fn consult(
        &self,
        context: &RunContext,
        step: &Step,
        started: &Started<'_>,
        failed: Failed,
    ) -> Result<StepEnd, Error> {
        let Failed {
            status,
            failure,
            printed,
        } = failed;
        let attempt = started.attempt;
        let used = self.supervisor_retries_used(context, step.id())?;
        let budget = self.supervisor_retry_budget(context)?;
        let retry = retry_permission(status, used, budget);
        let redactor = &context.redactor;
        let view = FailureView {
            account: context.run.account.clone(),
            run_id: context.run.id.clone(),
            workflow: context.workflow.name().to_owned(),
            step_id: step.id().to_owned(),
            attempt,
            network: started.network,
            status,
            error_kind: failure.error_kind,
            message: failure.message,
            traceback: failure.traceback,
            printed,
            inputs: started.scrubbed_inputs.clone(),
            declaration: redactor.scrub_json(&declaration(&context.workflow, step)),
            retry,
            retries_left: budget.saturating_sub(used),
            policy: UNKNOWN_MEANS_STOP,
        };
        let supervised = match context.workflow.supervisor() {
            spec::Supervision::None => Supervised {
                decision: SupervisorDecision::AskPerson,
                note: String::new(),
                by: SupervisorIdentity::NoModel {
                    why: "the workflow says `supervisor: none`, so a person decides".to_owned(),
                },
            },
            spec::Supervision::Assistant => self.supervisor.on_failure(&view),
        };
        let step_id = step.id();
        let note = redactor.scrub(supervised.note.trim()).into_inner();
        let by = match supervised.by {
            SupervisorIdentity::Model { provider, model } => SupervisorBy::Model {
                provider: redactor.scrub(&provider).into_inner(),
                model: redactor.scrub(&model).into_inner(),
            },
            SupervisorIdentity::NoModel { why } => SupervisorBy::NoModel {
                why: redactor.scrub(&why).into_inner(),
            },
        };
        let decided = |decision: SupervisorChoice, changed: Vec<String>| {
            Event::SupervisorDecision(SupervisorDecided {
                step: step_id.to_owned(),
                attempt,
                decision,
                note: (!note.is_empty()).then(|| note.clone()),
                by: Some(by.clone()),
                changed,
            })
        };
        match supervised.decision {
            SupervisorDecision::Retry { inputs } => {
                let mut problems = Vec::new();
                if status == AttemptStatus::Unknown {
                    problems.push(format!(
                        "step `{step_id}` attempt {attempt} is unknown; the supervisor may not \
                         retry it, only a person can"
                    ));
                } else if retry == RetryPermission::Forbidden {
                    problems.push(format!(
                        "step `{step_id}` used up its {budget} supervisor retries"
                    ));
                } else {
                    problems = check_supervisor_retry_inputs(&context.workflow, step, &inputs);
                }
                if !problems.is_empty() {
                    let reason = format!(
                        "the supervisor's retry of step `{step_id}` is refused: {}; a person \
                         decides: retry or stop",
                        problems.join("; ")
                    );
                    self.event(
                        context,
                        Event::SupervisorRetryRefused(SupervisorRetryRefused {
                            step: step_id.to_owned(),
                            attempt,
                            reason: redactor.scrub(&reason).into_inner(),
                        }),
                    )?;
                    return Ok(StepEnd::Halt {
                        status: RunStatus::NeedsAttention,
                        reason: redactor.scrub(&reason).into_inner(),
                    });
                }
                // Accepted inputs hold no forbidden key (checked above); scrubbed for the
                // record like every value.
                let recorded = redactor.scrub_json(&inputs).into_inner();
                let changed = changed_inputs(step, started.scrubbed_inputs.get(), &recorded);
                // The data flow is the author's: a change to an input the author wrote or to
                // an earlier step's output is the assistant's proposal, for a person (newcomer
                // 3, friction 4). Only inputs from the workflow's inputs are its to change.
                let held: Vec<String> = changed
                    .iter()
                    .filter_map(|name| authors_input(step, name))
                    .collect();
                if !held.is_empty() {
                    let reason = proposal_reason(step_id, attempt, &held, &recorded, &by, &note);
                    let reason = redactor.scrub(&reason).into_inner();
                    self.event(
                        context,
                        Event::SupervisorRetryRefused(SupervisorRetryRefused {
                            step: step_id.to_owned(),
                            attempt,
                            reason: reason.clone(),
                        }),
                    )?;
                    return Ok(StepEnd::Halt {
                        status: RunStatus::NeedsAttention,
                        reason,
                    });
                }
                self.event(
                    context,
                    decided(SupervisorChoice::Retry { inputs: recorded }, changed),
                )?;
                if step.is_gate() {
                    Ok(StepEnd::ParkForRetry(inputs))
                } else {
                    Ok(StepEnd::RetryWith(inputs))
                }
            }
            SupervisorDecision::Stop { reason } => {
                let reason = redactor.scrub(&reason).into_inner();
                self.event(
                    context,
                    decided(
                        SupervisorChoice::Stop {
                            reason: reason.clone(),
                        },
                        Vec::new(),
                    ),
                )?;
                Ok(StepEnd::Halt {
                    status: RunStatus::Stopped,
                    reason: format!("stopped by the supervisor: {reason}"),
                })
            }
            SupervisorDecision::AskPerson => {
                self.event(context, decided(SupervisorChoice::AskPerson, Vec::new()))?;
                let why = match &by {
                    SupervisorBy::NoModel { why } => format!(" ({why})"),
                    SupervisorBy::Model { .. } => String::new(),
                };
                Ok(StepEnd::Halt {
                    status: RunStatus::NeedsAttention,
                    reason: format!(
                        "step `{step_id}` attempt {attempt} is {status}; a person decides: retry \
                         or stop{why}"
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

/// The names of the step's inputs whose value a retry changed, in the step's order.
/// `name` in words when it is an input the supervisor may not change on its own: one the
/// author wrote, or an earlier step's output. `None` for a workflow input.
fn authors_input(step: &Step, name: &str) -> Option<String> {
    let (_, source) = step.inputs().iter().find(|(input, _)| input == name)?;
    match source {
        spec::InputSource::WorkflowInput(_) => None,
        spec::InputSource::Literal(_) => Some(format!("`{name}` (written in the workflow)")),
        spec::InputSource::StepOutput(from) => {
            Some(format!("`{name}` (the output of step `{from}`)"))
        }
    }
}

/// The most characters of a proposed value a reason quotes.
const MAX_PROPOSED_VALUE_CHARS: usize = 300;

/// Why the run waits for a person after a supervisor's retry that changes what only a person
/// may: the inputs, the proposed values (cut), who proposed it and its note, and how to take it.
fn proposal_reason(
    step_id: &str,
    attempt: u32,
    held: &[String],
    proposed: &Value,
    by: &SupervisorBy,
    note: &str,
) -> String {
    let who = match by {
        SupervisorBy::Model { provider, model } => {
            format!("the assistant ({provider}, model {model})")
        }
        SupervisorBy::NoModel { .. } => "the supervisor".to_owned(),
    };
    let values = proposed
        .as_object()
        .map(|inputs| {
            inputs
                .iter()
                .map(|(name, value)| {
                    let mut shown = value.to_string();
                    if shown.chars().count() > MAX_PROPOSED_VALUE_CHARS {
                        shown = shown.chars().take(MAX_PROPOSED_VALUE_CHARS).collect();
                        shown.push('…');
                    }
                    format!("{name}={shown}")
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let note = if note.is_empty() {
        String::new()
    } else {
        format!(" (its note: {note})")
    };
    format!(
        "{who} proposes to retry step `{step_id}` (attempt {attempt} failed) with {values}{note}; \
         it changes {}, which only a person may change, so nothing ran: a person retries the \
         step with these inputs (`runs retry` with --input NAME=VALUE) or its own, or stops the run",
        held.join(", ")
    )
}

fn changed_inputs(step: &Step, before: &Value, after: &Value) -> Vec<String> {
    step.inputs()
        .iter()
        .map(|(name, _)| name)
        .filter(|name| before.get(name.as_str()) != after.get(name.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use storage::{AttemptStatus, NetworkMode};

    use crate::attempt::{outcome_status, retry_permission};
    use crate::executor::{CodePhase, ExecutionOutcome, StepError, StepOutput};
    use crate::supervisor::RetryPermission;

    fn failed(phase: CodePhase) -> ExecutionOutcome {
        ExecutionOutcome::Failed {
            error: StepError {
                kind: "RuntimeError".into(),
                message: "broke".into(),
                traceback: String::new(),
            },
            phase,
        }
    }

    /// G14, the outcome: every observation of the executor, with and without network, gives
    /// the status the failure policy names.
    #[test]
    fn g14_the_outcome_is_unknown_for_a_networked_failure_after_the_code_started() {
        use AttemptStatus::{Failed, NeedsRepair, Refused, Succeeded, Unknown};
        use NetworkMode::{None as Offline, PublicEgress as Networked};
        let succeeded = ExecutionOutcome::Succeeded {
            output: StepOutput::from_value(&serde_json::json!(1)),
        };
        let repair = ExecutionOutcome::NeedsRepair {
            module: "numpy".into(),
            detail: String::new(),
        };
        let refused = ExecutionOutcome::Refused {
            reason: "no backend".into(),
        };
        let unknown = ExecutionOutcome::Unknown {
            reason: "timed out".into(),
        };
        let table = [
            (Networked, failed(CodePhase::CodeStarted), Unknown),
            (Networked, failed(CodePhase::BeforeCode), Failed),
            (Offline, failed(CodePhase::CodeStarted), Failed),
            (Offline, failed(CodePhase::BeforeCode), Failed),
            (Networked, unknown.clone(), Unknown),
            (Offline, unknown, Unknown),
            (Networked, succeeded.clone(), Succeeded),
            (Offline, succeeded, Succeeded),
            (Networked, repair.clone(), NeedsRepair),
            (Offline, repair, NeedsRepair),
            (Networked, refused.clone(), Refused),
            (Offline, refused, Refused),
        ];
        for (network, outcome, expected) in table {
            assert_eq!(
                outcome_status(network, &outcome),
                expected,
                "{network} {outcome:?}"
            );
        }
    }

    /// G15, the outcome: the supervisor may retry a failed attempt within its budget, never an
    /// unknown one.
    #[test]
    fn g15_unknown_means_stop_and_the_supervisor_budget_is_bounded() {
        assert_eq!(
            retry_permission(AttemptStatus::Failed, 0, 3),
            RetryPermission::Allowed
        );
        assert_eq!(
            retry_permission(AttemptStatus::Failed, 2, 3),
            RetryPermission::Allowed
        );
        assert_eq!(
            retry_permission(AttemptStatus::Failed, 3, 3),
            RetryPermission::Forbidden
        );
        assert_eq!(
            retry_permission(AttemptStatus::Unknown, 0, 3),
            RetryPermission::Forbidden
        );
    }
}
