//! An accepted repair (G9): a step that went to `needs_repair` gets new code, written by the
//! assistant and accepted by a person, and the run goes on from that step with the new
//! workflow version. The engine holds the repair to "only that step's code changed", whatever
//! the caller checked before: its network, connections, limits, inputs, and every other step
//! and the workflow's own keys stay as they were. Earlier steps' outputs stand.

use spec::{Step, StepBody, Workflow};
use storage::{AttemptStatus, DecisionKind, RunId, RunStatus, Sha256Hex};

use crate::drive::Resume;
use crate::engine::{Engine, PersonDecision, RunSummary};
use crate::journal::{Event, RepairAccepted};
use crate::{Error, with_causes};

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
    /// A person accepts the assistant's repair of the step that sent the run to
    /// `needs_repair` (G9): the run records that it runs `repair.version` from that step,
    /// its earlier outputs stand, and the step runs again with the new code.
    pub fn retry_repaired(&self, run: &RunId, repair: AcceptedRepair) -> Result<RunSummary, Error> {
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
        self.revalidate(&repair.workflow)?;
        self.refuse_definition_holding_values(&record.account, &repair.workflow)?;
        let context = self.load_context(run)?;
        let changes = changes_besides_code(&context.workflow, &repair.workflow, step);
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
                inputs: None,
            },
        )
    }
}
