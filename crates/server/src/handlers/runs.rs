//! Runs over the JSON API, and gate decisions (G23): recorded by the engine with who decided
//! (the person, or the key itself, never the key's creator), the door and the note.

use api_types::runs::{Event, RunListItem, RunSummary, StepSummary};
use api_types::{
    ApprovalView, ApproveLinkView, DecisionRequest, DecisionView, RetryRequest, RunDetail,
};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use crate::handlers::console::RefusedForm;
use crate::handlers::{Accepted, accepted};
use axum::{Extension, Form, Json};
use engine::journal::Entry;
use engine::{Decision, GateDecision};
use serde::Deserialize;
use storage::{AccountId, Door, RunId, RunRecord, RunStatus};

use crate::authn::Authenticated;
use crate::handlers::{approve, blocking, ensure_same_account};
use crate::state::Shared;
use crate::{AppState, Error};

/// The run with this id if it belongs to the principal's account; otherwise the same 404 as
/// for a run that does not exist.
pub(crate) fn run_in_scope(
    shared: &Shared,
    authenticated: &Authenticated,
    run_id: &str,
) -> Result<RunRecord, Error> {
    let not_found = || Error::NotFound {
        what: "run",
        id: run_id.to_owned(),
    };
    // Text that is no run id names no run: the same answer as an unknown one.
    let run = RunId::parse(run_id).map_err(|_| not_found())?;
    let record = shared
        .store
        .run(&run)
        .map_err(Error::storage("read run"))?
        .ok_or_else(not_found)?;
    ensure_same_account(authenticated, &record.account, "run", run_id)?;
    Ok(record)
}

/// `GET /api/runs`: the account's runs, newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<RunListItem>>, Error> {
    let runs = state
        .shared
        .store
        .runs(&authenticated.account())
        .map_err(Error::storage("list runs"))?;
    Ok(Json(
        runs.into_iter()
            .map(|run| RunListItem {
                run: run.id.to_string(),
                workflow: run.workflow_name,
                number: run.number,
                status: run.status.as_str().to_owned(),
                created_at: run.created_at.0,
                updated_at: run.updated_at.0,
            })
            .collect(),
    ))
}

fn summary_json(summary: engine::RunSummary) -> RunSummary {
    RunSummary {
        run: summary.run.to_string(),
        status: summary.status.as_str().to_owned(),
        waiting_at: summary.waiting_at,
        reason: summary.reason,
        steps: summary
            .steps
            .into_iter()
            .map(|step| StepSummary {
                step: step.step_id,
                attempt: step.attempt,
                status: step.status.as_str().to_owned(),
                output: step.output,
                reason: step.reason,
            })
            .collect(),
    }
}

/// A run's detail: its summary from the engine and its decisions.
pub(crate) fn detail(shared: &Shared, record: RunRecord) -> Result<RunDetail, Error> {
    let summary = shared
        .engine
        .summary(&record.id)
        .map_err(Error::engine_of(&record.id))?;
    let decisions = shared
        .store
        .decisions(&record.id)
        .map_err(Error::storage("read decisions"))?;
    Ok(RunDetail {
        summary: summary_json(summary),
        workflow: record.workflow_name,
        number: record.number,
        created_at: record.created_at.0,
        updated_at: record.updated_at.0,
        decisions: decisions
            .into_iter()
            .map(|decision| DecisionView {
                step: decision.step_id,
                attempt: decision.attempt,
                decision: decision.kind.as_str().to_owned(),
                actor_kind: decision.who.kind().to_owned(),
                actor_id: decision.who.id().to_owned(),
                actor_name: decision.who.display_name().to_owned(),
                door: decision.door.as_str().to_owned(),
                note: decision.note,
                at: decision.at.0,
            })
            .collect(),
    })
}

/// `GET /api/runs/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Json<RunDetail>, Error> {
    let record = run_in_scope(&state.shared, &authenticated, &run_id)?;
    Ok(Json(detail(&state.shared, record)?))
}

