//! Repairs (G9) through the JSON API and the console: a viewer looks at the assistant's
//! proposal for a step in `needs_repair` (the diff of that step's code and the checks it
//! passed); a member asks for one; a person whose role may save workflows accepts it, recorded
//! by name. Proposing and accepting are the engine's (`Engine::propose_repair`,
//! `Engine::accept_repair`), the same calls as `stepward repair`, so every door goes through
//! the same check of a proposal before it is shown and again when it is accepted.

use api_types::repairs::AcceptRepairRequest;
use api_types::repairs::{RepairAcceptedView, RepairProposalView};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use crate::handlers::{Accepted, accepted};
use axum::{Extension, Form, Json};
use engine::journal::RepairProposed;
use serde::Deserialize;
use serde_json::json;
use storage::{Actor, AttemptStatus, Door, RunRecord, RunStatus, Sha256Hex};

use crate::authn::Authenticated;
use crate::handlers::runs::{detail, run_in_scope};
use crate::handlers::workflow_versions::version_view;
use crate::handlers::{account_redactor, audit, blocking};
use crate::state::Shared;
use crate::{AppState, Error};

/// What a proposal passed before it was shown, in words.
fn checks(python: &str) -> Vec<String> {
    vec![
        "The workflow with this code parses.".to_owned(),
        "Only this step's code differs: its network, connections, limits and inputs, and every \
         other step, are as they were."
            .to_owned(),
        format!("Every import is in Python {python}'s standard library."),
        "Its def main(...) keeps its parameters.".to_owned(),
    ]
}

/// The proposal as shown: the diff of the step's code, scrubbed with the account's live set.
pub(crate) fn proposal_view(
    shared: &Shared,
    record: &RunRecord,
    step: &str,
    proposed: &RepairProposed,
) -> Result<RepairProposalView, Error> {
    let redactor = account_redactor(shared, &record.account)?;
    let scrub = |text: &str| redactor.scrub(text).into_inner();
    let workflow = spec::parse_workflow_within(
        &record.workflow_file_name,
        &record.workflow_source,
        shared.engine.limit_maxima(),
    )
    .ok();
    let old_code = workflow
        .as_ref()
        .and_then(|workflow| workflow.step(step))
        .and_then(spec::Step::code)
        .unwrap_or_default()
        .to_owned();
    let python = workflow
        .as_ref()
        .map(|workflow| workflow.python().to_string())
        .unwrap_or_default();
    let latest = shared
        .store
        .attempts(&record.id)
        .map_err(Error::storage("read attempts"))?
        .into_iter()
        .last();
    let current = record.status == RunStatus::NeedsRepair
        && latest.is_some_and(|attempt| {
            attempt.step_id == step
                && attempt.attempt == proposed.attempt
                && attempt.status == AttemptStatus::NeedsRepair
        })
        && proposed.for_hash == Sha256Hex::of(record.workflow_source.as_bytes()).as_str();
    Ok(RepairProposalView {
        run: record.id.to_string(),
        step: step.to_owned(),
        attempt: proposed.attempt,
        diff: scrub(&engine::code_diff(step, &old_code, &proposed.code)),
        old_code: scrub(&old_code),
        code: scrub(&proposed.code),
        proposal: Sha256Hex::of(proposed.code.as_bytes()).as_str().to_owned(),
        note: scrub(&proposed.note),
        provider: proposed.provider.clone(),
        model: proposed.model.clone(),
        checks: checks(&python),
        refused: proposed
            .refused
            .iter()
            .map(|refused| scrub(refused))
            .collect(),
        current,
    })
}

fn refused(run: &str, step: &str, reason: String) -> Error {
    Error::RepairRefused {
        run: run.to_owned(),
        step: step.to_owned(),
        reason,
    }
}

/// The engine's refusals in its own words; everything else is the engine failing.
fn engine_error(run: &str, step: &str, source: engine::Error) -> Error {
    match source {
        engine::Error::UnknownRun { .. } => Error::NotFound {
            what: "run",
            id: run.to_owned(),
        },
        engine::Error::RepairRefused { reason, .. } => refused(run, step, reason),
        source @ engine::Error::DecisionInProgress { .. } => Error::RunConflict {
            run: run.to_owned(),
            source: Box::new(source),
        },
        engine::Error::NoteRequired { .. } => Error::InvalidInput {
            field: "note",
            reason: "accepting a repair needs a note saying why; it is kept in the record with \
                     who accepted it"
                .to_owned(),
        },
        source => Error::Engine {
            run: run.to_owned(),
            source: Box::new(source),
        },
    }
}

