//! `stepward run FILE`: parse, then run in sandboxes to the end, a gate, or a person.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{Map, Value};
use storage::EventLog;

use crate::Outcome;
use crate::app::App;
use crate::backend_setup::{EarlyBackend, FirstStep};
use crate::cli::RunArgs;
use crate::commands::{Shown, parse_workflow_text_for, print_summary, printable, summary_outcome};
use crate::config::Config;
use platform::providers::account_names;

pub fn run(args: &RunArgs, config: Config) -> anyhow::Result<Outcome> {
    let timings = config.timings.clone();
    let maxima = config.limit_maxima;
    // The sandbox backend and the first code step's sandbox first, from a first reading of
    // the file; its interpreter loads while the store and the vault open (the parse below,
    // against the account, is the one that decides; a file it refuses drops the sandbox unused).
    let file = workflow_argument(&config, &args.file)?;
    let text = crate::definitions::read_text(&file)?;
    let early = EarlyBackend::start(&config, first_step_of(&file, &text, &maxima))?;
    let app = App::open(config)?;
    // A refusal or a diagnostic quotes what was typed or written, which may be a value of the
    // account (review N3, N4): everything printed from here on is scrubbed.
    let shown = Shown::new(&app)?;
    // Checked against the account: a step must not be granted a model key (G19).
    let names = account_names(app.store.as_ref(), &app.account)?;
    let Some(workflow) = parse_workflow_text_for(
        &file,
        &text,
        &maxima,
        "nothing ran",
        Some(&names),
        Some(&shown),
    )?
    else {
        return Ok(Outcome::Invalid);
    };
    let inputs = match workflow_inputs(&workflow, &args.inputs) {
        Ok(inputs) => inputs,
        Err(problem) => {
            shown.error(&format!("error: {problem}"));
            return Ok(Outcome::Invalid);
        }
    };
    let first = FirstStep::of(&workflow);
    let (engine, _lock) = match early {
        // Built for what the file said at the first reading; a file changed since then gets
        // a backend of its own choice of first sandbox (the early one is dropped unused).
        Some(early) if early.first() == first => app.engine_early(early)?,
        Some(early) => app.engine_rebuilt(early, first)?,
        None => app.engine_ahead(first)?,
    };
    let started = engine.start_run(
        &app.account,
        &workflow,
        Value::Object(inputs),
        App::cli_actor(),
    );
    timings.mark("the run (steps, scrubbing, record)");
    match started {
        Ok(summary) => {
            if !args.json && !args.quiet {
                show_printed(&app, &summary.run, &shown, 0)?;
            }
            if !args.json {
                let name = crate::definitions::display_name(&file);
                show_tracebacks(&app, &summary.run, &name, &workflow, &shown, 0)?;
            }
            print_summary(&summary, args.json, &shown)?;
            Ok(summary_outcome(&summary))
        }
        Err(
            error @ (engine::Error::ForbiddenInputKeys { .. }
            | engine::Error::InputMismatch { .. }
            | engine::Error::CannotRunHere { .. }
            | engine::Error::WorkflowInvalid { .. }),
        ) => {
            shown.error(&format!("error: {error}"));
            Ok(Outcome::Invalid)
        }
        Err(error) => Err(error).context("the run could not start"),
    }
}

/// What `stepward run ARG` runs (newcomer 3, friction 10): an argument with a `/` in it or
/// ending in `.yaml` or `.yml` is a file; any other is the name of a saved workflow, the
/// workspace's current `workflows/NAME.yaml`, unless a file of that name is here too, when
/// `run` refuses and names both rather than guess.
fn workflow_argument(config: &Config, argument: &std::path::Path) -> anyhow::Result<PathBuf> {
    let text = argument.to_string_lossy();
    let is_path = text.contains('/') || text.ends_with(".yaml") || text.ends_with(".yml");
    if is_path {
        return Ok(argument.to_path_buf());
    }
    let saved = config
        .accounts_dir()
        .join("local/workspace/workflows")
        .join(format!("{text}.yaml"));
    match (saved.is_file(), argument.is_file()) {
        (true, false) => Ok(saved),
        (false, true) => Ok(argument.to_path_buf()),
        (true, true) => anyhow::bail!(
            "`{text}` names both the saved workflow {} and the file ./{text}; say which: \
             `stepward run ./{text}` for the file, or run from another folder for the saved one",
            saved.display()
        ),
        (false, false) => anyhow::bail!(
            "there is no saved workflow `{text}` in the installation {} and no file `{text}` \
             here; `stepward workflows list` lists the saved ones, and a file is named by its \
             path (`stepward run ./{text}.yaml`)",
            crate::app::shown_path(&config.data_dir)
        ),
    }
}