/// One page of the account's gates waiting for a decision, the newest run first, after
/// `after`: read by keyset from the store, which reads only waiting runs (at most `limit + 1`
/// of them), never the account's other runs; where the next page starts, when there is one.
pub(crate) fn waiting_gates_page(
    shared: &Shared,
    account: &AccountId,
    after: Option<&storage::RunCursor>,
    limit: usize,
) -> Result<(Vec<ApprovalView>, Option<storage::RunCursor>), Error> {
    let filter = storage::RunFilter {
        status: Some(RunStatus::WaitingApproval),
        ..storage::RunFilter::default()
    };
    let page = shared
        .store
        .runs_page(account, &filter, after, limit)
        .map_err(Error::storage("list a page of waiting runs"))?;
    let mut waiting = Vec::with_capacity(page.runs.len());
    for run in page.runs {
        let Some(parked) = shared
            .store
            .parked(&run.id)
            .map_err(Error::storage("read parked state"))?
        else {
            continue;
        };
        waiting.push(ApprovalView {
            run: run.id.to_string(),
            workflow: run.workflow_name,
            number: run.number,
            step: parked.step_id,
            waiting_since: parked.parked_at.0,
        });
    }
    Ok((waiting, page.next))
}

/// How many waiting runs one read of [`waiting_gates`] takes.
const WAITING_READ: usize = 200;

