//! `stepward repair RUN STEP [--accept]` (G9): the assistant proposes stdlib code for the step
//! that sent the run to `needs_repair`; the proposal is checked before it is shown and
//! recorded in the run (`repair.proposed`), so it can be accepted through any door.
//! `--accept` saves it as the workflow's next version, authored by the assistant and accepted
//! by this operating-system user (the CLI acts for the local account as its person), and the
//! run goes on from that step. Both go through the engine (`Engine::propose_repair`,
//! `Engine::accept_repair`), as the console's and the API's do.

use anyhow::Context;
use engine::PersonDecision;
use storage::{Door, RunId};

use crate::Outcome;
use crate::app::App;
use crate::cli::RepairArgs;
use crate::commands::{Shown, print_summary, summary_outcome};
use crate::config::Config;

pub fn run(args: &RepairArgs, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open_installed(config)?;
    let run = args.run.clone();
    let step = args.step.trim_end_matches('!');
    app.run_record(&run)?;
    let (engine, _lock) = app.engine()?;
    if args.accept {
        return accept(&app, &engine, args, &run, step);
    }
    // Audited first (who asked, for which step), as through the API: an entry that cannot be
    // written asks no model and records no proposal. Who proposed what is in the run's journal.
    app.audit(
        storage::AuditAction::RepairProposed,
        serde_json::json!({"run": run.as_str(), "step": step}),
    )
    .context("no model was asked")?;
    let proposal = engine
        .propose_repair(&run, step)
        .with_context(|| format!("no repair of step {step} of run {run} to show"))?;
    outln!(
        "The assistant ({}, model {}) proposes new code for step {step} (standard library only; \
         its network, connections, limits and inputs unchanged):\n",
        proposal.provider,
        proposal.model
    );
    // As a diff of the step's code, the way a person reviews a change (newcomer 3, friction 9).
    let record = app.run_record(&run)?;
    let old_code = App::workflow_of(&record).and_then(|workflow| {
        workflow
            .step(step)
            .and_then(spec::Step::code)
            .map(str::to_owned)
    });
    match old_code {
        Some(old_code) => {
            let shown = Shown::new(&app)?;
            shown.line(engine::code_diff(step, &old_code, &proposal.code).trim_end());
        }
        None => outln!("{}", proposal.code),
    }
    outln!("\nnote: {}", proposal.note);
    for refused in &proposal.refused {
        outln!("(an earlier proposal was refused before it was shown: {refused})");
    }
    outln!(
        "\nAccept it with `stepward repair {run} {step} --accept`: it becomes the workflow's next \
         version and the run goes on from {step}, the outputs before it standing."
    );
    Ok(Outcome::Done)
}

fn accept(
    app: &App,
    engine: &engine::Engine,
    args: &RepairArgs,
    run: &RunId,
    step: &str,
) -> anyhow::Result<Outcome> {
    let person = crate::app::os_user();
    let workflow = app.run_record(run)?.workflow_name;
    // The intent first, as every workspace write (the next process that opens the data
    // settles one a stopped process left open): an intent that cannot be written saves nothing.
    let author = workspace::Author::Assistant {
        accepted_by: person.clone(),
    };
    let announced = app
        .reading_engine()
        .announce_workspace_write(
            &app.account,
            App::cli_actor(),
            &author,
            &[format!("workflows/{workflow}.yaml")],
        )
        .context("nothing was saved")?;
    let intent = announced.intent.clone();
    let accepted = engine.accept_repair(
        run,
        step,
        &person,
        PersonDecision {
            who: App::cli_actor(),
            door: Door::Cli,
            note: args
                .note
                .clone()
                .unwrap_or_else(|| "accepted the assistant's repair".to_owned()),
        },
        // The newest recorded proposal: the one `stepward repair RUN STEP` printed.
        None,
    );
    let accepted = match accepted {
        Ok(accepted) => accepted,
        Err(error) => {
            let error = anyhow::Error::new(error).context(format!(
                "cannot go on with the repair of step {step} of run {run}"
            ));
            app.audit(
                storage::AuditAction::RepairAcceptRefused,
                serde_json::json!({"intent": intent, "run": run.as_str(), "step": step,
                                   "reason": format!("{error:#}")}),
            )?;
            return Err(error);
        }
    };
    let version = &accepted.version;
    app.audit(
        storage::AuditAction::WorkflowVersion,
        serde_json::json!({"intent": intent, "workflow": version.name,
                           "revision": version.revision, "version": version.number,
                           "author": "assistant", "accepted_by": person,
                           "run": run.as_str(), "step": step}),
    )?;
    outln!(
        "workflow {} version {}: the assistant's repair of {step}, accepted by {person}; run \
         {run} goes on from {step}",
        version.name,
        version.number
    );
    print_summary(&accepted.summary, false, &Shown::new(app)?)?;
    Ok(summary_outcome(&accepted.summary))
}
