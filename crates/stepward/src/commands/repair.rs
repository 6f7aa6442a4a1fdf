//! `stepward repair RUN STEP [--accept]` (G9): the assistant proposes stdlib code for the step
//! that sent the run to `needs_repair`; the proposal is checked (`crate::repair`) before it is
//! shown, and kept until it is accepted. `--accept` saves it as the workflow's next version,
//! authored by the assistant and accepted by this operating-system user (the CLI acts for
//! the local account as its person), and the run goes on from that step.

use anyhow::{Context, bail};
use engine::{AcceptedRepair, PersonDecision};
use storage::{AttemptStatus, Door, RunId, RunStatus, RunStore};

use crate::Outcome;
use crate::app::App;
use crate::cli::RepairArgs;
use crate::commands::{Shown, print_summary, summary_outcome};
use crate::config::Config;
use crate::repair::{Pending, check_proposal, proposal_path, same_workflow, save_workflow_version};
use crate::supervisor::{Assistant, assistant_of};

pub fn run(args: &RepairArgs, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open(config)?;
    let run = RunId(args.run.clone());
    let step = args.step.trim_end_matches('!');
    let record = app
        .store
        .run(&run)
        .context("cannot read the run")?
        .filter(|record| record.account == app.account)
        .with_context(|| format!("no run with id {run}"))?;
    if record.status != RunStatus::NeedsRepair {
        bail!(
            "run {run} is {}, not needs_repair: only a step that needs repair is repaired",
            record.status
        );
    }
    let latest = app.store.attempts(&run)?.into_iter().last();
    if !latest.as_ref().is_some_and(|attempt| {
        attempt.step_id == step && attempt.status == AttemptStatus::NeedsRepair
    }) {
        bail!(
            "step {step} is not the step of run {run} that needs repair{}",
            latest
                .map(|attempt| format!(" (that is {})", attempt.step_id))
                .unwrap_or_default()
        );
    }
    let workflow = spec::parse_workflow_within(
        &record.workflow_file_name,
        &record.workflow_source,
        &app.config.limit_maxima,
    )
    .map_err(|_| anyhow::anyhow!("the run's stored workflow no longer parses"))?;
    let pending_path = proposal_path(&app.config.data_dir, run.as_str(), step);
    if args.accept {
        return accept(&app, args, &run, step, &workflow, &pending_path);
    }
    let (provider_name, model_id) = match assistant_of(&app.store, app.account.as_str()) {
        Assistant::On { provider, model } => (provider, model),
        Assistant::Nobody { why } => bail!(
            "no assistant can propose a repair ({why}); fix the step's code yourself, start a new \
             run, and stop this one"
        ),
    };
    let (_, provider) = crate::commands::models::provider(
        &app.store,
        app.vault.as_ref(),
        &app.account,
        &provider_name,
        app.config.model_client()?,
    )?;
    let redactor = app
        .redactor()
        .context("cannot build the account's redactor")?;
    let spec::StepBody::Code { source } = workflow
        .step(step)
        .map(spec::Step::body)
        .context("the run's workflow has no such step")?
    else {
        bail!("step {step} hands its task to an agent; only a code step is repaired");
    };
    let broken = agent::repair::Broken {
        workflow: workflow.name().to_owned(),
        python: workflow.python().to_string(),
        step: step.to_owned(),
        code: source.clone(),
        problem: record_reason(&app, &run, step),
        declaration: serde_json::json!({
            "id": step,
            "network": workflow.step(step).map(|s| s.network().as_str()),
            "connections": workflow.step(step).map(spec::Step::connections),
            "inputs": workflow.step(step).map(|s| s.inputs().iter().map(|(name, _)| name.clone()).collect::<Vec<_>>()),
        }),
    };
    let maxima = app.config.limit_maxima;
    let mut check = |code: &str| check_proposal(&workflow, step, code, &maxima).map(drop);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the assistant")?;
    let proposal = runtime
        .block_on(agent::repair::propose(
            &provider, &model_id, &redactor, &broken, &mut check,
        ))
        .context("the assistant made no acceptable proposal")?;
    let pending = Pending {
        code: proposal.code.clone(),
        note: proposal.note.clone(),
        provider: provider_name.clone(),
        model: model_id.clone(),
        for_hash: storage::Sha256Hex::of(workflow.source().as_bytes())
            .as_str()
            .to_owned(),
    };
    if let Some(parent) = pending_path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&pending_path, serde_json::to_vec_pretty(&pending)?)
        .with_context(|| format!("cannot keep the proposal in {}", pending_path.display()))?;
    app.audit(
        "repair.proposed",
        serde_json::json!({"run": run.as_str(), "step": step, "provider": provider_name,
                           "model": model_id, "refused_before": proposal.refused.len()}),
    )?;
    let shown = redactor.scrub(&proposal.code);
    println!(
        "The assistant ({provider_name}, model {model_id}) proposes new code for step {step} \
         (standard library only; its network, connections, limits and inputs unchanged):\n"
    );
    println!("{}", shown.get());
    println!("\nnote: {}", redactor.scrub(&proposal.note).get());
    for refused in &proposal.refused {
        println!("(an earlier proposal was refused before it was shown: {refused})");
    }
    println!(
        "\nAccept it with `stepward repair {run} {step} --accept`: it becomes the workflow's next \
         version and the run goes on from {step}, the outputs before it standing."
    );
    Ok(Outcome::Done)
}

