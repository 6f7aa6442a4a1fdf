//! An accepted repair (G9): a step that went to `needs_repair` gets new code, written by the
//! assistant and accepted by a person, and the run goes on from that step with the new
//! workflow version. The engine holds the repair to "only that step's code changed", whatever
//! the caller checked before: its network, connections, limits, inputs, and every other step
//! and the workflow's own keys stay as they were. Earlier steps' outputs stand.

//!
//! Proposing and accepting go through the engine for every door (console, API, CLI):
//! [`Engine::propose_repair`] asks the [`RepairAssistant`] the binary installed (the account's
//! assistant; the check of a proposal before it is shown is the assistant's `check`) and
//! records the checked proposal as `repair.proposed`; [`Engine::accept_repair`] checks that
//! proposal again with the same `check`, saves it as the workflow's next version (authored by
//! the assistant, accepted by the person) only while the workspace's file is still the text
//! the run runs, and goes on with [`Engine::retry_repaired`].

use serde_json::Value;
use spec::{Step, StepBody, Workflow};
use storage::{
    AccountId, AttemptRecord, AttemptStatus, DecisionKind, RunId, RunRecord, RunStatus, Sha256Hex,
};
use workspace::Author;

use crate::definitions::{DefinitionWriteError, WorkflowVersion, workflow_path};
use crate::drive::Resume;
use crate::engine::{Attending, Engine, PersonDecision, RunSummary};
use crate::journal::{Event, RepairAccepted, RepairProposed};
use crate::{Error, with_causes};

/// The most repair proposals one attempt of a step takes (each costs a model call and is
/// kept in the run's journal); past it the engine refuses before the assistant is asked.
pub const MAX_REPAIR_PROPOSALS: usize = 10;

/// What the assistant is shown of a step that needs repair.
#[derive(Debug, Clone, Copy)]
pub struct RepairRequest<'a> {
    pub account: &'a AccountId,
    pub run: &'a RunId,
    /// The run's workflow (the text it runs now).
    pub workflow: &'a Workflow,
    /// The step (without its gate mark).
    pub step: &'a str,
    /// Why it needs repair, as the attempt recorded it (scrubbed).
    pub problem: &'a str,
}

/// A proposal that passed [`RepairAssistant::check`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedRepair {
    pub code: String,
    pub note: String,
    /// Who wrote it: the assistant's provider and model.
    pub provider: String,
    pub model: String,
    /// The earlier proposals refused before anything was shown, with why.
    pub refused: Vec<String>,
}

