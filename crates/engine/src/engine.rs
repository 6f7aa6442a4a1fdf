//! The engine and its public operations: start a run, decide a gate, retry or stop a run that
//! needs a person, and read a run's summary and state.

use std::sync::Arc;

use redact::{ScrubSets, SecretRequest, SecretSource};
use serde_json::{Value, json};
use spec::Workflow;
use storage::{
    AccountId, Actor, AttemptStatus, DecisionKind, Door, GateRef, NewAuditEntry, NewDecision,
    NewRun, RunId, RunStatus, Sha256Hex, StepId, Store,
};

use crate::context::{
    RunContext, SecretsFor, secret_request, step_env, stored_event, unavailable_event,
};
use crate::drive::Resume;
use crate::executor::{NetworkQuery, StepExecutor};
use crate::inputs::check_run_inputs;
use crate::journal::{
    self, Entry, Event, EventKind, PersonDecided, PinnedModel, RunCreated, RunStatusChanged,
    SecretsResolved,
};
use crate::record::{AttemptState, RunState};
use crate::supervisor::Supervisor;
use crate::{Clock, EngineOptions, Error, IdSource};

/// Runs workflows. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Engine {
    pub(crate) options: EngineOptions,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) executor: Arc<dyn StepExecutor>,
    pub(crate) secrets: Arc<dyn SecretSource>,
    /// Every account's live scrub set: each run's redactor scrubs with its account's whole
    /// set (G16), rebuilt when the vault's generation moves.
    pub(crate) scrub_sets: ScrubSets,
    pub(crate) supervisor: Arc<dyn Supervisor>,
    /// Who proposes repairs and checks them (G9); nobody until the binary installs one.
    pub(crate) repairs: Arc<dyn crate::repair::RepairAssistant>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    /// Runs a person's retry, stop or repair is being carried out on. These decisions check
    /// the run's status and then drive it, so two at once on one run (a double submit, two
    /// people) could both pass the check and run a networked step twice (G14); a second one
    /// waits for nothing and is refused while the first holds the run.
    pub(crate) attended: Arc<std::sync::Mutex<std::collections::BTreeSet<RunId>>>,
    /// For a command that follows runs another process's worker runs ([`crate::Driving::
    /// Follow`]): whether that worker is still there.
    pub(crate) worker_alive: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

/// Holds a run for one person's decision; dropping it lets the run go.
pub(crate) struct Attending {
    attended: Arc<std::sync::Mutex<std::collections::BTreeSet<RunId>>>,
    run: RunId,
}

impl Drop for Attending {
    fn drop(&mut self) {
        self.attended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.run);
    }
}

/// A gate's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateDecision {
    Approve,
    Reject,
}

/// A person's decision on a gate (G23): who, through which door, with what note.
#[derive(Debug, Clone)]
pub struct Decision {
    pub kind: GateDecision,
    pub who: Actor,
    pub door: Door,
    pub note: String,
}

/// Who decides a retry or a stop, through which door, and why.
#[derive(Debug, Clone)]
pub struct PersonDecision {
    pub who: Actor,
    pub door: Door,
    pub note: String,
}

/// One step's latest attempt, for people.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    pub step_id: String,
    pub attempt: u32,
    pub status: AttemptStatus,
    pub output: Option<Value>,
    pub reason: Option<String>,
}

/// What a person's decision is on.
enum DecidedOn<'a> {
    /// A gate's pending attempt, or the failed attempt of a step.
    Attempt { step: &'a str, attempt: u32 },
    /// The whole run (a stop).
    Run,
}

/// Where a run stands after an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub run: RunId,
    pub status: RunStatus,
    /// The latest attempt of each step that has one, in workflow order.
    pub steps: Vec<StepSummary>,
    /// The gate the run waits at.
    pub waiting_at: Option<String>,
    /// Why the run is not going on by itself (the last `run.status` reason), if any.
    pub reason: Option<String>,
}