fn record_reason(app: &App, run: &RunId, step: &str) -> String {
    app.store
        .attempts(run)
        .ok()
        .and_then(|attempts| {
            attempts
                .into_iter()
                .rev()
                .find(|attempt| attempt.step_id == step)
                .and_then(|attempt| attempt.reason)
        })
        .unwrap_or_else(|| "it needs repair".to_owned())
}

fn accept(
    app: &App,
    args: &RepairArgs,
    run: &RunId,
    step: &str,
    workflow: &spec::Workflow,
    pending_path: &std::path::Path,
) -> anyhow::Result<Outcome> {
    let text = std::fs::read(pending_path).with_context(|| {
        format!("there is no proposal to accept; ask for one with `stepward repair {run} {step}`")
    })?;
    let pending: Pending =
        serde_json::from_slice(&text).context("the kept proposal cannot be read")?;
    same_workflow(&pending, workflow)?;
    // Checked again on confirm (G1), as before it was shown.
    let repaired = check_proposal(workflow, step, &pending.code, &app.config.limit_maxima)
        .map_err(|reason| anyhow::anyhow!("the proposal is refused: {reason}"))?;
    let person = crate::app::os_user();
    let author = format!(
        "the assistant ({}, model {})",
        pending.provider, pending.model
    );
    let version = save_workflow_version(
        app,
        workflow.name(),
        workflow.source(),
        repaired.source(),
        &author,
        &person,
    )?;
    let (engine, _lock) = app.engine()?;
    let summary = engine
        .retry_repaired(
            run,
            AcceptedRepair {
                step: step.to_owned(),
                workflow: repaired,
                version,
                provider: pending.provider.clone(),
                model: pending.model.clone(),
                by: PersonDecision {
                    who: App::cli_actor(),
                    door: Door::Cli,
                    note: args
                        .note
                        .clone()
                        .unwrap_or_else(|| "accepted the assistant's repair".to_owned()),
                },
            },
        )
        .with_context(|| format!("cannot go on with the repair of step {step} of run {run}"))?;
    let _ = std::fs::remove_file(pending_path);
    println!(
        "workflow {} version {version}: the assistant's repair of {step}, accepted by {person}; \
         run {run} goes on from {step}",
        workflow.name()
    );
    print_summary(&summary, false, &Shown::new(app)?)?;
    Ok(summary_outcome(&summary))
}