/// The step's id without its gate mark, held to the store's rules.
fn step_of(step: &str) -> Result<String, Error> {
    let step = step.trim_end_matches('!');
    storage::StepId::parse(step).map_err(|_| Error::InvalidInput {
        field: "step",
        reason: "a step id is letters, digits and `_`".to_owned(),
    })?;
    Ok(step.to_owned())
}

/// The latest proposal recorded for the step, as shown.
async fn shown(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    step: &str,
) -> Result<RepairProposalView, Error> {
    let step = step_of(step)?;
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    let shared = state.shared.clone();
    let run = run_id.to_owned();
    blocking("read a repair proposal", move || {
        let proposed = shared
            .engine
            .repair_proposal(&record.id, &step)
            .map_err(|source| engine_error(&run, &step, source))?
            .ok_or(Error::NotFound {
                what: "repair proposal",
                id: String::new(),
            })?;
        proposal_view(&shared, &record, &step, &proposed)
    })
    .await?
}

/// `GET /api/runs/{id}/steps/{step}/repair`: the proposal recorded for the step.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
) -> Result<Json<RepairProposalView>, Error> {
    Ok(Json(shown(&state, &authenticated, &run_id, &step).await?))
}

async fn propose_for(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    step: &str,
) -> Result<RepairProposalView, Error> {
    let step = step_of(step)?;
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    let shared = state.shared.clone();
    let actor = authenticated.actor.clone();
    let run = run_id.to_owned();
    blocking("propose a repair", move || {
        // Audited first (who asked, for which step): an entry that cannot be written asks no
        // model and records no proposal. Who proposed what is in the run's journal.
        audit(
            &shared,
            &record.account,
            actor,
            storage::AuditAction::RepairProposed,
            &json!({"run": run, "step": step}),
        )?;
        let proposed = shared
            .engine
            .propose_repair(&record.id, &step)
            .map_err(|source| engine_error(&run, &step, source))?;
        proposal_view(&shared, &record, &step, &proposed)
    })
    .await?
}

/// `POST /api/runs/{id}/steps/{step}/repair`: the assistant's proposal, checked before it is
/// answered, recorded in the run.
pub(crate) async fn propose(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
) -> Result<Json<RepairProposalView>, Error> {
    Ok(Json(
        propose_for(&state, &authenticated, &run_id, &step).await?,
    ))
}

/// Accepts the recorded proposal for the step as the signed-in person, through `door`.
async fn accept_for(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    step: &str,
    door: Door,
    note: String,
    shown: Option<String>,
) -> Result<RepairAcceptedView, Error> {
    crate::text_limits::check_note(&note)?;
    let step = step_of(step)?;
    // A version is accepted by a person (never a key, which cannot act as one); the policy
    // table already lets only people in, and this says so where it matters.
    let Actor::Person { id: person, .. } = &authenticated.actor else {
        return Err(refused(
            run_id,
            &step,
            "a repair is accepted by a signed-in person, recorded by name".to_owned(),
        ));
    };
    let person = person.clone();
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    let shared = state.shared.clone();
    let actor = authenticated.actor.clone();
    let run = run_id.to_owned();
    let outcome = blocking("accept a repair", move || {
        let decision = engine::PersonDecision {
            who: actor.clone(),
            door,
            note,
        };
        // Announced first: an intent that cannot be written saves no version and runs nothing.
        let announced = crate::workspace_recovery::announce(
            &shared,
            &record.account,
            actor.clone(),
            &workspace::Author::Assistant {
                accepted_by: person.clone(),
            },
            &[format!("workflows/{}.yaml", record.workflow_name)],
        )?;
        let intent = announced.intent.clone();
        let accepted = shared
            .engine
            .accept_repair(&record.id, &step, &person, decision, shown.as_deref())
            .map_err(|error| match error {
                engine::RepairError::Engine(source) => engine_error(&run, &step, source),
                engine::RepairError::Save(source) => Error::definitions(source),
            });
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                audit(
                    &shared,
                    &record.account,
                    actor,
                    storage::AuditAction::RepairAcceptRefused,
                    &json!({"intent": intent, "run": run, "step": step,
                            "reason": error.status_and_public_message().1}),
                )?;
                return Err(error);
            }
        };
        audit(
            &shared,
            &record.account,
            actor,
            storage::AuditAction::WorkflowVersion,
            &json!({"intent": intent, "workflow": accepted.version.name,
                    "revision": accepted.version.revision,
                    "version": accepted.version.number, "author": "assistant",
                    "accepted_by": person, "run": run, "step": step}),
        )?;
        Ok::<_, Error>(accepted)
    })
    .await??;
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    Ok(RepairAcceptedView {
        version: version_view(&outcome.version),
        run: detail(&state.shared, record)?,
    })
}