impl Engine {
    /// An engine over `store`; its runs' values come from the source behind `scrub_sets` (the
    /// vault), and every writer scrubs with the live sets it shares with the rest of the
    /// process (the server's answers, the logs).
    pub fn new(
        options: EngineOptions,
        store: Arc<dyn Store>,
        executor: Arc<dyn StepExecutor>,
        scrub_sets: ScrubSets,
        supervisor: Arc<dyn Supervisor>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
    ) -> Engine {
        Engine {
            options,
            store,
            executor,
            secrets: Arc::clone(scrub_sets.source()),
            scrub_sets,
            supervisor,
            repairs: Arc::new(crate::repair::NoRepairAssistant),
            clock,
            ids,
            attended: Arc::default(),
            worker_alive: None,
        }
    }

    /// This engine, following runs while `alive` says the process whose worker runs them is
    /// still there ([`crate::Driving::Follow`]); once it is not, a follower stops with
    /// [`Error::NoWorker`].
    pub fn with_worker_check(mut self, alive: Arc<dyn Fn() -> bool + Send + Sync>) -> Engine {
        self.worker_alive = Some(alive);
        self
    }

    /// Holds `run` for a person's retry, stop or repair, or refuses when another one holds it.
    pub(crate) fn attend(&self, run: &RunId) -> Result<Attending, Error> {
        let newly = self
            .attended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(run.clone());
        if !newly {
            return Err(Error::DecisionInProgress { run: run.clone() });
        }
        Ok(Attending {
            attended: Arc::clone(&self.attended),
            run: run.clone(),
        })
    }

    /// This engine with `repairs` proposing and checking repairs (G9).
    pub fn with_repairs(mut self, repairs: Arc<dyn crate::repair::RepairAssistant>) -> Engine {
        self.repairs = repairs;
        self
    }

    /// The live scrub sets every writer of this engine scrubs with.
    pub fn scrub_sets(&self) -> &ScrubSets {
        &self.scrub_sets
    }

    /// The maxima declared `limits` are held to (the server's and CLI's parses use them too).
    pub fn limit_maxima(&self) -> &spec::LimitMaxima {
        &self.options.limit_maxima
    }

    /// Every account's workspace, as this engine's steps see them: a person's or key's write
    /// through the server goes to the same folders and histories.
    pub fn workspaces(&self) -> &workspace::Workspaces {
        &self.options.workspaces
    }

