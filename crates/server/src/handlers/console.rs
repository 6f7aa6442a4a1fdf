//! The console's run pages: the runs list (filtered, newest first, paged in the store), the
//! run page (a card per step, the gate with its reach and inputs, the timeline in words, live
//! while the run moves) and the approvals waiting for a decision. Templates in
//! `crates/server/templates/`; every form carries the session's CSRF token.

use askama::Template;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use storage::{AccountId, RunCursor, RunFilter, RunId, RunRecord, RunStatus, Timestamp};

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome, may};
use engine::journal::Entry;

use crate::handlers::gate_view::{GatePanel, gate_panel};
use crate::handlers::run_view::{Scrub, Status, StepCard, TimelineLine, step_cards, timeline, who};
use crate::handlers::runs::{detail, journal, run_in_scope, waiting_gates_page};
use crate::handlers::value_view::{Shape, Span};
use crate::handlers::{account_redactor, approve};
use crate::html::render;
use crate::state::Shared;
use crate::{AppState, Error};

/// How many runs one page of the list shows.
pub(crate) const RUNS_PER_PAGE: usize = 50;

/// The query of `GET /runs`: every field optional, empty meaning "any".
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunsQuery {
    #[serde(default)]
    workflow: String,
    #[serde(default)]
    status: String,
    /// `KIND:ID` (`person:p_1`), or `KIND:` for any actor of the kind.
    #[serde(default)]
    started_by: String,
    /// Where the page starts: `CREATED_AT.RUN_ID` of the last run of the page before.
    #[serde(default)]
    after: String,
}

/// One choice of the "Started by" filter.
pub(crate) struct Starter {
    value: String,
    label: String,
}

/// One row of the runs list.
pub(crate) struct RunRow {
    id: String,
    workflow: String,
    /// The run's short number within its workflow.
    number: u64,
    status: Status,
    /// Where a run waits for a person (issue 42, point 3): "at pay, for a decision".
    waiting_at: Option<String>,
    /// How long it ran; a run still going, how long so far.
    took: String,
    started_by: String,
    created: crate::html::Moment,
    updated: crate::html::Moment,
}

#[derive(Template)]
#[template(path = "runs.html")]
struct RunsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    workflows: Vec<String>,
    statuses: Vec<Status>,
    starters: Vec<Starter>,
    filter_workflow: String,
    filter_status: String,
    filter_started_by: String,
    filtered: bool,
    after: bool,
    first_href: String,
    next_href: Option<String>,
    runs: Vec<RunRow>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        field,
        reason: reason.into(),
    }
}

