//! What a person sees of a gate before deciding it (issue 42, point 1): on the run page and on
//! the approve page, the same panel: what the step does, who started the run and when, the
//! version the run pinned, what the step can reach, and each input it will receive with where it
//! comes from (an earlier step's output, the run's input, the workflow's text).

use auth::Role;
use serde_json::Value;
use spec::{InputSource, Step, Workflow};
use storage::RunRecord;

use crate::Error;
use crate::authn::Authenticated;
use crate::handlers::run_view::{Scrub, who};
use crate::handlers::value_view::ValueView;
use crate::handlers::workflows::reach_report;
use crate::handlers::{account_redactor, approve};
use crate::html::when;
use crate::state::Shared;

/// The gate panel of a run parked before a step.
pub(crate) struct GatePanel {
    pub(crate) step: String,
    pub(crate) explain: Option<String>,
    pub(crate) who_may_decide: &'static str,
    pub(crate) caption: &'static str,
    /// Above what the step can reach, on a server whose steps are not isolated.
    pub(crate) isolation: Option<&'static str>,
    pub(crate) internet: String,
    pub(crate) connections: String,
    pub(crate) secrets: String,
    pub(crate) limits: Option<String>,
    pub(crate) inputs: String,
    pub(crate) may_decide: bool,
    /// The gate's approve link, for a person who may decide (to send to whoever decides).
    pub(crate) link: Option<String>,
    /// What the run pinned at its start, in words, when it did.
    pub(crate) pinned: Option<String>,
    /// Who started the run and when.
    pub(crate) started: String,
    /// Each input the step will receive: its name, where it comes from (an earlier step's
    /// output, the run's input, the workflow's text) and its value, readable.
    pub(crate) input_rows: Vec<GateInput>,
}

/// What a gated step does, in words: a code step's `explain`; for an agent step, its own
/// `explain` if it has one, then the agent it hands its task to, what the agent's file (as the
/// run pinned it) says the agent is, and the task itself.
fn explain_of(shared: &Shared, pinned: &engine::PinnedDefinitions, gated: &Step) -> String {
    let spec::StepBody::Agent { agent, task } = gated.body() else {
        return gated.explain().to_owned();
    };
    let mut words = Vec::new();
    if !gated.explain().is_empty() {
        words.push(gated.explain().to_owned());
    }
    words.push(format!("The agent “{agent}” is asked: “{task}”"));
    if let Some(file) = pinned.agent(agent, shared.engine.limit_maxima()) {
        words.push(format!("Its file says what it is: {}", file.description()));
    }
    words.join(" ")
}

/// One input of a gated step, as a person reads it before deciding.
pub(crate) struct GateInput {
    pub(crate) name: String,
    pub(crate) source: String,
    pub(crate) value: ValueView,
}

