//! `stepward runs list|show|events|retry|stop`.

use anyhow::Context;
use storage::{EventLog, RunId, RunStore};

use crate::Outcome;
use crate::app::App;
use crate::cli::RunsCommand;
use crate::commands::run::step_inputs;
use crate::commands::{Shown, print_summary, summary_outcome};
use crate::config::Config;

pub fn run(command: &RunsCommand, config: Config) -> anyhow::Result<Outcome> {
    // What is wrong with what was typed is said first, whatever the installation.
    if let RunsCommand::Retry { note, .. } | RunsCommand::Stop { note, .. } = command
        && !crate::commands::note_within_limit(note)
    {
        return Ok(Outcome::Invalid);
    }
    let app = App::open_installed(config)?;
    let shown = Shown::new(&app)?;
    match command {
        // A decision finds the run after the engine lock, which names a live server first.
        RunsCommand::Show { run, .. } | RunsCommand::Events { run, .. } => {
            app.run_record(run)?;
        }
        RunsCommand::List { .. } | RunsCommand::Retry { .. } | RunsCommand::Stop { .. } => {}
    }
    match command {
        RunsCommand::List { json } => list(&app, *json, &shown),
        RunsCommand::Show { run, json } => {
            let engine = app.reading_engine();
            let summary = engine
                .summary(run)
                .with_context(|| format!("cannot show run {run}"))?;
            if !*json {
                let record = app.run_record(run)?;
                if let Some(workflow) = App::workflow_of(&record) {
                    crate::commands::run::show_tracebacks(
                        &app,
                        run,
                        &record.workflow_file_name,
                        &workflow,
                        &shown,
                        0,
                    )?;
                }
            }
            print_summary(&summary, *json, &shown)?;
            if !*json {
                show_decisions(&app, run, &shown)?;
            }
            Ok(Outcome::Done)
        }
        RunsCommand::Events { run, json } => events(&app, run, *json, &shown),
        RunsCommand::Retry {
            run,
            step,
            inputs,
            note,
        } => {
            if !crate::commands::note_within_limit(note) {
                return Ok(Outcome::Invalid);
            }
            let inputs = match step_inputs(inputs) {
                Ok(inputs) => inputs,
                Err(problem) => {
                    errln!("error: {problem}");
                    return Ok(Outcome::Invalid);
                }
            };
            let new_inputs = (!inputs.is_empty()).then_some(serde_json::Value::Object(inputs));
            let (engine, _lock) = app.engine()?;
            app.run_record(run)?;
            let id = run.clone();
            let already = app.store.last_event_seq(&id).unwrap_or(0);
            let summary = engine
                .retry(
                    &id,
                    step.trim_end_matches('!'),
                    new_inputs,
                    app.decision(note),
                )
                .with_context(|| format!("cannot retry step {step} of run {run}"))?;
            crate::commands::run::show_printed(&app, &id, &shown, already)?;
            print_summary(&summary, false, &shown)?;
            Ok(summary_outcome(&summary))
        }
        RunsCommand::Stop { run, note } => {
            if !crate::commands::note_within_limit(note) {
                return Ok(Outcome::Invalid);
            }
            let (engine, _lock) = app.engine()?;
            app.run_record(run)?;
            let summary = engine
                .stop(run, app.decision(note))
                .with_context(|| format!("cannot stop run {run}"))?;
            print_summary(&summary, false, &shown)?;
            Ok(Outcome::Done)
        }
    }
}