/// The first step of the workflow `text` (read from `path`) as a first, account-free parse
/// sees it: only what the early sandbox is built for. A text it cannot parse gives no early
/// sandbox; the real parse reports the problem.
fn first_step_of(
    path: &std::path::Path,
    text: &str,
    maxima: &spec::LimitMaxima,
) -> Option<FirstStep> {
    let name = crate::definitions::display_name(path);
    let workflow = spec::parse_workflow_within(&name, text, maxima).ok()?;
    FirstStep::of(&workflow)
}

/// The most traceback lines of one failed attempt that `run` shows: the innermost.
const MAX_TRACEBACK_LINES: usize = 5;

/// Who retried a step and what they changed (the supervisor), and where each failed attempt's
/// code raised (newcomer 3, frictions 4 and 7): the last lines of its traceback, each `step.py:N` mapped to the workflow file's line when the code is a literal
/// block (`code: |`), and said to be unmappable otherwise. Only the attempts after `after`.
pub(crate) fn show_tracebacks(
    app: &App,
    run: &storage::RunId,
    file: &str,
    workflow: &spec::Workflow,
    shown: &Shown,
    after: u64,
) -> anyhow::Result<()> {
    let entries = engine::journal::read_all(&app.store.events(run)?)
        .with_context(|| format!("cannot read the record of run {}", run.as_str()))?;
    for entry in entries.into_iter().filter(|entry| entry.seq > after) {
        // What an assistant changed when it retried a step, with its note (newcomer 3,
        // friction 4): a run that "succeeded" says who stepped in.
        if let engine::journal::Event::SupervisorDecision(decided) = &entry.event
            && let engine::journal::SupervisorChoice::Retry { .. } = decided.decision
        {
            let who = match &decided.by {
                Some(engine::journal::SupervisorBy::Model { provider, model }) => {
                    format!("the assistant ({provider}, model {model})")
                }
                _ => "the supervisor".to_owned(),
            };
            let changed = if decided.changed.is_empty() {
                "with the same inputs".to_owned()
            } else {
                format!("with inputs changed: {}", decided.changed.join(", "))
            };
            let note = decided
                .note
                .as_deref()
                .map(|note| format!("; its note: {}", printable(note)))
                .unwrap_or_default();
            shown.line(&format!(
                "{who} retried step {} after attempt {} {changed}{note}",
                printable(&decided.step),
                decided.attempt
            ));
            continue;
        }
        let engine::journal::Event::AttemptFinished(finished) = entry.event else {
            continue;
        };
        let Some(error) = finished
            .error
            .filter(|error| !error.traceback.trim().is_empty())
        else {
            continue;
        };
        let origin = workflow
            .steps()
            .iter()
            .find(|step| step.id() == finished.step)
            .map(|step| step.body_origin());
        shown.line(&format!(
            "step {} (attempt {}) raised {}: {}",
            printable(&finished.step),
            finished.attempt,
            printable(&error.kind),
            printable(&error.message)
        ));
        let lines: Vec<&str> = error.traceback.lines().collect();
        let start = lines.len().saturating_sub(MAX_TRACEBACK_LINES);
        if start > 0 {
            shown.line(&format!(
                "  ... {start} earlier line(s) in `stepward runs events`"
            ));
        }
        for line in &lines[start..] {
            shown.line(&format!(
                "  {}",
                shown_line(&traceback_line(line, file, origin))
            ));
        }
        if origin.is_some_and(|origin| !origin.line_for_line) {
            shown.line(&format!(
                "  (the code of step {} is quoted or folded in {file}, so its lines cannot be \
                 mapped to the file's; write it as a literal block, `code: |`)",
                printable(&finished.step)
            ));
        }
    }
    Ok(())
}

/// `step.py:N in F: text` as `FILE:LINE in F: text` for a literal block.
fn traceback_line(line: &str, file: &str, origin: Option<spec::Origin>) -> String {
    let mapped = line.strip_prefix("step.py:").and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let number: u32 = digits.parse().ok()?;
        let origin = origin.filter(|origin| origin.line_for_line)?;
        let (at, _) = origin.locate(number, 1);
        Some(format!("{file}:{at}{}", &rest[digits.len()..]))
    });
    mapped.unwrap_or_else(|| line.to_owned())
}

/// The most lines of one printed stream of one attempt that `run` shows.
const MAX_SHOWN_LINES: usize = 40;
/// The most characters of one shown line.
const MAX_SHOWN_LINE_CHARS: usize = 300;