pub(crate) fn gate_panel(
    shared: &Shared,
    authenticated: &Authenticated,
    scrub: &Scrub<'_>,
    record: &RunRecord,
    workflow: Option<&Workflow>,
    step: &str,
) -> Result<GatePanel, Error> {
    let mut panel = GatePanel {
        step: step.to_owned(),
        explain: None,
        who_may_decide: "A member, an admin or the owner of this account decides: approving runs \
                         the step with the inputs below, rejecting ends the run.",
        caption: spec::REACH_CAPTION,
        isolation: crate::reach::isolation_notice(&shared.options),
        internet: "unknown (the workflow could not be read again)".to_owned(),
        connections: "unknown".to_owned(),
        secrets: "unknown".to_owned(),
        limits: None,
        inputs: "(the workflow could not be read again, so the inputs cannot be shown)".to_owned(),
        may_decide: authenticated.session.is_some()
            && authenticated.principal.role() >= Role::Member,
        link: None,
        pinned: None,
        started: format!(
            "{} started the run {}",
            who(&record.started_by),
            when(record.created_at.0)
        ),
        input_rows: Vec::new(),
    };
    if approve::gets_links(authenticated, &record.account) {
        panel.link = approve::waiting_gate(shared, &record.id)?
            .map(|gate| approve::link_path(shared, &gate).map(|path| shared.full_url(&path)))
            .transpose()?;
    }
    let Some(workflow) = workflow else {
        return Ok(panel);
    };
    // What the run pinned at its start (issue 16 §1), never the files as they are now; a run
    // from before runs pinned shows the current files. Read once, for the explanation of an
    // agent step and for the reach.
    let pinned = shared
        .engine
        .pinned_definitions(&record.account, &record.id)
        .map_err(Error::engine_of(&record.id))?;
    panel.explain = workflow
        .step(step)
        .map(|gated| explain_of(shared, &pinned, gated));
    let reach = shared
        .engine
        .reach_of_pinned(&pinned, &record.id)
        .map_err(Error::engine_of(&record.id))?;
    let report = match reach {
        Some((pin, mut rows)) => {
            panel.pinned = Some(crate::handlers::run_view::pinned_sentence(&pin));
            crate::handlers::workflows::with_account_model_hosts(
                shared,
                &record.account,
                &mut rows,
            )?;
            crate::handlers::workflows::report_of(shared, workflow, rows)
        }
        None => reach_report(shared, &record.account, workflow)?,
    };
    if let Some(row) = report.rows.iter().find(|row| row.step == step) {
        panel.internet = match row.internet {
            api_types::Internet::Yes => "yes, the public internet".to_owned(),
            api_types::Internet::No => "no".to_owned(),
            api_types::Internet::Unknown => format!(
                "unknown ({})",
                row.unknown_reason.as_deref().unwrap_or("not known")
            ),
        };
        panel.connections = spec::list_or_none(&row.connections);
        panel.secrets = crate::reach::secrets_words(row);
        panel.limits = (!row.limits.is_empty()).then(|| row.limits.join(", "));
    }
    let inputs = shared
        .engine
        .pending_gate_inputs(&record.id, workflow)
        .map_err(Error::engine_of(&record.id))?;
    if let (Some(Ok(inputs)), Some(gated)) = (&inputs, workflow.step(step)) {
        panel.input_rows = input_rows(scrub, gated, inputs);
    }
    panel.inputs = match inputs {
        Some(Ok(inputs)) => scrub.pretty(&inputs),
        Some(Err(reason)) => format!("(the inputs cannot be built: {reason})"),
        None => "(the run is no longer parked)".to_owned(),
    };
    Ok(panel)
}

/// The step's inputs as rows, in the order the workflow declares them, each value scrubbed: a
/// text as text, anything else as indented JSON.
fn input_rows(scrub: &Scrub<'_>, step: &Step, inputs: &Value) -> Vec<GateInput> {
    step.inputs()
        .iter()
        .map(|(name, source)| GateInput {
            name: name.clone(),
            source: match source {
                InputSource::Literal(_) => "written in the workflow".to_owned(),
                InputSource::WorkflowInput(input) => format!("the run's input {input}"),
                InputSource::StepOutput(earlier) => format!("what the step {earlier} produced"),
            },
            value: ValueView::of(&inputs.get(name).map_or_else(
                || Value::String("(not given)".to_owned()),
                |value| (scrub.json)(value),
            )),
        })
        .collect()
}

/// The gate panel of `record` for `authenticated`, when the run waits at a gate and the
/// person is of the run's account: what the approve page shows beside its buttons. `None`:
/// the run does not wait, or the person may not read it.
pub(crate) fn gate_context(
    shared: &Shared,
    authenticated: &Authenticated,
    record: &RunRecord,
) -> Result<Option<GatePanel>, Error> {
    if authenticated.principal.account_id() != &record.account {
        return Ok(None);
    }
    let Some(parked) = shared
        .store
        .parked(&record.id)
        .map_err(Error::storage("read parked state"))?
    else {
        return Ok(None);
    };
    let workflow = spec::parse_workflow_within(
        &record.workflow_file_name,
        &record.workflow_source,
        shared.engine.limit_maxima(),
    )
    .ok();
    let redactor = account_redactor(shared, &record.account)?;
    let scrub = Scrub::with(&redactor);
    gate_panel(
        shared,
        authenticated,
        &scrub,
        record,
        workflow.as_ref(),
        &parked.step_id,
    )
    .map(Some)
}