/// The store's filter for a query, or what is wrong with it.
fn run_filter(query: &RunsQuery) -> Result<RunFilter, Error> {
    let status = match query.status.as_str() {
        "" => None,
        name => Some(
            RunStatus::ALL
                .iter()
                .copied()
                .find(|status| status.as_str() == name)
                .ok_or_else(|| {
                    invalid(
                        "status",
                        format!(
                            "there is no run status `{name}`; one of {}",
                            RunStatus::ALL
                                .iter()
                                .map(|status| status.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })?,
        ),
    };
    let started_by = match query.started_by.split_once(':') {
        None if query.started_by.is_empty() => None,
        None => {
            return Err(invalid(
                "started_by",
                "write who started a run as KIND:ID (person:p_1), or KIND: for any of a kind",
            ));
        }
        Some((kind, id)) => Some((kind.to_owned(), (!id.is_empty()).then(|| id.to_owned()))),
    };
    Ok(RunFilter {
        workflow: (!query.workflow.is_empty()).then(|| query.workflow.clone()),
        status,
        started_by,
    })
}

fn run_cursor(after: &str) -> Result<Option<RunCursor>, Error> {
    if after.is_empty() {
        return Ok(None);
    }
    let (created_at, id) = after
        .split_once('.')
        .and_then(|(created_at, id)| {
            Some((created_at.parse::<i64>().ok()?, RunId::parse(id).ok()?))
        })
        .ok_or_else(|| {
            invalid(
                "after",
                "a page starts after CREATED_AT.RUN_ID, as the list's own links write it",
            )
        })?;
    Ok(Some(RunCursor {
        created_at: Timestamp(created_at),
        id,
    }))
}

/// A query string of the filters (and a page start), each value percent-encoded.
fn runs_href(query: &RunsQuery, after: Option<&RunCursor>) -> String {
    let mut pairs = Vec::new();
    for (name, value) in [
        ("workflow", &query.workflow),
        ("status", &query.status),
        ("started_by", &query.started_by),
    ] {
        if !value.is_empty() {
            pairs.push(format!("{name}={}", percent_encode(value)));
        }
    }
    if let Some(cursor) = after {
        pairs.push(format!(
            "after={}",
            percent_encode(&format!("{}.{}", cursor.created_at.0, cursor.id.as_str()))
        ));
    }
    if pairs.is_empty() {
        "/runs".to_owned()
    } else {
        format!("/runs?{}", pairs.join("&"))
    }
}

/// Everything but RFC 3986's unreserved characters is percent-encoded in a query value.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(crate) fn percent_encode(text: &str) -> String {
    utf8_percent_encode(text, QUERY_VALUE).to_string()
}

fn starters(shared: &Shared, account: &AccountId) -> Result<Vec<Starter>, Error> {
    let mut starters: Vec<Starter> = shared
        .store
        .people(account)
        .map_err(Error::storage("list people"))?
        .into_iter()
        .map(|person| Starter {
            value: format!("person:{}", person.id),
            label: person.display_name,
        })
        .collect();
    starters.push(Starter {
        value: "api_key:".to_owned(),
        label: "Any API key".to_owned(),
    });
    starters.push(Starter {
        value: "cli:".to_owned(),
        label: "The command line".to_owned(),
    });
    Ok(starters)
}

fn workflow_names(shared: &Shared, account: &AccountId) -> Result<Vec<String>, Error> {
    match &shared.workflows {
        Some(source) => Ok(source.workflow_names(account)?),
        None => Ok(Vec::new()),
    }
}

fn run_row(shared: &Shared, run: RunRecord, now: i64) -> Result<RunRow, Error> {
    let waiting_at = match run.status {
        RunStatus::WaitingApproval => shared
            .store
            .parked(&run.id)
            .map_err(Error::storage("read parked state"))?
            .map(|parked| format!("at {}, for a decision", parked.step_id)),
        RunStatus::NeedsAttention | RunStatus::NeedsRepair => {
            Some("for a person to retry or stop it".to_owned())
        }
        _ => None,
    };
    let took = crate::handlers::run_view::took(
        run.created_at.0,
        run.updated_at.0,
        now,
        run.status.is_terminal(),
    );
    Ok(RunRow {
        waiting_at,
        took,
        status: Status::of_run(run.status.as_str()),
        started_by: who(&run.started_by),
        created: crate::html::moment(run.created_at.0, now),
        updated: crate::html::moment(run.updated_at.0, now),
        id: run.id.to_string(),
        workflow: run.workflow_name,
        number: run.number,
    })
}

/// `GET /runs`: the account's runs, newest first, filtered, one page at a time.
pub(crate) async fn runs_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(query): Query<RunsQuery>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let account = authenticated.account();
    let filter = run_filter(&query)?;
    let after = run_cursor(&query.after)?;
    let page = shared
        .store
        .runs_page(&account, &filter, after.as_ref(), RUNS_PER_PAGE)
        .map_err(Error::storage("list a page of runs"))?;
    let filtered = filter != RunFilter::default();
    let now = shared.now().0;
    Ok(render(&RunsPage {
        title: "Runs",
        chrome: chrome::current(),
        workflows: workflow_names(shared, &account)?,
        statuses: RunStatus::ALL
            .iter()
            .map(|status| Status::of_run(status.as_str()))
            .collect(),
        starters: starters(shared, &account)?,
        filtered,
        after: after.is_some(),
        first_href: runs_href(&query, None),
        next_href: page.next.as_ref().map(|next| runs_href(&query, Some(next))),
        filter_workflow: query.workflow,
        filter_status: query.status,
        filter_started_by: query.started_by,
        runs: page
            .runs
            .into_iter()
            .map(|run| run_row(shared, run, now))
            .collect::<Result<_, _>>()?,
    }))
}

/// The retry-or-stop form of a run that waits for a person.
struct AttentionPanel {
    /// What a retry runs again; `None` when only stopping is offered (`needs_repair`).
    retry: Option<RetryOf>,
    /// A refused retry or stop: why, beside the form, and what was typed, kept.
    refused: Option<String>,
    note: String,
    inputs: String,
}

/// A form of the run page the server refused for what was typed (issue 42, point 8): the run
/// page answers again with the refusal beside that form and the typed note (and inputs) kept.
pub(crate) struct RunFormRefusal {
    pub(crate) mistake: crate::html::FormMistake,
    pub(crate) note: String,
    pub(crate) inputs: String,
    pub(crate) form: RefusedForm,
}

/// Which form of the run page was refused.
pub(crate) enum RefusedForm {
    /// Retry or stop, from the form of `attempt` of `step` (empty and 0 where only stopping was
    /// offered).
    Attend { step: String, attempt: u32 },
    /// Approve or reject at the gate of `step`.
    Decide { step: String },
}

/// The step that stopped the run, and its attempt this page shows.
struct RetryOf {
    step: String,
    attempt: u32,
}

#[derive(Template)]
#[template(path = "run.html")]
struct RunPage {
    /// The server's clock when the page was made (milliseconds since the epoch): the page's
    /// script counts a running run's and step's time from it.
    now: i64,
    /// When the run started, while it runs.
    running_since: Option<i64>,
    /// How long the run has run, while it runs.
    elapsed: Option<String>,
    title: String,
    chrome: Option<Chrome>,
    /// Whether the run still moves: the page listens to its live stream.
    live: bool,
    /// The newest event the page shows: its live stream reports only what comes after it.
    live_after: u64,
    run_id: String,
    workflow: String,
    /// The run's short number within its workflow.
    number: u64,
    started_by: String,
    created: crate::html::Moment,
    updated: crate::html::Moment,
    status: Status,
    reason: Option<String>,
    /// What a person does next, in words (issue 42, point 5: no routes or commands here).
    next_steps: Option<String>,
    /// The same through the API and the command line, folded away under "For scripts".
    for_scripts: Option<String>,
    may_share: bool,
    /// Whether the run has an agent step: only then is there a tool result to share.
    has_agent_steps: bool,
    csrf: String,
    gate: Option<GatePanel>,
    /// A step in `needs_repair`: the assistant's proposal, and accepting it (G9).
    repair: Option<crate::handlers::repairs::RepairPanel>,
    /// A run in `needs_attention` (retry or stop) or `needs_repair` (stop), for a person who
    /// may decide it (G15).
    attention: Option<AttentionPanel>,
    /// A refused decision at the gate: why, beside the form, and the note typed, kept.
    decide_refused: Option<String>,
    decide_note: String,
    /// A refused form whose panel is gone (someone else decided meanwhile): why, on its own.
    refused_elsewhere: Option<String>,
    /// The workflow version the run runs (issue 17 §3).
    version: String,
    cards: Vec<StepCard>,
    decisions: Vec<String>,
    /// The approve-link mail of its gates (issue 41), one sentence per gate and attempt.
    mail: Vec<String>,
    timeline: Vec<TimelineLine>,
}

/// What a person types next, for a run that waits on a person.
/// What a person does next with a run that waits on a person, in words; and the same for
/// scripts and the command line, which the page folds away.
fn next_steps(
    run: &str,
    status: &str,
    waiting_at: Option<&str>,
) -> (Option<String>, Option<String>) {
    match status {
        "waiting_approval" => (
            Some(
                "Decide below: approving runs the step with the inputs shown, rejecting ends \
                 the run."
                    .to_owned(),
            ),
            Some(format!(
                "POST /api/runs/{run}/steps/{step}/approve (or .../reject) with a note. \
                 (stepward approve on this machine is refused while this server runs: one \
                 process drives a data directory's runs.)",
                step = waiting_at.unwrap_or("STEP")
            )),
        ),
        "needs_repair" => (
            Some(
                "The assistant can propose standard-library code for the step below, which a \
                 person who may save workflows accepts. Without a repair, the form below stops \
                 the run."
                    .to_owned(),
            ),
            Some(format!(
                "stepward repair {run} STEP proposes a repair from the command line; POST \
                 /api/runs/{run}/stop with a note stops the run."
            )),
        ),
        "needs_attention" => (
            Some(
                "A person decides what happens next, with the form below: retrying runs the \
                 step again (it may already have acted: look at its record first), stopping \
                 ends the run."
                    .to_owned(),
            ),
            Some(format!(
                "POST /api/runs/{run}/steps/STEP/attempts/N/retry (a person; N the attempt you \
                 looked at; optional new inputs as \"inputs\", an object by name) or \
                 /api/runs/{run}/stop, with a note."
            )),
        ),
        _ => (None, None),
    }
}

/// Prose shows names, not code: an id the record quotes in backticks (`pay`) reads “pay”.
pub(crate) fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open = true;
    for character in text.chars() {
        if character == '`' {
            out.push(if open { '“' } else { '”' });
            open = !open;
        } else {
            out.push(character);
        }
    }
    out
}

