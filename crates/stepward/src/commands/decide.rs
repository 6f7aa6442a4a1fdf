//! `stepward approve|reject RUN STEP --note TEXT`: a person's recorded decision on a gate
//! (G23), through the door `cli`.

use anyhow::Context;
use engine::{Decision, GateDecision};
use storage::{Door, EventLog};

use crate::Outcome;
use crate::app::App;
use crate::cli::DecideArgs;
use crate::commands::run::show_printed;
use crate::commands::{Shown, print_summary, summary_outcome};
use crate::config::Config;

pub fn run(args: &DecideArgs, kind: GateDecision, config: Config) -> anyhow::Result<Outcome> {
    if !crate::commands::note_within_limit(&args.note) {
        return Ok(Outcome::Invalid);
    }
    let app = App::open_installed(config)?;
    // Beside a live server's workers, they run the steps and this command follows the run.
    let (engine, _lock) = app.engine()?;
    app.run_record(&args.run)?;
    let run = args.run.clone();
    let already = app.store.last_event_seq(&run).unwrap_or(0);
    let decision = Decision {
        kind,
        who: App::cli_actor(),
        door: Door::Cli,
        note: args.note.clone(),
    };
    let summary = engine
        .decide(&run, args.step.trim_end_matches('!'), decision)
        .with_context(|| format!("cannot decide on step {} of run {}", args.step, args.run))?;
    let shown = Shown::new(&app)?;
    show_printed(&app, &run, &shown, already)?;
    print_summary(&summary, false, &shown)?;
    Ok(summary_outcome(&summary))
}