/// Every gate of the account waiting for a decision, oldest first (the API's list): the
/// waiting runs only, page by page.
pub(crate) fn waiting_gates(
    shared: &Shared,
    account: &AccountId,
) -> Result<Vec<ApprovalView>, Error> {
    let mut waiting = Vec::new();
    let mut after = None;
    loop {
        let (mut page, next) = waiting_gates_page(shared, account, after.as_ref(), WAITING_READ)?;
        waiting.append(&mut page);
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    waiting.sort_by_key(|approval| approval.waiting_since);
    Ok(waiting)
}

/// `GET /api/runs/{id}/approve-link`: the approve link of the gate the run waits at, for a
/// person who may decide it (a key never gets one: the policy table refuses keys, and a
/// viewer is refused here too). A run that waits at no gate is not found.
pub(crate) async fn approve_link(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Json<ApproveLinkView>, Error> {
    let shared = &state.shared;
    let record = run_in_scope(shared, &authenticated, &run_id)?;
    if !approve::gets_links(&authenticated, &record.account) {
        return Err(Error::Forbidden {
            principal: authenticated.principal.role().as_str().to_owned(),
            method: "GET".to_owned(),
            route: "/api/runs/{id}/approve-link".to_owned(),
        });
    }
    let gate = approve::waiting_gate(shared, &record.id)?.ok_or_else(|| Error::NotFound {
        what: "gate waiting for a decision in run",
        id: run_id.clone(),
    })?;
    Ok(Json(ApproveLinkView {
        path: approve::link_path(shared, &gate)?,
        run: gate.run.to_string(),
        step: gate.step.to_string(),
        attempt: gate.attempt,
    }))
}

/// `GET /api/approvals`: the gates of the account waiting for a decision.
pub(crate) async fn approvals(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<ApprovalView>>, Error> {
    Ok(Json(waiting_gates(
        &state.shared,
        &authenticated.account(),
    )?))
}

/// `GET /api/runs/{id}/events`: the run's event log (scrubbed when it was written).
pub(crate) async fn events(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Json<Vec<Event>>, Error> {
    let record = run_in_scope(&state.shared, &authenticated, &run_id)?;
    let entries = journal(&state.shared, &record)?;
    Ok(Json(
        entries
            .iter()
            .map(|entry| wire_event(&record, entry))
            .collect::<Result<_, _>>()?,
    ))
}

/// A run's journal, every event read into its type (G25).
pub(crate) fn journal(shared: &Shared, record: &RunRecord) -> Result<Vec<Entry>, Error> {
    shared
        .engine
        .journal(&record.id)
        .map_err(Error::engine_of(&record.id))
}

/// One event as the wire shows it: its kind's stable name and its payload in the journal's
/// shape.
pub(crate) fn wire_event(record: &RunRecord, entry: &Entry) -> Result<Event, Error> {
    let kind = entry.event.kind().as_str();
    let payload = entry.event.payload_json().map_err(|source| Error::Engine {
        run: record.id.to_string(),
        source: Box::new(engine::Error::JournalEncode { kind, source }),
    })?;
    Ok(Event {
        seq: entry.seq,
        kind: kind.to_owned(),
        at: entry.at.0,
        version: entry.version,
        payload,
    })
}

/// Decides the gate `step` of the run through `door`. The engine records the decision (and
/// its audit entry) with the principal's actor: a key decides as the key.
pub(crate) async fn decide(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    step: &str,
    kind: GateDecision,
    door: Door,
    note: String,
) -> Result<RunDetail, Error> {
    let who = authenticated.actor.clone();
    let gate = step.to_owned();
    let conflict = |source: &engine::Error| {
        matches!(
            source,
            engine::Error::NotWaitingApproval { .. }
                | engine::Error::NotParkedAt { .. }
                | engine::Error::Storage(storage::Error::AlreadyDecided { .. })
        )
    };
    let act = move |engine: &engine::Engine, run: &RunId, note| {
        let decision = Decision {
            kind,
            who,
            door,
            note,
        };
        engine.decide(run, &gate, decision)
    };
    carry_out(
        state,
        authenticated,
        run_id,
        "a decision",
        conflict,
        note,
        act,
    )
    .await
}

/// Carries out a person's decision (`what`, in words) on the run `run_id`: its note held to
/// the limit, the run to the caller's account, then `act` (given the note) on a blocking
/// thread. An engine
/// error becomes the answer: one `conflict` names (the run is not where the decision needs
/// it) a 409, a missing run a 404, a blank note a 400 naming the note, anything else the
/// engine's error. Answers the run as it stands after.
async fn carry_out<T: Send + 'static>(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    what: &'static str,
    conflict: fn(&engine::Error) -> bool,
    note: String,
    act: impl FnOnce(&engine::Engine, &RunId, String) -> Result<T, engine::Error> + Send + 'static,
) -> Result<RunDetail, Error> {
    crate::text_limits::check_note(&note)?;
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    let engine = state.shared.engine.clone();
    let run = record.id.clone();
    let outcome = blocking(what, move || act(&engine, &run, note)).await?;
    outcome.map_err(|source| match source {
        source if conflict(&source) => Error::RunConflict {
            run: run_id.to_owned(),
            source: Box::new(source),
        },
        engine::Error::UnknownRun { .. } => Error::NotFound {
            what: "run",
            id: run_id.to_owned(),
        },
        engine::Error::NoteRequired { .. } => Error::InvalidInput {
            field: "note",
            reason: format!(
                "{what} needs a note saying why; it is kept in the record with who decided"
            ),
        },
        engine::Error::RetryInputsRefused { reason, .. } => Error::InvalidInput {
            field: "inputs",
            reason,
        },
        source => Error::Engine {
            run: run_id.to_owned(),
            source: Box::new(source),
        },
    })?;
    let record = run_in_scope(&state.shared, authenticated, run_id)?;
    detail(&state.shared, record)
}

/// `POST /api/runs/{id}/steps/{step}/approve`.
pub(crate) async fn approve(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
    Json(request): Json<DecisionRequest>,
) -> Result<Accepted<RunDetail>, Error> {
    let detail = decide(
        &state,
        &authenticated,
        &run_id,
        &step,
        GateDecision::Approve,
        Door::Api,
        request.note,
    )
    .await?;
    Ok(accepted(&run_id, detail))
}

/// `POST /api/runs/{id}/steps/{step}/reject`.
pub(crate) async fn reject(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
    Json(request): Json<DecisionRequest>,
) -> Result<Accepted<RunDetail>, Error> {
    let detail = decide(
        &state,
        &authenticated,
        &run_id,
        &step,
        GateDecision::Reject,
        Door::Api,
        request.note,
    )
    .await?;
    Ok(accepted(&run_id, detail))
}

/// What a person does with a run that needs attention.
enum Attention {
    /// Runs the step that stopped it again (the only way an `unknown` attempt is repeated),
    /// when the attempt the person looked at is still its latest.
    Retry {
        step: String,
        attempt: u32,
        /// New inputs by name, each replacing the step's input of that name.
        inputs: Option<serde_json::Value>,
    },
    /// Ends the run.
    Stop,
}

/// Retries or stops a run in `needs_attention` (stop: or `needs_repair`) through `door`,
/// recorded with the principal's actor and the note (G14, G15). A run in any other state, at
/// another step or attempt, or held by another person's decision is a conflict.
async fn attend(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    what: Attention,
    door: Door,
    note: String,
) -> Result<RunDetail, Error> {
    let who = authenticated.actor.clone();
    let conflict = |source: &engine::Error| {
        matches!(
            source,
            engine::Error::NotNeedingAttention { .. }
                | engine::Error::NotTheStoppedStep { .. }
                | engine::Error::NeedsRepairNotRetry { .. }
                | engine::Error::DecisionInProgress { .. }
                | engine::Error::DecidedElsewhere { .. }
                | engine::Error::NotTheLatestAttempt { .. }
        )
    };
    let act = move |engine: &engine::Engine, run: &RunId, note| {
        let by = engine::PersonDecision { who, door, note };
        match what {
            Attention::Retry {
                step,
                attempt,
                inputs,
            } => engine.retry_attempt(run, &step, attempt, inputs, by),
            Attention::Stop => engine.stop(run, by),
        }
    };
    carry_out(
        state,
        authenticated,
        run_id,
        "a retry or a stop",
        conflict,
        note,
        act,
    )
    .await
}

/// `POST /api/runs/{id}/steps/{step}/attempts/{attempt}/retry`: runs the step that brought the
/// run to `needs_attention` again, with the inputs it had or with the request's new ones, if
/// `attempt` (the one the caller looked at) is still its latest.
pub(crate) async fn retry(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step, attempt)): Path<(String, String, u32)>,
    Json(request): Json<RetryRequest>,
) -> Result<Accepted<RunDetail>, Error> {
    let what = Attention::Retry {
        step,
        attempt,
        inputs: request.inputs.map(serde_json::Value::Object),
    };
    Ok(accepted(
        &run_id,
        attend(
            &state,
            &authenticated,
            &run_id,
            what,
            Door::Api,
            request.note,
        )
        .await?,
    ))
}

/// `POST /api/runs/{id}/stop`: ends a run that needs attention or waits for a repair.
pub(crate) async fn stop(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
    Json(request): Json<DecisionRequest>,
) -> Result<Accepted<RunDetail>, Error> {
    Ok(accepted(
        &run_id,
        attend(
            &state,
            &authenticated,
            &run_id,
            Attention::Stop,
            Door::Api,
            request.note,
        )
        .await?,
    ))
}

#[derive(Deserialize)]
pub(crate) struct AttendForm {
    /// `retry` or `stop`.
    pub(crate) decision: String,
    /// The step a retry runs again (the one that stopped the run), and its attempt the page
    /// showed.
    #[serde(default)]
    pub(crate) step: String,
    #[serde(default)]
    pub(crate) attempt: u32,
    #[serde(default)]
    pub(crate) note: String,
    /// A retry's new inputs, a JSON object by name; blank for the inputs the step had.
    #[serde(default)]
    pub(crate) inputs: String,
}

/// The form's new inputs: none when blank, else a JSON object (each entry replaces the step's
/// input of that name).
fn retry_inputs_of_form(text: &str) -> Result<Option<serde_json::Value>, Error> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(Some(value)),
        Ok(_) => Err(Error::InvalidInput {
            field: "inputs",
            reason: String::from(
                "the new inputs must be a JSON object by input name, such as {\"to\": \"ops@example.com\"}",
            ),
        }),
        Err(error) => Err(Error::InvalidInput {
            field: "inputs",
            reason: format!(
                "the new inputs are not JSON ({error}); write a JSON object by input name, such as {{\"to\": \"ops@example.com\"}}"
            ),
        }),
    }
}