    /// Starts a run and drives it to its end, a gate, or a point where a person must decide.
    ///
    /// Refused (no run created): a workflow that no longer validates or differs from its text
    /// (G1), inputs with a credential key (G4) or not matching the declarations, a step this
    /// server cannot run (its executor's `availability`). A run that is
    /// created but fails before any step: a connection missing, or two connection fields of a
    /// step sharing one variable name.
    pub fn start_run(
        &self,
        account: &AccountId,
        workflow: &Workflow,
        inputs: Value,
        who: Actor,
    ) -> Result<RunSummary, Error> {
        self.revalidate(workflow)?;
        self.refuse_definition_holding_values(account, workflow)?;
        let forbidden = spec::forbidden_keys_in(&inputs);
        if !forbidden.is_empty() {
            return Err(Error::ForbiddenInputKeys { paths: forbidden });
        }
        let problems = check_run_inputs(workflow, &inputs);
        if !problems.is_empty() {
            return Err(Error::InputMismatch { problems });
        }
        // Pinned before the run exists: what it can reach is fixed at this moment (issue 16 §1).
        let (mut pinned, mut pin) = self.pin_definitions(account, workflow)?;
        // Asked of the pinned definitions: an agent step needs what its pinned agent files
        // (and their colleagues') say.
        let files = pinned.step_files().ok_or_else(|| Error::Pin {
            detail: String::from("the account's workspace was not opened"),
        })?;
        let unavailable: Vec<(String, String)> = workflow
            .steps()
            .iter()
            .filter_map(|step| {
                let query = NetworkQuery {
                    account,
                    step,
                    files: &files,
                    definitions: &pinned,
                };
                let problem = self.executor.availability(query, workflow.python()).err()?;
                Some((step.id().to_owned(), problem.to_string()))
            })
            .collect();
        let unavailable = one_sentence_per_cause(unavailable);
        if !unavailable.is_empty() {
            return Err(Error::CannotRunHere {
                workflow: workflow.name().to_owned(),
                problems: unavailable,
            });
        }
        // The models its agents talk to, as the account configures them now: pinned too.
        let mut models: Vec<PinnedModel> = Vec::new();
        let mut problems = Vec::new();
        for step in workflow.steps() {
            let query = NetworkQuery {
                account,
                step,
                files: &files,
                definitions: &pinned,
            };
            match self.executor.models_of(query) {
                Ok(found) => {
                    for model in found {
                        if !models.iter().any(|known| known.agent == model.agent) {
                            models.push(model);
                        }
                    }
                }
                Err(problem) => problems.push(problem.to_string()),
            }
        }
        if !problems.is_empty() {
            return Err(Error::CannotRunHere {
                workflow: workflow.name().to_owned(),
                problems,
            });
        }
        pin.models = models.clone();
        pinned.set_models(models);
        let run_id = self.ids.new_run_id();
        let request = secret_request(workflow);
        let (secrets, unavailable) =
            self.collect_secrets(&run_id, account, &request, SecretsFor::NewRun)?;
        let redactor = secrets.redactor();
        let now = self.clock.now();
        let hash = Sha256Hex::of(workflow.source().as_bytes());
        let created = stored_event(
            &redactor,
            &Event::RunCreated(RunCreated {
                status: RunStatus::Running,
                workflow: workflow.name().to_owned(),
                file: workflow.file_name().to_owned(),
                hash: hash.as_str().to_owned(),
                inputs: inputs.clone(),
                started_by: who.clone(),
            }),
            now,
        )?;
        // Audited first: an entry that cannot be written starts no run (audit or nothing).
        self.store.append_audit(&NewAuditEntry {
            account: account.clone(),
            run: Some(run_id.clone()),
            actor: redactor.scrub_fields(who.clone()),
            action: storage::AuditAction::RunStart,
            detail: redactor
                .scrub_json(&json!({"workflow": workflow.name(), "hash": hash.as_str()})),
            at: now,
        })?;
        self.store.create_run(
            &NewRun {
                id: run_id.clone(),
                account: account.clone(),
                status: RunStatus::Running,
                workflow_name: redactor.scrub(workflow.name()),
                workflow_file_name: redactor.scrub(workflow.file_name()),
                workflow_source: redactor.scrub(workflow.source()),
                workflow_hash: hash.clone(),
                inputs: redactor.scrub_json(&inputs),
                started_by: redactor.scrub_fields(who.clone()),
                created_at: now,
            },
            &created,
        )?;
        let record = self.store.run(&run_id)?.ok_or_else(|| Error::UnknownRun {
            run: run_id.clone(),
        })?;
        let mut context = RunContext {
            run: record,
            workflow: workflow.clone(),
            secrets,
            redactor,
            unavailable,
            pinned,
        };
        self.event(&context, Event::DefinitionsPinned(pin))?;
        let names: Vec<String> = context
            .secrets
            .names()
            .iter()
            .map(ToString::to_string)
            .collect();
        self.event(&context, Event::SecretsResolved(SecretsResolved { names }))?;
        // Everything the run will need is checked before its first step runs.
        let mut refusal = None;
        if !context.unavailable.is_empty() {
            self.event(&context, unavailable_event(&context.unavailable))?;
            let aliases: Vec<&str> = context
                .unavailable
                .iter()
                .map(|(alias, _)| alias.as_str())
                .collect();
            refusal = Some(format!(
                "missing or revoked connection(s): {}",
                aliases.join(", ")
            ));
        }
        if refusal.is_none() {
            refusal = workflow
                .steps()
                .iter()
                .find_map(|step| step_env(step, &context.secrets, &context.unavailable).err());
        }
        if let Some(reason) = refusal {
            self.set_status(&mut context, RunStatus::Failed, Some(&reason))?;
            return self.summary(&run_id);
        }
        self.drive(context, Resume::Continue)
    }