/// `POST /api/runs/{id}/steps/{step}/repair/accept`: the proposal becomes the workflow's next
/// version, authored by the assistant and accepted by this person, and the run goes on from
/// the step with it.
pub(crate) async fn accept(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
    Json(request): Json<AcceptRepairRequest>,
) -> Result<Accepted<RepairAcceptedView>, Error> {
    Ok(accepted(
        &run_id,
        accept_for(
            &state,
            &authenticated,
            &run_id,
            &step,
            Door::Api,
            request.note,
            request.proposal,
        )
        .await?,
    ))
}

/// The console's accept form.
#[derive(Deserialize)]
pub(crate) struct AcceptForm {
    #[serde(default)]
    note: String,
    /// The proposal the page showed (its code's SHA-256): the console always sends it.
    #[serde(default)]
    proposal: String,
}

/// `POST /runs/{id}/steps/{step}/repair`: the console asks for a proposal; back to the run's
/// page, which shows it.
pub(crate) async fn propose_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
) -> Result<Response, Error> {
    propose_for(&state, &authenticated, &run_id, &step).await?;
    Ok(Redirect::to(&format!("/runs/{run_id}#repair")).into_response())
}

/// `POST /runs/{id}/steps/{step}/repair/accept`: the console's acceptance, recorded with the
/// door `console`; back to the run's page.
pub(crate) async fn accept_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
    Form(form): Form<AcceptForm>,
) -> Result<Response, Error> {
    accept_for(
        &state,
        &authenticated,
        &run_id,
        &step,
        Door::Console,
        form.note,
        Some(form.proposal),
    )
    .await?;
    Ok(Redirect::to(&format!("/runs/{run_id}")).into_response())
}

/// The run page's repair panel: for a run in `needs_repair`, its step, the proposal recorded
/// (if any), and what this person may do.
pub(crate) struct RepairPanel {
    pub(crate) step: String,
    pub(crate) proposal: Option<RepairProposalView>,
    pub(crate) may_propose: bool,
    pub(crate) may_accept: bool,
}

/// The panel of a run in `needs_repair` because of a code step's attempt.
pub(crate) fn repair_panel(
    shared: &Shared,
    authenticated: &Authenticated,
    record: &RunRecord,
) -> Result<Option<RepairPanel>, Error> {
    if record.status != RunStatus::NeedsRepair {
        return Ok(None);
    }
    let Some(latest) = shared
        .store
        .attempts(&record.id)
        .map_err(Error::storage("read attempts"))?
        .into_iter()
        .last()
        .filter(|attempt| attempt.status == AttemptStatus::NeedsRepair)
    else {
        return Ok(None);
    };
    let step = latest.step_id;
    let proposal = shared
        .engine
        .repair_proposal(&record.id, &step)
        .map_err(|source| engine_error(record.id.as_str(), &step, source))?
        .map(|proposed| proposal_view(shared, record, &step, &proposed))
        .transpose()?
        .filter(|view| view.current);
    let principal = &authenticated.principal;
    Ok(Some(RepairPanel {
        may_propose: crate::chrome::may(principal, "POST", "/runs/{id}/steps/{step}/repair"),
        may_accept: crate::chrome::may(principal, "POST", "/runs/{id}/steps/{step}/repair/accept"),
        step,
        proposal,
    }))
}