/// `POST /runs/{id}/attend`: the console's retry-or-stop form for a run that needs attention
/// (CSRF-checked by the policy middleware), recorded with the door `console`; back to the
/// run's page.
pub(crate) async fn attend_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
    Form(form): Form<AttendForm>,
) -> Result<Response, Error> {
    // Another account's run is the same 404 as a missing one, whatever the form says.
    run_in_scope(&state.shared, &authenticated, &run_id)?;
    let typed = (form.note.clone(), form.inputs.clone());
    let (typed_step, typed_attempt) = (form.step.clone(), form.attempt);
    let attended = async {
        let what = match form.decision.as_str() {
            "retry" => Attention::Retry {
                step: form.step,
                attempt: form.attempt,
                inputs: retry_inputs_of_form(&form.inputs)?,
            },
            "stop" => Attention::Stop,
            _ => {
                return Err(Error::InvalidInput {
                    field: "decision",
                    reason: "it is either retry or stop".to_owned(),
                });
            }
        };
        attend(
            &state,
            &authenticated,
            &run_id,
            what,
            Door::Console,
            form.note,
        )
        .await
    }
    .await;
    after_run_form(
        &state,
        &authenticated,
        &run_id,
        attended.map(drop),
        (typed.0, typed.1),
        RefusedForm::Attend {
            step: typed_step,
            attempt: typed_attempt,
        },
    )
}