    /// Decides the gate a run is parked at (G23). Approve: the run goes on with its secrets
    /// looked up again (G18). Reject: the run stops. A gate is decided once.
    pub fn decide(&self, run: &RunId, step: &str, decision: Decision) -> Result<RunSummary, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if record.status != RunStatus::WaitingApproval {
            return Err(Error::NotWaitingApproval {
                run: run.clone(),
                status: record.status,
            });
        }
        let parked = self.store.parked(run)?.map(|parked| parked.step_id);
        if parked.as_deref() != Some(step) {
            return Err(Error::NotParkedAt {
                run: run.clone(),
                step: step.to_owned(),
                parked,
            });
        }
        if decision.note.trim().is_empty() {
            let verb = match decision.kind {
                GateDecision::Approve => "approving",
                GateDecision::Reject => "rejecting",
            };
            return Err(Error::NoteRequired {
                run: run.clone(),
                what: format!("{verb} step {step} of run {run}"),
            });
        }
        let mut context = self.load_context(run)?;
        let gate = self.gate(&record.account, run, step)?;
        // A supervisor's retry of this gated step parked it with new inputs: an approval runs
        // the step with them.
        let retry_inputs = self
            .store
            .parked(run)?
            .and_then(|parked| parked.state.get(crate::drive::RETRY_INPUTS).cloned());
        let gate_decision = decision.kind;
        let kind = match gate_decision {
            GateDecision::Approve => DecisionKind::Approve,
            GateDecision::Reject => DecisionKind::Reject,
        };
        let by = PersonDecision {
            who: decision.who,
            door: decision.door,
            note: decision.note,
        };
        self.record_person_decision(
            &context,
            DecidedOn::Attempt {
                step,
                attempt: gate.attempt,
            },
            kind,
            &by,
            None,
        )?;
        self.store.clear_parked(run)?;
        match gate_decision {
            GateDecision::Reject => {
                self.set_status(
                    &mut context,
                    RunStatus::Stopped,
                    Some("rejected at the gate"),
                )?;
                self.summary(run)
            }
            GateDecision::Approve => {
                self.set_status(&mut context, RunStatus::Running, None)?;
                let resume = match retry_inputs {
                    Some(inputs) => Resume::Retry {
                        step: step.to_owned(),
                        inputs: Some(inputs),
                    },
                    None => Resume::Continue,
                };
                self.drive(context, resume)
            }
        }
    }

    /// A person's retry of the step that brought the run to `needs_attention` (G14, G15). The
    /// only way an `unknown` attempt is ever run again; it needs a note.
    pub fn retry(
        &self,
        run: &RunId,
        step: &str,
        new_inputs: Option<Value>,
        by: PersonDecision,
    ) -> Result<RunSummary, Error> {
        self.retry_checked(run, step, None, new_inputs, by)
    }

    /// [`Engine::retry`] of the attempt the person looked at: refused unless `attempt` is
    /// still the step's latest, so a second submit of the same decision (a double click, an
    /// impatient client) never re-runs a networked step whose newer attempt nobody has seen
    /// (G14). The doors of the server use this one.
    pub fn retry_attempt(
        &self,
        run: &RunId,
        step: &str,
        attempt: u32,
        new_inputs: Option<Value>,
        by: PersonDecision,
    ) -> Result<RunSummary, Error> {
        self.retry_checked(run, step, Some(attempt), new_inputs, by)
    }

    fn retry_checked(
        &self,
        run: &RunId,
        step: &str,
        attempt: Option<u32>,
        new_inputs: Option<Value>,
        by: PersonDecision,
    ) -> Result<RunSummary, Error> {
        let _attending = self.attend(run)?;
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if record.status == RunStatus::NeedsRepair {
            let reason = self.summary(run)?.reason.unwrap_or_else(|| {
                "its code imports a module outside the standard library or does not parse"
                    .to_owned()
            });
            return Err(Error::NeedsRepairNotRetry {
                run: run.clone(),
                step: step.to_owned(),
                reason,
            });
        }
        if record.status != RunStatus::NeedsAttention {
            return Err(Error::NotNeedingAttention {
                run: run.clone(),
                status: record.status,
            });
        }
        let latest = self.store.attempts(run)?.into_iter().last();
        let stopped_at = latest.as_ref().map(|attempt| attempt.step_id.clone());
        let Some(latest) = latest.filter(|attempt| attempt.step_id == step) else {
            return Err(Error::NotTheStoppedStep {
                run: run.clone(),
                step: step.to_owned(),
                stopped_at,
            });
        };
        if let Some(asked) = attempt.filter(|asked| *asked != latest.attempt) {
            return Err(Error::NotTheLatestAttempt {
                run: run.clone(),
                step: step.to_owned(),
                asked,
                latest: latest.attempt,
            });
        }
        if by.note.trim().is_empty() {
            return Err(Error::NoteRequired {
                run: run.clone(),
                what: format!("retrying step {step} of run {run}"),
            });
        }
        // A retry without new inputs runs the step as its attempt ran: with the new inputs an
        // earlier retry of it (a person's or the supervisor's) put in force, which this retry
        // then records as its own (so on a gated step they need a decision again: the approval
        // was of that attempt).
        let new_inputs = match new_inputs {
            Some(inputs) => Some(inputs),
            None => self
                .retry_inputs_in_force(run)?
                .filter(|(of, _)| of == step)
                .map(|(_, inputs)| inputs),
        };
        let mut context = self.load_context(run)?;
        // An object by the step's input names, with their declared types and no credential
        // key at any depth (G4, G15); a step the workflow does not declare takes none.
        if let Some(inputs) = &new_inputs {
            let problems = match context.workflow.steps().iter().find(|s| s.id() == step) {
                Some(declared) => {
                    crate::inputs::check_person_retry_inputs(&context.workflow, declared, inputs)
                }
                None => vec![format!("the run's workflow has no step `{step}`")],
            };
            if !problems.is_empty() {
                return Err(Error::RetryInputsRefused {
                    run: run.clone(),
                    step: step.to_owned(),
                    reason: problems.join("; "),
                });
            }
        }
        self.record_person_decision_moving(
            &mut context,
            (
                DecidedOn::Attempt {
                    step,
                    attempt: latest.attempt,
                },
                DecisionKind::Retry,
                &by,
                new_inputs.as_ref(),
            ),
            &[RunStatus::NeedsAttention],
            (RunStatus::Running, None),
        )?;
        self.drive(
            context,
            Resume::Retry {
                step: step.to_owned(),
                inputs: new_inputs,
            },
        )
    }

    /// A person stops a run that needs attention (or waits for repair).
    pub fn stop(&self, run: &RunId, by: PersonDecision) -> Result<RunSummary, Error> {
        let _attending = self.attend(run)?;
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if !matches!(
            record.status,
            RunStatus::NeedsAttention | RunStatus::NeedsRepair
        ) {
            return Err(Error::NotNeedingAttention {
                run: run.clone(),
                status: record.status,
            });
        }
        if by.note.trim().is_empty() {
            return Err(Error::NoteRequired {
                run: run.clone(),
                what: format!("stopping run {run}"),
            });
        }
        let mut context = self.load_context(run)?;
        self.record_person_decision_moving(
            &mut context,
            (DecidedOn::Run, DecisionKind::Stop, &by, None),
            &[RunStatus::NeedsAttention, RunStatus::NeedsRepair],
            (RunStatus::Stopped, Some("stopped by a person")),
        )?;
        self.summary(run)
    }

    /// A person's decision on one attempt of a step (an accepted repair's retry).
    pub(crate) fn record_decision_on_attempt(
        &self,
        context: &RunContext,
        step: &str,
        attempt: u32,
        kind: DecisionKind,
        by: &PersonDecision,
        new_inputs: Option<&Value>,
    ) -> Result<(), Error> {
        self.record_person_decision(
            context,
            DecidedOn::Attempt { step, attempt },
            kind,
            by,
            new_inputs,
        )
    }

    /// Records a person's decision: the decision row, an event, and an audit entry, all in one
    /// transaction. `new_inputs`: a retry's, recorded in the event (see
    /// [`PersonDecided::new_inputs`]).
    fn record_person_decision(
        &self,
        context: &RunContext,
        on: DecidedOn<'_>,
        kind: DecisionKind,
        by: &PersonDecision,
        new_inputs: Option<&Value>,
    ) -> Result<(), Error> {
        let (decision, event, audit) = self.person_decision(context, on, kind, by, new_inputs)?;
        // One transaction: a decision whose audit entry cannot be written is not taken.
        self.store.record_decision(&decision, &event, &audit)?;
        Ok(())
    }

    /// [`Engine::record_person_decision`] of a decision that moves the run from one of `from`
    /// to `to` (a person's retry or stop), in the decision's own transaction: refused, with
    /// nothing recorded, when another door (of any process) moved the run first (review
    /// finding 4 of issue 38).
    fn record_person_decision_moving(
        &self,
        context: &mut RunContext,
        decided: (DecidedOn<'_>, DecisionKind, &PersonDecision, Option<&Value>),
        from: &[RunStatus],
        to: (RunStatus, Option<&str>),
    ) -> Result<(), Error> {
        let (on, kind, by, new_inputs) = decided;
        let (decision, event, audit) = self.person_decision(context, on, kind, by, new_inputs)?;
        let moved = self.new_event(
            context,
            Event::RunStatus(RunStatusChanged {
                status: to.0,
                reason: to.1.map(str::to_owned),
            }),
        )?;
        self.store
            .record_decision_moving(&decision, &event, &audit, from, to.0, &moved)
            .map_err(|error| match error {
                storage::Error::StatusConflict { run, current, .. } => {
                    Error::DecidedElsewhere { run, now: current }
                }
                other => Error::Storage(other),
            })?;
        context.run.status = to.0;
        Ok(())
    }

    /// The decision row, its event and its audit entry of a person's decision.
    fn person_decision(
        &self,
        context: &RunContext,
        on: DecidedOn<'_>,
        kind: DecisionKind,
        by: &PersonDecision,
        new_inputs: Option<&Value>,
    ) -> Result<(NewDecision, storage::NewEvent, NewAuditEntry), Error> {
        let (step, attempt) = match on {
            DecidedOn::Attempt { step, attempt } => (Some(step), Some(attempt)),
            DecidedOn::Run => (None, None),
        };
        let (who, door, note) = (&by.who, by.door, by.note.as_str());
        let now = self.clock.now();
        let decided = Event::Decision(PersonDecided {
            decision: kind,
            step: step.map(str::to_owned),
            attempt,
            who: who.clone(),
            door,
            note: note.to_owned(),
            new_inputs: new_inputs.cloned(),
        });
        let event = self.new_event(context, decided)?;
        let decision = NewDecision {
            run: context.run.id.clone(),
            step_id: step.map(step_id).transpose()?,
            attempt,
            kind,
            who: context.redactor.scrub_fields(who.clone()),
            door,
            note: context.redactor.scrub(note),
            at: now,
        };
        let audit = NewAuditEntry {
            account: context.run.account.clone(),
            run: Some(context.run.id.clone()),
            actor: context.redactor.scrub_fields(who.clone()),
            action: match kind {
                DecisionKind::Approve => storage::AuditAction::RunApprove,
                DecisionKind::Reject => storage::AuditAction::RunReject,
                DecisionKind::Retry => storage::AuditAction::RunRetry,
                DecisionKind::Stop => storage::AuditAction::RunStop,
            },
            detail: event.payload.clone(),
            at: now,
        };
        Ok((decision, event, audit))
    }

    /// The gate a run waits at, with the attempt its decision will be recorded against, or
    /// `None` when the run is not waiting at a gate. What an approve link signs (G24).
    pub fn pending_gate(&self, run: &RunId) -> Result<Option<GateRef>, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if record.status != RunStatus::WaitingApproval {
            return Ok(None);
        }
        let Some(parked) = self.store.parked(run)? else {
            return Ok(None);
        };
        Ok(Some(self.gate(&record.account, run, &parked.step_id)?))
    }

    /// The inputs the step a run is parked before will receive once it is approved, built
    /// from the parked state (scrubbed when it was parked) as the engine will build them:
    /// `None` when the run is not parked, the reason when they cannot be built.
    pub fn pending_gate_inputs(
        &self,
        run: &RunId,
        workflow: &Workflow,
    ) -> Result<Option<Result<Value, String>>, Error> {
        let Some(parked) = self.store.parked(run)? else {
            return Ok(None);
        };
        let Some(step) = workflow.step(&parked.step_id) else {
            return Ok(Some(Err(format!(
                "the workflow has no step `{}` any more",
                parked.step_id
            ))));
        };
        let outputs: std::collections::BTreeMap<String, Value> = parked
            .state
            .get("outputs")
            .and_then(Value::as_object)
            .map(|outputs| {
                outputs
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let run_inputs = parked.state.get("inputs").cloned().unwrap_or(Value::Null);
        Ok(Some(crate::inputs::step_inputs(
            step,
            &run_inputs,
            &outputs,
            parked.state.get(crate::drive::RETRY_INPUTS),
        )))
    }

    /// The gate at `step` of a run: a gate's decision is recorded against the step's next
    /// attempt, the one its approval lets start. The one place that rule lives: the parked
    /// event, the decision and an approve link all take it from here.
    pub(crate) fn gate(
        &self,
        account: &AccountId,
        run: &RunId,
        step: &str,
    ) -> Result<GateRef, Error> {
        Ok(GateRef {
            account: account.clone(),
            run: run.clone(),
            step: step_id(step)?,
            attempt: self.next_attempt_number(run, step)?,
        })
    }

    pub(crate) fn next_attempt_number(&self, run: &RunId, step: &str) -> Result<u32, Error> {
        let count = self
            .store
            .attempts(run)?
            .iter()
            .filter(|attempt| attempt.step_id == step)
            .count();
        Ok(u32::try_from(count).unwrap_or(u32::MAX).saturating_add(1))
    }

    /// Where a run stands, read from the store.
    pub fn summary(&self, run: &RunId) -> Result<RunSummary, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        let attempts = self.store.attempts(run)?;
        let mut steps: Vec<StepSummary> = Vec::new();
        for attempt in attempts {
            let summary = StepSummary {
                step_id: attempt.step_id.clone(),
                attempt: attempt.attempt,
                status: attempt.status,
                output: attempt.output,
                reason: attempt.reason,
            };
            match steps
                .iter_mut()
                .find(|step| step.step_id == attempt.step_id)
            {
                Some(existing) => *existing = summary,
                None => steps.push(summary),
            }
        }
        // The latest status change says why the run stands where it does; only that event is
        // read.
        let latest_status = self
            .store
            .events(run)?
            .into_iter()
            .rev()
            .find(|event| event.kind == EventKind::RunStatus.as_str());
        let reason = match latest_status.as_ref().map(journal::read).transpose()? {
            Some(Entry {
                event: Event::RunStatus(changed),
                ..
            }) => changed.reason,
            _ => None,
        };
        let waiting_at = if record.status == RunStatus::WaitingApproval {
            self.store.parked(run)?.map(|parked| parked.step_id)
        } else {
            None
        };
        Ok(RunSummary {
            run: run.clone(),
            status: record.status,
            steps,
            waiting_at,
            reason,
        })
    }

    /// A run's journal, every event read into its type (G25).
    pub fn journal(&self, run: &RunId) -> Result<Vec<Entry>, Error> {
        Ok(journal::read_all(&self.store.events(run)?)?)
    }

    /// A run's state as the store holds it; [`crate::reconstruct`] of its events must equal it.
    pub fn stored_state(&self, run: &RunId) -> Result<RunState, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        let attempts = self
            .store
            .attempts(run)?
            .iter()
            .map(AttemptState::from_record)
            .collect();
        let parked_at = match record.status {
            RunStatus::WaitingApproval => self.store.parked(run)?.map(|parked| parked.step_id),
            _ => None,
        };
        Ok(RunState {
            status: Some(record.status),
            attempts,
            parked_at,
        })
    }

    /// Refuses a definition that holds a value of the account anywhere (its name, a step id, an
    /// explanation, a literal), naming the line and column, never the value: a definition is
    /// read, compared and exported, and holds references to connections only (G1, G16).
    pub(crate) fn refuse_definition_holding_values(
        &self,
        account: &AccountId,
        workflow: &Workflow,
    ) -> Result<(), Error> {
        let redactor =
            self.scrub_sets
                .for_account(account)
                .map_err(|source| Error::AccountValues {
                    account: account.clone(),
                    source,
                })?;
        let source = workflow.source();
        let Some(found) = redactor.find_secret(source.as_bytes()) else {
            return Ok(());
        };
        let before = source.get(..found.start).unwrap_or(source);
        let line = before.matches('\n').count() + 1;
        let column = before
            .rfind('\n')
            .map_or(before.len(), |newline| before.len() - newline - 1)
            + 1;
        Err(Error::DefinitionHoldsValue {
            file: workflow.file_name().to_owned(),
            line,
            column,
        })
    }

    /// Which provider (and model) sees the account's failures when a workflow lets the
    /// assistant supervise; `None` when a person does.
    pub fn assistant_sees_failures(&self, account: &AccountId) -> Option<String> {
        self.supervisor.who_sees_failures(account)
    }

    /// Who sees a failed step of `workflow` in `account`, in words, for the workflow page
    /// (G15): which provider a failed step's inputs and printed text leave to, or why a
    /// person sees it.
    pub fn who_sees_failures(&self, account: &AccountId, workflow: &Workflow) -> String {
        match workflow.supervisor() {
            spec::Supervision::None => "A person: the workflow says `supervisor: none`, so no \
                model sees a failure."
                .to_owned(),
            spec::Supervision::Assistant => match self.supervisor.who_sees_failures(account) {
                Some(provider) => format!(
                    "The assistant on {provider}: a failed step's inputs, error and printed text \
                     (scrubbed) are sent to it. Write `supervisor: none` to keep them to people."
                ),
                None => "A person: the account has no model provider with an assistant model \
                    configured, so every failure goes to a person."
                    .to_owned(),
            },
        }
    }

    /// The secret request of a workflow (every connection its steps name); exposed so the
    /// binary can show what a run will ask the vault for.
    pub fn secret_request(workflow: &Workflow) -> SecretRequest {
        secret_request(workflow)
    }
}

/// A validated step's id as the store takes it.
pub(crate) fn step_id(step: &str) -> Result<StepId, Error> {
    StepId::parse(step).map_err(|_| Error::NotAStepId {
        step: step.to_owned(),
    })
}

/// One sentence per cause, not per step (newcomer 3, friction 17: a workflow pinned to a
/// Python the server lacks was refused with the same sentence once per step): the problems of
/// steps that differ only by the step's name are said once, naming every step.
fn one_sentence_per_cause(problems: Vec<(String, String)>) -> Vec<String> {
    let mut causes: Vec<(String, Vec<String>)> = Vec::new();
    for (step, problem) in problems {
        let named = format!("step {step} ");
        let cause = problem.replacen(&named, "", 1);
        match causes.iter_mut().find(|(known, _)| *known == cause) {
            Some((_, steps)) => steps.push(step),
            None => causes.push((cause, vec![step])),
        }
    }
    causes
        .into_iter()
        .map(|(cause, steps)| match steps.as_slice() {
            [one] => format!("step {one} {cause}"),
            many => format!("steps {}: each {cause}", many.join(", ")),
        })
        .collect()
}