/// What each step printed, from the run's record: scrubbed of every value the run could
/// observe and bounded when it was written (G17), scrubbed once more on the way out, cut to
/// [`MAX_SHOWN_LINES`] lines of [`MAX_SHOWN_LINE_CHARS`] characters, with control characters
/// shown as `?` so a step cannot drive the terminal. Only the events after the sequence
/// number `after` are shown: a decision or a retry shows only what its own attempts printed.
pub(crate) fn show_printed(
    app: &App,
    run: &storage::RunId,
    shown: &Shown,
    after: u64,
) -> anyhow::Result<()> {
    let entries = engine::journal::read_all(&app.store.events(run)?)
        .with_context(|| format!("cannot read the record of run {}", run.as_str()))?;
    for entry in entries.into_iter().filter(|entry| entry.seq > after) {
        let engine::journal::Event::StepPrinted(printed) = entry.event else {
            continue;
        };
        let stream = match printed.stream {
            engine::journal::PrintedStream::Stdout => "stdout",
            engine::journal::PrintedStream::Stderr => "stderr",
        };
        shown.line(&format!(
            "step {} (attempt {}) printed on {stream}:",
            printable(&printed.step),
            printed.attempt
        ));
        let lines: Vec<&str> = printed.text.lines().collect();
        for line in lines.iter().take(MAX_SHOWN_LINES) {
            shown.line(&format!("  | {}", shown_line(line)));
        }
        let mut notes = Vec::new();
        if lines.len() > MAX_SHOWN_LINES {
            notes.push(format!("{} more lines", lines.len() - MAX_SHOWN_LINES));
        }
        // The record marks a stream it cut at its bound.
        if printed.text.trim_end().ends_with(redact::CUT_MARK) {
            notes.push(format!(
                "the step printed {} bytes; the record keeps the first part",
                printed.printed_bytes
            ));
        }
        if !notes.is_empty() {
            shown.line(&format!(
                "  ({}: `stepward runs events {}` shows what the record kept)",
                notes.join("; "),
                run.as_str()
            ));
        }
    }
    Ok(())
}

/// One printed line as it is shown: cut to [`MAX_SHOWN_LINE_CHARS`], no control characters.
fn shown_line(line: &str) -> String {
    let mut text = printable(&line.replace('\t', "    "));
    if let Some((cut, _)) = text.char_indices().nth(MAX_SHOWN_LINE_CHARS) {
        text.truncate(cut);
        text.push_str(" [...]");
    }
    text
}

/// `NAME=VALUE` pairs into the workflow's input object: a `string` input takes VALUE as it is;
/// any other declared type reads VALUE as JSON. An undeclared name is refused here, with the
/// declared names, rather than by the engine.
pub fn workflow_inputs(
    workflow: &spec::Workflow,
    pairs: &[String],
) -> Result<Map<String, Value>, String> {
    let mut inputs = Map::new();
    for pair in pairs {
        let (name, raw) = split_pair(pair)?;
        let Some(declared) = workflow.inputs().iter().find(|input| input.name() == name) else {
            let names: Vec<&str> = workflow.inputs().iter().map(|input| input.name()).collect();
            return Err(format!(
                "`{name}` is not an input of {}; its inputs are: {}",
                workflow.name(),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        };
        let value = match declared.kind() {
            spec::InputKind::String => Value::String(raw.to_owned()),
            // In words, not the parser's (newcomer 3, friction 18): what was declared, what
            // was given, and what a right one looks like.
            kind => serde_json::from_str(raw).map_err(|_| {
                let example = match kind {
                    spec::InputKind::Integer => "a whole number, such as `--input top=3`",
                    spec::InputKind::Number => "a number, such as `--input rate=0.5`",
                    spec::InputKind::Boolean => "`true` or `false`",
                    spec::InputKind::Array => "a JSON list, such as `--input ids='[1, 2]'`",
                    spec::InputKind::Object => {
                        "a JSON object, such as `--input options='{\"dry_run\": true}'`"
                    }
                    spec::InputKind::String => "text",
                };
                format!(
                    "{name} is declared {}, and `{raw}` is not one: give {example}",
                    kind.as_str()
                )
            })?,
        };
        inputs.insert(name.to_owned(), value);
    }
    Ok(inputs)
}

/// `NAME=VALUE` pairs for a retried step: VALUE as JSON, or as a string when it is not JSON.
pub fn step_inputs(pairs: &[String]) -> Result<Map<String, Value>, String> {
    let mut inputs = Map::new();
    for pair in pairs {
        let (name, raw) = split_pair(pair)?;
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        inputs.insert(name.to_owned(), value);
    }
    Ok(inputs)
}

fn split_pair(pair: &str) -> Result<(&str, &str), String> {
    match pair.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name, value)),
        _ => Err(format!(
            "`--input {pair}` is not NAME=VALUE; write it like `--input top=3`"
        )),
    }
}