/// `GET /runs/{id}`: the run page.
pub(crate) async fn run_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Response, Error> {
    run_page_for(&state.shared, &authenticated, &run_id, None)
}

/// The run page, with a refused retry-or-stop form beside its form when there is one.
pub(crate) fn run_page_for(
    shared: &Shared,
    authenticated: &Authenticated,
    run_id: &str,
    refused: Option<RunFormRefusal>,
) -> Result<Response, Error> {
    let authenticated = authenticated.clone();
    let record = run_in_scope(shared, &authenticated, run_id)?;
    let entries = journal(shared, &record)?;
    let now = shared.clock.now().0;
    let live = shared
        .store
        .live_output(&record.id)
        .map_err(Error::storage("read a run's live output"))?;
    let workflow = spec::parse_workflow_within(
        &record.workflow_file_name,
        &record.workflow_source,
        shared.engine.limit_maxima(),
    )
    .ok();
    let order: Vec<String> = match &workflow {
        Some(workflow) => workflow
            .steps()
            .iter()
            .map(|step| step.id().to_owned())
            .collect(),
        None => Vec::new(),
    };
    // What the page shows is scrubbed with the account's values as they are now, before it is
    // formatted (G16); the served scrub of the page's bytes then runs as on every answer.
    let redactor = account_redactor(shared, &record.account)?;
    let scrub = Scrub::with(&redactor);
    let gate = match &record.status {
        RunStatus::WaitingApproval => shared
            .store
            .parked(&record.id)
            .map_err(Error::storage("read parked state"))?
            .map(|parked| {
                gate_panel(
                    shared,
                    &authenticated,
                    &scrub,
                    &record,
                    workflow.as_ref(),
                    &parked.step_id,
                )
            })
            .transpose()?,
        _ => None,
    };
    let repair = crate::handlers::repairs::repair_panel(shared, &authenticated, &record)?;
    let may_attend = authenticated.session.is_some()
        && may(&authenticated.principal, "POST", "/runs/{id}/attend");
    let attention = match record.status {
        RunStatus::NeedsAttention if may_attend => {
            let latest = shared
                .store
                .attempts(&record.id)
                .map_err(Error::storage("read the run's attempts"))?
                .into_iter()
                .last();
            Some(AttentionPanel {
                retry: latest.map(|attempt| RetryOf {
                    step: attempt.step_id.to_string(),
                    attempt: attempt.attempt,
                }),
                refused: None,
                note: String::new(),
                inputs: String::new(),
            })
        }
        RunStatus::NeedsRepair if may_attend => Some(AttentionPanel {
            retry: None,
            refused: None,
            note: String::new(),
            inputs: String::new(),
        }),
        _ => None,
    };
    let status_code = refused.as_ref().map(|refused| refused.mistake.status);
    let mut refused_elsewhere = None;
    let (mut decide_refused, mut decide_note) = (None, String::new());
    let refused = match refused {
        Some(RunFormRefusal {
            form: RefusedForm::Decide { step },
            mistake,
            note,
            ..
        }) => {
            // Beside the gate's form only when the run still waits at the gate it was for;
            // a run that moved on to another gate gets the refusal on its own, and its form
            // empty (never the note meant for the other gate).
            if gate.as_ref().is_some_and(|gate| gate.step == step) {
                decide_refused = Some(mistake.message);
                decide_note = note;
            } else {
                refused_elsewhere = Some(mistake.message);
            }
            None
        }
        other => other,
    };
    let attention = match (attention, refused) {
        // Beside the form only when it is for the decision the page offers now (the same
        // attempt of the same step, or a form that named none): never the inputs typed for
        // one attempt beside another.
        (Some(panel), Some(refused))
            if matches!(&refused.form, RefusedForm::Attend { step, attempt }
            if step.is_empty() || panel.retry.as_ref().is_some_and(|retry| {
                retry.step == *step && retry.attempt == *attempt
            })) =>
        {
            Some(AttentionPanel {
                refused: Some(refused.mistake.message),
                note: refused.note,
                inputs: refused.inputs,
                ..panel
            })
        }
        (attention, Some(refused)) => {
            refused_elsewhere = Some(refused.mistake.message);
            attention
        }
        (attention, None) => attention,
    };
    let started_by = who(&record.started_by);
    let mail = crate::mail::run_page_lines(
        &shared
            .store
            .gate_mail(&record.id)
            .map_err(Error::storage("read a run's mail"))?,
        &|text| scrub.text(text),
    );
    let detail = detail(shared, record.clone())?;
    let decisions = detail
        .decisions
        .iter()
        .map(|decision| {
            format!(
                "{} {} by {} through the {}{}",
                decision.decision,
                decision.step.as_deref().unwrap_or("the run"),
                if decision.actor_name.is_empty() {
                    &decision.actor_id
                } else {
                    &decision.actor_name
                },
                decision.door,
                if decision.note.is_empty() {
                    String::new()
                } else {
                    format!(": {}", decision.note)
                }
            )
        })
        .collect();
    let next = next_steps(
        record.id.as_str(),
        record.status.as_str(),
        detail.summary.waiting_at.as_deref(),
    );
    let chrome = chrome::current();
    let page = render(&RunPage {
        title: format!("Run {}", record.id.as_str()),
        // A page that answers a refused form is not live: a live update would replace the
        // refusal and what was typed, and it is served at the form's address, not the run's.
        live: !record.status.is_terminal() && status_code.is_none(),
        live_after: entries.last().map_or(0, |entry| entry.seq),
        csrf: chrome
            .as_ref()
            .map(|chrome| chrome.csrf.clone())
            .unwrap_or_default(),
        chrome,
        may_share: may(&authenticated.principal, "POST", "/runs/{id}/shares"),
        has_agent_steps: workflow.as_ref().is_some_and(|workflow| {
            workflow
                .steps()
                .iter()
                .any(|step| matches!(step.body(), spec::StepBody::Agent { .. }))
        }),
        next_steps: next.0,
        for_scripts: next.1,
        status: Status::of_run(record.status.as_str()),
        reason: detail.summary.reason.as_deref().map(prose),
        run_id: record.id.to_string(),
        workflow: record.workflow_name.clone(),
        number: record.number,
        started_by,
        created: crate::html::moment(record.created_at.0, now),
        updated: crate::html::moment(record.updated_at.0, now),
        gate,
        repair,
        attention,
        decide_refused,
        decide_note,
        refused_elsewhere,
        version: entries
            .iter()
            .find_map(|entry| match &entry.event {
                engine::journal::Event::DefinitionsPinned(pin) => Some(pin),
                _ => None,
            })
            .map_or_else(
                || "not recorded (the run started before runs recorded it)".to_owned(),
                |pin| match (pin.workflow_version, &pin.workflow_path) {
                    (Some(number), Some(path)) => format!("version {number} of {path}"),
                    _ => "a text that is no saved version".to_owned(),
                },
            )
            + &repaired_from(&entries),
        cards: step_cards(&scrub, &order, &entries, now, &live),
        now,
        running_since: (record.status.as_str() == "running").then_some(record.created_at.0),
        elapsed: (record.status.as_str() == "running").then(|| {
            crate::handlers::run_view::duration(now.saturating_sub(record.created_at.0).max(0))
        }),
        decisions,
        mail,
        timeline: timeline(&scrub, &entries),
    });
    Ok(match status_code {
        Some(status) => (status, page).into_response(),
        None => page.into_response(),
    })
}