fn list(app: &App, json: bool, shown: &Shown) -> anyhow::Result<Outcome> {
    let runs = app.store.runs(&app.account)?;
    let items: Vec<api_types::runs::RunListItem> = runs
        .iter()
        .map(|run| api_types::runs::RunListItem {
            run: run.id.to_string(),
            workflow: run.workflow_name.clone(),
            number: run.number,
            status: run.status.as_str().to_owned(),
            created_at: run.created_at.0,
            updated_at: run.updated_at.0,
        })
        .collect();
    if json {
        // Each time also as ISO 8601 (UTC), beside the milliseconds.
        let items: Vec<serde_json::Value> = items
            .iter()
            .map(|item| {
                let mut value = serde_json::to_value(item)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("created".into(), iso_time(item.created_at).into());
                    object.insert("updated".into(), iso_time(item.updated_at).into());
                }
                Ok(value)
            })
            .collect::<anyhow::Result<_>>()?;
        shown.json(&items)?;
    } else if items.is_empty() {
        outln!("no runs yet; start one with `stepward run NAME` or `stepward run FILE`");
    } else {
        for item in &items {
            shown.line(&format!(
                "{}  {:<18} {:<24} updated {}",
                item.run,
                item.status,
                format!("{} #{}", item.workflow, item.number),
                platform::views::utc_time(item.updated_at)
            ));
        }
    }
    Ok(Outcome::Done)
}

/// A time of the record as ISO 8601 in UTC, to the second (`2026-12-06T20:59:47Z`).
pub(crate) fn iso_time(millis: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(millis.div_euclid(1000))
        .ok()
        .and_then(|moment| {
            moment
                .format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| millis.to_string())
}

/// A decision's who in words: a person by name, the CLI's user, a key by its id.
fn who(actor: &storage::Actor) -> String {
    match actor {
        storage::Actor::Person { name, .. } => name.clone(),
        storage::Actor::Cli { os_user } => format!("{os_user} (the CLI)"),
        storage::Actor::ApiKey { id } => format!("the API key {id}"),
        storage::Actor::Engine => "the engine".to_owned(),
        storage::Actor::Supervisor => "the supervisor".to_owned(),
    }
}

/// The people's decisions on a run (gates, retries, stops): who, when, through which door,
/// and the note (newcomer 3, friction 12).
fn show_decisions(app: &App, run: &RunId, shown: &Shown) -> anyhow::Result<()> {
    use storage::DecisionStore as _;
    let decisions = app
        .store
        .decisions(run)
        .context("cannot read the run's decisions")?;
    if decisions.is_empty() {
        return Ok(());
    }
    shown.line("  decisions:");
    for decision in decisions {
        let on = decision
            .step_id
            .as_deref()
            .map(|step| format!(" `{step}`"))
            .unwrap_or_default();
        shown.line(&format!(
            "    {}  {}{on} by {} through the {}: {}",
            platform::views::utc_time(decision.at.0),
            decision.kind.as_str(),
            crate::commands::printable(&who(&decision.who)),
            decision.door.as_str(),
            crate::commands::printable(&decision.note)
        ));
    }
    Ok(())
}

fn events(app: &App, run_id: &RunId, json: bool, shown: &Shown) -> anyhow::Result<Outcome> {
    let run = run_id;
    app.run_record(run)?;
    // Every event read into its type (G25), then shown in the journal's shape.
    let events = engine::journal::read_all(&app.store.events(run_id)?)?
        .into_iter()
        .map(|entry| {
            Ok(api_types::runs::Event {
                seq: entry.seq,
                kind: entry.event.kind().as_str().to_owned(),
                at: entry.at.0,
                version: entry.version,
                payload: entry.event.payload_json()?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if json {
        let events: Vec<serde_json::Value> = events
            .iter()
            .map(|event| {
                let mut value = serde_json::to_value(event)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("time".into(), iso_time(event.at).into());
                }
                Ok(value)
            })
            .collect::<anyhow::Result<_>>()?;
        shown.json(&events)?;
    } else {
        for event in &events {
            shown.line(&format!(
                "{:>4}  {}  {:<24} {}",
                event.seq,
                platform::views::utc_time(event.at),
                event.kind,
                crate::commands::printable(&event.payload.to_string())
            ));
        }
    }
    Ok(Outcome::Done)
}