/// Why no repair was proposed (issue 37: the repair port said it in a `String`).
#[derive(Debug, thiserror::Error)]
pub enum NoProposal {
    /// No assistant can be asked: none in this process, or none for the account (`why`).
    #[error(
        "no assistant can propose a repair ({why}); fix the step's code yourself, start a new \
         run, and stop this one"
    )]
    NoAssistant { why: String },
    /// The step is not one the assistant repairs (not in the run's workflow, or an agent's).
    #[error("{what}")]
    NotRepairable { what: String },
    /// The assistant could not be asked: its provider, its client or the account's values
    /// (`what` says which).
    #[error("{what}")]
    Unreachable {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// It was asked, and no proposal passed the checks.
    #[error("the assistant made no acceptable proposal")]
    NoneAcceptable {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Why a proposal's code is refused (G9): anything besides the step's code changed, an import
/// outside the pinned Python's standard library, `def main(...)` with other parameters, or
/// the workflow it makes does not parse. `reason` is said to the person as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct RefusedProposal {
    pub reason: String,
}

impl From<String> for RefusedProposal {
    fn from(reason: String) -> Self {
        RefusedProposal { reason }
    }
}

/// The assistant that repairs steps, installed by the binary (it holds the model and the
/// pinned interpreters). Both doors go through the same `check`: before a proposal is shown
/// (inside `propose`) and again when a person accepts it.
pub trait RepairAssistant: Send + Sync {
    /// A proposal for `request`'s step that passed `check`, or why there is none.
    fn propose(&self, request: &RepairRequest<'_>) -> Result<ProposedRepair, NoProposal>;
    /// The run's workflow with `step`'s code replaced by `code`, parsed (G1), or why it is
    /// refused.
    fn check(
        &self,
        workflow: &Workflow,
        step: &str,
        code: &str,
    ) -> Result<Workflow, RefusedProposal>;
}

/// No assistant: nothing is proposed, nothing can be checked (so nothing is accepted).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRepairAssistant;

impl RepairAssistant for NoRepairAssistant {
    fn propose(&self, _request: &RepairRequest<'_>) -> Result<ProposedRepair, NoProposal> {
        Err(NoProposal::NoAssistant {
            why: "this process has none".to_owned(),
        })
    }

    fn check(
        &self,
        _workflow: &Workflow,
        _step: &str,
        _code: &str,
    ) -> Result<Workflow, RefusedProposal> {
        Err(RefusedProposal {
            reason: "this process cannot check a proposal, so none is accepted".to_owned(),
        })
    }
}

/// Why accepting a repair failed; nothing was saved unless the error says so.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The engine refused (not needing repair, no proposal, the checks) or failed.
    #[error(transparent)]
    Engine(#[from] Error),
    /// The new version could not be saved; the run did not go on.
    #[error("the repaired workflow was not saved as a new version, so the run did not go on")]
    Save(#[source] DefinitionWriteError),
}

/// An accepted repair: the version saved and where the run stands after going on.
#[derive(Debug, Clone)]
pub struct RepairOutcome {
    pub version: WorkflowVersion,
    pub summary: RunSummary,
}

/// A repair a person accepted.
#[derive(Debug, Clone)]
pub struct AcceptedRepair {
    /// The step that needs repair (without its gate mark).
    pub step: String,
    /// The new workflow version: the run's workflow with only that step's code changed.
    pub workflow: Workflow,
    /// The version number it was saved as.
    pub version: u32,
    /// Who wrote it: the assistant's provider and model.
    pub provider: String,
    pub model: String,
    /// Who accepted it, through which door, and why.
    pub by: PersonDecision,
}

/// The unified diff of a step's code, `old` to `new` (what a person reads before accepting a
/// repair).
pub fn code_diff(step: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .header(
            &format!("{step}: the code the run has"),
            &format!("{step}: the proposed code"),
        )
        .to_string()
}

/// What differs between `old` and `new` besides the code of `step`, one sentence each; empty
/// when only that code changed (or nothing).
pub fn changes_besides_code(old: &Workflow, new: &Workflow, step: &str) -> Vec<String> {
    let mut changes = Vec::new();
    if old.name() != new.name() {
        changes.push("the workflow's `name`".to_owned());
    }
    if old.python() != new.python() {
        changes.push("the workflow's `python`".to_owned());
    }
    if old.supervisor() != new.supervisor() {
        changes.push("the workflow's `supervisor`".to_owned());
    }
    if old.inputs() != new.inputs() {
        changes.push("the workflow's `inputs`".to_owned());
    }
    let old_ids: Vec<&str> = old.steps().iter().map(Step::id).collect();
    let new_ids: Vec<&str> = new.steps().iter().map(Step::id).collect();
    if old_ids != new_ids {
        changes.push(format!(
            "the steps ({} became {})",
            old_ids.join(", "),
            new_ids.join(", ")
        ));
        return changes;
    }
    for (before, after) in old.steps().iter().zip(new.steps()) {
        let id = before.id();
        let mut differs = Vec::new();
        if before.is_gate() != after.is_gate() {
            differs.push("its gate mark");
        }
        if before.explain() != after.explain() {
            differs.push("`explain`");
        }
        if before.network() != after.network() {
            differs.push("`network`");
        }
        if before.connections() != after.connections() {
            differs.push("`connections`");
        }
        if before.inputs() != after.inputs() {
            differs.push("`inputs`");
        }
        if before.limits() != after.limits() {
            differs.push("`limits`");
        }
        if before.output() != after.output() {
            differs.push("`output`");
        }
        match (before.body(), after.body()) {
            (StepBody::Code { .. }, StepBody::Code { .. }) if id == step => {}
            (StepBody::Code { source: a }, StepBody::Code { source: b }) if a != b => {
                differs.push("`code`");
            }
            (StepBody::Code { .. }, StepBody::Code { .. }) => {}
            (a, b) if a != b => differs.push("what it runs"),
            _ => {}
        }
        if !differs.is_empty() {
            changes.push(format!("step `{id}`: {}", differs.join(", ")));
        }
    }
    changes
}

impl Engine {
    /// The run and the latest attempt of `step`, when the run is in `needs_repair` because of
    /// that attempt; refused otherwise.
    fn needing_repair(&self, run: &RunId, step: &str) -> Result<(RunRecord, AttemptRecord), Error> {
        let refused = |reason: String| Error::RepairRefused {
            run: run.clone(),
            step: step.to_owned(),
            reason,
        };
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if record.status != RunStatus::NeedsRepair {
            return Err(refused(format!(
                "the run is {}, not needs_repair: only a step that needs repair is repaired",
                record.status
            )));
        }
        let latest = self.store.attempts(run)?.into_iter().last();
        match latest {
            Some(attempt)
                if attempt.step_id == step && attempt.status == AttemptStatus::NeedsRepair =>
            {
                Ok((record, attempt))
            }
            Some(attempt) => Err(refused(format!(
                "it is not the step that needs repair (that is {})",
                attempt.step_id
            ))),
            None => Err(refused("it is not the step that needs repair".to_owned())),
        }
    }

    /// Asks the assistant for a repair of `step` (G9); the proposal it returns passed its
    /// check, and is recorded as `repair.proposed` (scrubbed) for whoever accepts it. A
    /// proposal holding a value of the account is refused, never recorded.
    pub fn propose_repair(&self, run: &RunId, step: &str) -> Result<RepairProposed, Error> {
        let (record, attempt) = self.needing_repair(run, step)?;
        // Bounded before the assistant is asked: a proposal costs a model call and is kept.
        let earlier: Vec<RepairProposed> = self
            .journal(run)?
            .into_iter()
            .filter_map(|entry| match entry.event {
                Event::RepairProposed(proposed) => Some(proposed),
                _ => None,
            })
            .collect();
        let of_attempt = earlier
            .iter()
            .filter(|proposed| proposed.step == step && proposed.attempt == attempt.attempt)
            .count();
        if of_attempt >= MAX_REPAIR_PROPOSALS {
            return Err(Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: format!(
                    "attempt {} of this step has had {MAX_REPAIR_PROPOSALS} proposals, the most \
                     it may; accept one, repair the workflow yourself, or stop the run",
                    attempt.attempt
                ),
            });
        }
        let context = self.load_context(run)?;
        // A proposal that could never be accepted costs a model call for nothing: a run of a
        // file from elsewhere, or of a text the workspace has moved past, is told so first
        // (newcomer 3, friction 9).
        self.refuse_overwriting_newer(
            &record.account,
            context.workflow.name(),
            context.workflow.source(),
        )
        .map_err(|reason| Error::RepairRefused {
            run: run.clone(),
            step: step.to_owned(),
            reason: format!(
                "{}; the assistant was not asked, since its repair could not be accepted \
                 (`stepward run {}` runs the workspace's current version)",
                reason
                    .split(", so the repair was not saved")
                    .next()
                    .unwrap_or(&reason),
                context.workflow.name()
            ),
        })?;
        let problem = attempt
            .reason
            .clone()
            .unwrap_or_else(|| "it needs repair".to_owned());
        let proposal = self
            .repairs
            .propose(&RepairRequest {
                account: &record.account,
                run,
                workflow: &context.workflow,
                step,
                problem: &problem,
            })
            .map_err(|no_proposal| Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: with_causes(&no_proposal),
            })?;
        if context.redactor.scrub(&proposal.code).get() != &proposal.code {
            return Err(Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: "the assistant's proposal holds a value of the account, so it is not \
                         shown; ask again"
                    .to_owned(),
            });
        }
        // The code is stored once per run: a proposal of code proposed before holds its hash.
        let code_sha256 = Sha256Hex::of(proposal.code.as_bytes()).as_str().to_owned();
        let stored_before = earlier.iter().any(|proposed| {
            !proposed.code.is_empty()
                && Sha256Hex::of(proposed.code.as_bytes()).as_str() == code_sha256
        });
        let full_code = proposal.code.clone();
        let proposed = RepairProposed {
            step: step.to_owned(),
            attempt: attempt.attempt,
            code: if stored_before {
                String::new()
            } else {
                proposal.code
            },
            code_sha256: Some(code_sha256),
            note: proposal.note,
            provider: proposal.provider,
            model: proposal.model,
            for_hash: Sha256Hex::of(context.workflow.source().as_bytes())
                .as_str()
                .to_owned(),
            refused: proposal.refused,
        };
        self.event(&context, Event::RepairProposed(proposed.clone()))?;
        // What is returned is what was recorded: scrubbed like every record.
        Ok(RepairProposed {
            code: full_code,
            note: context.redactor.scrub(&proposed.note).into_inner(),
            refused: proposed
                .refused
                .iter()
                .map(|refused| context.redactor.scrub(refused).into_inner())
                .collect(),
            ..proposed
        })
    }

    /// The latest proposal recorded for `step` of the run, as recorded (scrubbed).
    pub fn repair_proposal(
        &self,
        run: &RunId,
        step: &str,
    ) -> Result<Option<RepairProposed>, Error> {
        let proposals: Vec<RepairProposed> = self
            .journal(run)?
            .into_iter()
            .filter_map(|entry| match entry.event {
                Event::RepairProposed(proposed) => Some(proposed),
                _ => None,
            })
            .collect();
        let Some(mut latest) = proposals
            .iter()
            .rev()
            .find(|proposed| proposed.step == step)
            .cloned()
        else {
            return Ok(None);
        };
        // A code stored once: read from the proposal that holds it.
        if latest.code.is_empty()
            && let Some(hash) = &latest.code_sha256
        {
            latest.code = proposals
                .iter()
                .filter(|proposed| !proposed.code.is_empty())
                .find(|proposed| Sha256Hex::of(proposed.code.as_bytes()).as_str() == hash)
                .map(|proposed| proposed.code.clone())
                .unwrap_or_default();
        }
        Ok(Some(latest))
    }

    /// The run's workflow with `step`'s code replaced by `code`, checked by the installed
    /// assistant's check (the one a proposal passed before it was shown).
    pub fn check_repair(
        &self,
        workflow: &Workflow,
        step: &str,
        code: &str,
    ) -> Result<Workflow, RefusedProposal> {
        self.repairs.check(workflow, step, code)
    }

    /// A person accepts the recorded proposal for `step` (G9): checked again, saved as the
    /// workflow's next version (authored by the assistant, accepted by `accepted_by`, a
    /// person's id or the CLI's user) only while `workflows/NAME.yaml` is still the text the
    /// run runs, then the run goes on from that step ([`Engine::retry_repaired`]).
    pub fn accept_repair(
        &self,
        run: &RunId,
        step: &str,
        accepted_by: &str,
        by: PersonDecision,
        shown: Option<&str>,
    ) -> Result<RepairOutcome, RepairError> {
        let refused = |reason: String| Error::RepairRefused {
            run: run.clone(),
            step: step.to_owned(),
            reason,
        };
        // Held from the first check to the run going on: no stop or other decision comes
        // between the checks, the save and the retry (a version saved for a run stopped
        // meanwhile would never run).
        let attending = self.attend(run)?;
        let (record, attempt) = self.needing_repair(run, step)?;
        if by.note.trim().is_empty() {
            return Err(Error::NoteRequired {
                run: run.clone(),
                what: format!("accepting the repair of step {step} of run {run}"),
            }
            .into());
        }
        let context = self.load_context(run)?;
        let proposal = self
            .repair_proposal(run, step)?
            .filter(|proposal| proposal.attempt == attempt.attempt)
            .ok_or_else(|| refused("there is no proposal to accept; ask for one first".into()))?;
        // Only the proposal the person read (by its code's SHA-256) is accepted: a newer one,
        // asked for meanwhile, waits to be read.
        if let Some(shown) = shown
            && shown != Sha256Hex::of(proposal.code.as_bytes()).as_str()
        {
            return Err(refused(
                "a newer proposal was made since this one was shown; read it, then accept it"
                    .to_owned(),
            )
            .into());
        }
        let hash = Sha256Hex::of(context.workflow.source().as_bytes());
        if proposal.for_hash != hash.as_str() {
            return Err(refused(
                "the proposal was made for another version of the run's workflow; ask again"
                    .to_owned(),
            )
            .into());
        }
        // Checked again on confirm (G1), as before it was shown.
        let repaired = self
            .repairs
            .check(&context.workflow, step, &proposal.code)
            .map_err(|refusal| refused(format!("the proposal is refused: {refusal}")))?;
        // Everything the retry checks, before anything is saved.
        let _ = self.check_repaired(run, step, &record.account, &context.workflow, &repaired)?;
        let name = context.workflow.name().to_owned();
        self.refuse_overwriting_newer(&record.account, &name, context.workflow.source())
            .map_err(refused)?;
        let author = format!(
            "the assistant ({}, model {})",
            proposal.provider, proposal.model
        );
        let who = match &by.who {
            storage::Actor::Person { name, .. } => name.clone(),
            other => other.id().to_owned(),
        };
        // Saved only over the run's own text, compared under the workspace's lock: the check
        // above is the friendly early refusal, this one holds against a save in between.
        let version = self
            .save_workflow_version_over(
                &record.account,
                &name,
                repaired.source(),
                &Author::Assistant {
                    accepted_by: accepted_by.to_owned(),
                },
                &format!("workflow {name}: a repair written by {author}, accepted by {who}"),
                Some(hash.as_str()),
            )
            .map_err(RepairError::Save)?;
        let summary = self.retry_repaired_held(
            run,
            AcceptedRepair {
                step: step.to_owned(),
                workflow: repaired,
                version: version.number,
                provider: proposal.provider,
                model: proposal.model,
                by,
            },
            &attending,
        )?;
        Ok(RepairOutcome { version, summary })
    }

    /// Refuses when the workspace's `workflows/NAME.yaml` is not `runs` (a version saved since
    /// the run started, or a run of a file from elsewhere): a repair of the run's older text
    /// never overwrites it.
    fn refuse_overwriting_newer(
        &self,
        account: &AccountId,
        name: &str,
        runs: &str,
    ) -> Result<(), String> {
        let unreadable = |detail: String| {
            format!("workflows/{name}.yaml could not be read ({detail}), so nothing was saved")
        };
        let path = workflow_path(name).ok_or_else(|| unreadable("not a workflow name".into()))?;
        let current = self
            .options
            .workspaces
            .for_account(account)
            .map_err(|error| unreadable(error.to_string()))?
            .read_file(&path, 1024 * 1024)
            .map_err(|error| unreadable(error.to_string()))?;
        if current.is_none_or(|current| current.bytes != runs.as_bytes()) {
            return Err(format!(
                "workflows/{name}.yaml in the workspace is not the text this run runs (it was \
                 changed since the run started, or the run is of a file from elsewhere), so the \
                 repair was not saved and the run did not go on; start a new run of the current \
                 version, and repair that one"
            ));
        }
        Ok(())
    }

    /// What a repaired workflow must be, checked before it is saved (accepting) and again
    /// before it runs: it parses (G1), holds no current value of the account, changes only
    /// `step`'s code, and takes the new inputs a retry put in force for `step` (G15), which
    /// the repaired step runs with. Returns those inputs.
    fn check_repaired(
        &self,
        run: &RunId,
        step: &str,
        account: &AccountId,
        before: &Workflow,
        repaired: &Workflow,
    ) -> Result<Option<Value>, Error> {
        self.revalidate(repaired)?;
        self.refuse_definition_holding_values(account, repaired)?;
        let changes = changes_besides_code(before, repaired, step);
        if !changes.is_empty() {
            return Err(Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: format!(
                    "a repair changes only the step's code, and this one changes {}",
                    changes.join("; ")
                ),
            });
        }
        // The attempt being repaired ran with them: the repair corrects its code, never its
        // inputs back to the ones a person or the supervisor corrected.
        let in_force = self
            .retry_inputs_in_force(run)?
            .filter(|(of, _)| of == step)
            .map(|(_, inputs)| inputs);
        if let Some(inputs) = &in_force {
            let problems = match repaired.steps().iter().find(|s| s.id() == step) {
                Some(declared) => {
                    crate::inputs::check_person_retry_inputs(repaired, declared, inputs)
                }
                None => vec![format!("the repaired workflow has no step `{step}`")],
            };
            if !problems.is_empty() {
                return Err(Error::RepairRefused {
                    run: run.clone(),
                    step: step.to_owned(),
                    reason: format!(
                        "the step's attempt ran with new inputs of a retry, and the repaired \
                         step does not take them: {}",
                        problems.join("; ")
                    ),
                });
            }
        }
        Ok(in_force)
    }

    /// A person accepts the assistant's repair of the step that sent the run to
    /// `needs_repair` (G9): the run records that it runs `repair.version` from that step,
    /// its earlier outputs stand, and the step runs again with the new code.
    pub fn retry_repaired(&self, run: &RunId, repair: AcceptedRepair) -> Result<RunSummary, Error> {
        let attending = self.attend(run)?;
        self.retry_repaired_held(run, repair, &attending)
    }

    /// [`Engine::retry_repaired`] by a caller that holds the run (`_held`).
    fn retry_repaired_held(
        &self,
        run: &RunId,
        repair: AcceptedRepair,
        _held: &Attending,
    ) -> Result<RunSummary, Error> {
        let step = repair.step.as_str();
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        if record.status != RunStatus::NeedsRepair {
            return Err(Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: format!("the run is {}, not needs_repair", record.status),
            });
        }
        let latest = self.store.attempts(run)?.into_iter().last();
        let Some(latest) = latest.filter(|attempt| {
            attempt.step_id == step && attempt.status == AttemptStatus::NeedsRepair
        }) else {
            return Err(Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: "it is not the step that needs repair".to_owned(),
            });
        };
        if repair.by.note.trim().is_empty() {
            return Err(Error::NoteRequired {
                run: run.clone(),
                what: format!("accepting the repair of step {step} of run {run}"),
            });
        }
        let context = self.load_context(run)?;
        let inputs = self.check_repaired(
            run,
            step,
            &record.account,
            &context.workflow,
            &repair.workflow,
        )?;
        let hash = Sha256Hex::of(repair.workflow.source().as_bytes());
        let accepted = self.new_event(
            &context,
            Event::RepairAccepted(RepairAccepted {
                step: step.to_owned(),
                attempt: latest.attempt,
                version: repair.version,
                hash: hash.as_str().to_owned(),
                provider: repair.provider.clone(),
                model: repair.model.clone(),
                accepted_by: repair.by.who.clone(),
                door: repair.by.door,
                note: repair.by.note.clone(),
            }),
        )?;
        self.store.replace_run_workflow(
            run,
            &context.redactor.scrub(repair.workflow.source()),
            &hash,
            &accepted,
        )?;
        self.record_decision_on_attempt(
            &context,
            step,
            latest.attempt,
            DecisionKind::Retry,
            &repair.by,
            inputs.as_ref(),
        )?;
        // From here the run is the new version's: parsed again from its stored text (G1).
        let mut context = self
            .load_context(run)
            .map_err(|error| Error::RepairRefused {
                run: run.clone(),
                step: step.to_owned(),
                reason: with_causes(&error),
            })?;
        self.set_status(&mut context, RunStatus::Running, None)?;
        self.drive(
            context,
            Resume::Retry {
                step: step.to_owned(),
                inputs,
            },
        )
    }
}