/// What an accepted repair changed of the version a run runs (G9): from which step on it runs
/// which version, the outputs before it standing; empty without a repair.
fn repaired_from(entries: &[Entry]) -> String {
    entries
        .iter()
        .filter_map(|entry| match &entry.event {
            engine::journal::Event::RepairAccepted(accepted) => Some(format!(
                "; version {} from step {} on (the assistant's repair, accepted by {}), the \
                 outputs of the steps before it standing",
                accepted.version,
                accepted.step,
                who(&accepted.accepted_by)
            )),
            _ => None,
        })
        .collect()
}

/// One row of the approvals list.
pub(crate) struct ApprovalRow {
    run: String,
    workflow: String,
    step: String,
    since: crate::html::Moment,
    /// The gate's approve link, for a person who may decide.
    link: Option<String>,
}

#[derive(Template)]
#[template(path = "approvals.html")]
struct ApprovalsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    waiting: Vec<ApprovalRow>,
    /// Whether this is a page after the first.
    paged: bool,
    next_href: Option<String>,
}

/// `?after=CREATED.ID` of the approvals list: where its page starts.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ApprovalsQuery {
    #[serde(default)]
    after: String,
}

/// `GET /approvals[?after=CREATED.ID]`: the gates of the account waiting for a decision, the
/// newest run first, one page at a time (keyset pages of the waiting runs in the store).
pub(crate) async fn approvals_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(query): Query<ApprovalsQuery>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let account = authenticated.account();
    let after = run_cursor(&query.after)?;
    let (waiting, next) = waiting_gates_page(shared, &account, after.as_ref(), RUNS_PER_PAGE)?;
    let with_links = approve::gets_links(&authenticated, &account);
    let now = shared.now().0;
    let mut rows = Vec::with_capacity(waiting.len());
    for approval in waiting {
        let link = if with_links {
            approve::waiting_gate(
                shared,
                &RunId::parse(&approval.run).map_err(|_| Error::NotFound {
                    what: "run",
                    id: approval.run.clone(),
                })?,
            )?
            .map(|gate| approve::link_path(shared, &gate).map(|path| shared.full_url(&path)))
            .transpose()?
        } else {
            None
        };
        rows.push(ApprovalRow {
            since: crate::html::moment(approval.waiting_since, now),
            run: approval.run,
            workflow: format!("{} #{}", approval.workflow, approval.number),
            step: approval.step,
            link,
        });
    }
    Ok(render(&ApprovalsPage {
        title: "Approvals",
        chrome: chrome::current(),
        waiting: rows,
        paged: after.is_some(),
        next_href: next.map(|next| {
            format!(
                "/approvals?after={}",
                percent_encode(&format!("{}.{}", next.created_at.0, next.id.as_str()))
            )
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_is_parsed_and_written_back_the_same() {
        let query = RunsQuery {
            workflow: "refund & co".into(),
            status: "failed".into(),
            started_by: "person:p_1".into(),
            after: String::new(),
        };
        let filter = run_filter(&query).unwrap();
        assert_eq!(filter.status, Some(RunStatus::Failed));
        assert_eq!(
            filter.started_by,
            Some(("person".to_owned(), Some("p_1".to_owned())))
        );
        let cursor = RunCursor {
            created_at: Timestamp(5),
            id: RunId::parse("run_1").unwrap(),
        };
        assert_eq!(
            runs_href(&query, Some(&cursor)),
            "/runs?workflow=refund%20%26%20co&status=failed&started_by=person%3Ap_1&after=5.run_1"
        );
        assert_eq!(run_cursor("5.run_1").unwrap(), Some(cursor));
    }

    #[test]
    fn a_bad_filter_says_what_would_be_right() {
        let query = RunsQuery {
            status: "done".into(),
            ..RunsQuery::default()
        };
        let Err(Error::InvalidInput { reason, .. }) = run_filter(&query) else {
            panic!("an unknown status was accepted");
        };
        assert!(reason.contains("succeeded"), "{reason}");
        assert!(run_cursor("yesterday").is_err());
    }
}