/// The answer to a run page's form: on to the run's page; for a mistake in what was typed, the
/// run page again, the refusal beside `form` and what was typed (the note, the inputs) kept
/// (issue 42, point 8).
fn after_run_form(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    outcome: Result<(), Error>,
    (note, inputs): (String, String),
    form: RefusedForm,
) -> Result<Response, Error> {
    let Err(error) = outcome else {
        return Ok(Redirect::to(&format!("/runs/{run_id}")).into_response());
    };
    crate::handlers::console::run_page_for(
        &state.shared,
        authenticated,
        run_id,
        Some(crate::handlers::console::RunFormRefusal {
            mistake: crate::html::FormMistake::of(error)?,
            note,
            inputs,
            form,
        }),
    )
}

#[derive(Deserialize)]
pub(crate) struct DecideForm {
    /// `approve` or `reject`.
    pub(crate) decision: String,
    #[serde(default)]
    pub(crate) note: String,
}

impl DecideForm {
    /// The decision the form's `decision` field names.
    pub(crate) fn kind(&self) -> Result<GateDecision, Error> {
        match self.decision.as_str() {
            "approve" => Ok(GateDecision::Approve),
            "reject" => Ok(GateDecision::Reject),
            _ => Err(Error::InvalidInput {
                field: "decision",
                reason: "it is either approve or reject".to_owned(),
            }),
        }
    }
}

/// `POST /runs/{id}/steps/{step}/decide`: the console's decision form (CSRF-checked by the
/// policy middleware), recorded with the door `console`; back to the run's page.
pub(crate) async fn decide_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path((run_id, step)): Path<(String, String)>,
    Form(form): Form<DecideForm>,
) -> Result<Response, Error> {
    // Another account's run is the same 404 as a missing one, whatever the form says.
    run_in_scope(&state.shared, &authenticated, &run_id)?;
    let note = form.note.clone();
    let decided = async {
        let kind = form.kind()?;
        decide(
            &state,
            &authenticated,
            &run_id,
            &step,
            kind,
            Door::Console,
            form.note,
        )
        .await
    }
    .await;
    after_run_form(
        &state,
        &authenticated,
        &run_id,
        decided.map(drop),
        (note, String::new()),
        RefusedForm::Decide { step },
    )
}
