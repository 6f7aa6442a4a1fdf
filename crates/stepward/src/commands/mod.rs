//! One module per subcommand; each returns an [`crate::Outcome`] or an IO/usage error.

pub mod accounts;
pub mod audit;
pub mod check;
pub mod check_code;
pub mod decide;
pub mod files;
pub mod interview;
pub mod models;
pub mod reach;
pub mod repair;
pub mod run;
pub mod runs;
pub mod schema;
pub mod serve;
pub mod serve_mail;
pub mod tools;
pub mod vault;
pub mod worker;
pub mod workflows;

/// A decision's `--note` within the limit every door has (`api_types::limits::NOTE_CHARS`,
/// the API document's `maxLength`): false, with the reason printed, when it is longer.
pub fn note_within_limit(note: &str) -> bool {
    let max = api_types::limits::NOTE_CHARS;
    let given = note.chars().count();
    if given > max {
        errln!(
            "error: --note: at most {max} characters, {given} given; say why in fewer words \
             (the note is kept in the record with who decided)"
        );
        return false;
    }
    true
}

pub use crate::terminal::printable;

/// Converts the parser's diagnostics into their wire form.
pub fn diagnostics_json(diagnostics: &[spec::Diagnostic]) -> Vec<api_types::Diagnostic> {
    diagnostics
        .iter()
        .map(|diagnostic| api_types::Diagnostic {
            file: diagnostic.file.clone(),
            line: diagnostic.line,
            column: diagnostic.column,
            code: diagnostic.code.to_string(),
            message: diagnostic.message.clone(),
            help: diagnostic.help.clone(),
        })
        .collect()
}

/// Reads and parses a workflow file. An invalid one has its diagnostics printed, followed by
/// `{file}: invalid, so {consequence}; fix the problems above`, and gives `None`.
pub fn parse_workflow_file(
    path: &std::path::Path,
    maxima: &spec::LimitMaxima,
    consequence: &str,
) -> anyhow::Result<Option<spec::Workflow>> {
    parse_workflow_file_for(path, maxima, consequence, None, None)
}

/// [`parse_workflow_file`], also checked against the account's names when they are given
/// (a step's connection must not name a model key).
pub fn parse_workflow_file_for(
    path: &std::path::Path,
    maxima: &spec::LimitMaxima,
    consequence: &str,
    account: Option<&spec::AccountNames>,
    shown: Option<&Shown>,
) -> anyhow::Result<Option<spec::Workflow>> {
    let text = crate::definitions::read_text(path)?;
    parse_workflow_text_for(path, &text, maxima, consequence, account, shown)
}

/// [`parse_workflow_file_for`] of text already read from `path` (`run` reads its file once:
/// a stream such as `/dev/stdin` cannot be read twice).
pub fn parse_workflow_text_for(
    path: &std::path::Path,
    text: &str,
    maxima: &spec::LimitMaxima,
    consequence: &str,
    account: Option<&spec::AccountNames>,
    shown: Option<&Shown>,
) -> anyhow::Result<Option<spec::Workflow>> {
    let name = crate::definitions::display_name(path);
    let parsed = match account {
        Some(account) => spec::parse_workflow_for_account(&name, text, maxima, account),
        None => spec::parse_workflow_within(&name, text, maxima),
    };
    match parsed {
        Ok(workflow) => Ok(Some(workflow)),
        Err(diagnostics) => {
            print_diagnostics(&diagnostics, text, shown);
            let line =
                format!("error: {name} is invalid, so {consequence}; fix the problems above");
            match shown {
                Some(shown) => shown.error(&line),
                None => errln!("{line}"),
            }
            Ok(None)
        }
    }
}

/// Prints diagnostics for a person: each with the offending line and a caret, scrubbed with
/// the account's values when there is an account (a diagnostic quotes its line, review N4).
pub fn print_diagnostics(diagnostics: &[spec::Diagnostic], source: &str, shown: Option<&Shown>) {
    for diagnostic in diagnostics {
        let rendered = diagnostic.render_with_source(source);
        match shown {
            Some(shown) => shown.error(&rendered),
            None => errln!("{rendered}"),
        }
    }
}

/// A diagnostic at the first place `text` holds a value of the account (never what), as the
/// engine refuses such a definition before a run (G1, G16): `check` says so too.
pub fn definition_value_diagnostic(
    shown: &Shown,
    file: &str,
    text: &str,
) -> Option<spec::Diagnostic> {
    let found = shown.redactor.find_secret(text.as_bytes())?;
    let before = text.get(..found.start).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let line = before.matches('\n').count() + 1;
    let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
    Some(spec::Diagnostic {
        file: file.to_owned(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        code: "definition-holds-value",
        message: "this definition holds a value of the account's vault (a secret, a connection \
                  or a model key); `run` refuses it"
            .to_owned(),
        help: "a definition never holds one: name a connection in the step's `connections` and \
               read it from its environment variable instead"
            .to_owned(),
    })
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    crate::terminal::write_json_line(&serde_json::to_string_pretty(value)?);
    Ok(())
}

/// What a command shows of the account's records, scrubbed again on the way out with the
/// account's values as they are now (G16): a value that entered the vault after a record was
/// written is masked in what is shown too.
pub struct Shown {
    redactor: redact::Redactor,
}

impl Shown {
    /// Shows for the app's account.
    pub fn new(app: &crate::app::App) -> anyhow::Result<Shown> {
        use anyhow::Context;
        Ok(Shown {
            redactor: app
                .redactor()
                .context("cannot read the account's values to scrub what is shown")?,
        })
    }

    /// Prints one line, scrubbed, through the terminal writer.
    pub fn line(&self, text: &str) {
        outln!("{}", self.redactor.scrub(text));
    }

    /// Prints one line to stderr, scrubbed: an error or a refusal that may quote what was
    /// typed.
    pub fn error(&self, text: &str) {
        errln!("{}", self.redactor.scrub(text));
    }

    /// Prints a value as pretty JSON, scrubbed.
    pub fn json<T: serde::Serialize>(&self, value: &T) -> anyhow::Result<()> {
        let value = serde_json::to_value(value)?;
        crate::terminal::write_json_line(&serde_json::to_string_pretty(
            self.redactor.scrub_json(&value).get(),
        )?);
        Ok(())
    }
}

/// Prints where a run stands: its id and status, then each step's latest attempt.
pub fn print_summary(
    summary: &engine::RunSummary,
    json: bool,
    shown: &Shown,
) -> anyhow::Result<()> {
    let wire = api_types::runs::RunSummary {
        run: summary.run.to_string(),
        status: summary.status.as_str().to_owned(),
        waiting_at: summary.waiting_at.clone(),
        reason: summary.reason.clone(),
        steps: summary
            .steps
            .iter()
            .map(|step| api_types::runs::StepSummary {
                step: step.step_id.clone(),
                attempt: step.attempt,
                status: step.status.as_str().to_owned(),
                output: step.output.clone(),
                reason: step.reason.clone(),
            })
            .collect(),
    };
    if json {
        return shown.json(&wire);
    }
    shown.line(&format!("run {}: {}", wire.run, wire.status));
    if let Some(gate) = &wire.waiting_at {
        shown.line(&format!(
            "  waiting for a person to approve or reject step `{gate}`:"
        ));
        shown.line(&format!(
            "    stepward approve {} {gate} --note \"...\"",
            wire.run
        ));
        shown.line(&format!(
            "    stepward reject {} {gate} --note \"...\"",
            wire.run
        ));
    }
    if let Some(reason) = &wire.reason {
        shown.line(&format!("  reason: {}", printable(reason)));
    }
    let stopped_at = wire
        .steps
        .iter()
        .rev()
        .find(|step| step.status != "succeeded")
        .map_or("STEP", |step| step.step.as_str());
    match summary.status {
        storage::RunStatus::NeedsAttention => {
            shown.line(&format!(
                "  waiting for a person to decide on step `{stopped_at}`: run it again (only \
                 if that is safe: it may have done part of its work), or stop the run:"
            ));
            shown.line(&format!(
                "    stepward runs retry {} {stopped_at} --note \"why it is safe\"",
                wire.run
            ));
            shown.line(&format!(
                "    stepward runs stop {} --note \"...\"",
                wire.run
            ));
        }
        storage::RunStatus::NeedsRepair => {
            shown.line(&format!(
                "  step `{stopped_at}` needs repair, and none of its code ran: fix its code in \
                 the workflow file, check it and start a new run, then stop this one:"
            ));
            shown.line("    stepward check FILE");
            shown.line("    stepward run FILE --input NAME=VALUE ...");
            shown.line(&format!(
                "    stepward runs stop {} --note \"...\"",
                wire.run
            ));
        }
        _ => {}
    }
    let width = wire
        .steps
        .iter()
        .map(|step| step.step.len())
        .max()
        .unwrap_or(0);
    for step in &wire.steps {
        let detail = match (&step.output, &step.reason) {
            // The step chose both: one line each, whatever they hold.
            (Some(output), _) => printable(&output.to_string()),
            (None, Some(reason)) => printable(reason),
            (None, None) => String::new(),
        };
        shown.line(&format!(
            "  {:<width$}  attempt {}  {:<12} {detail}",
            step.step, step.attempt, step.status
        ));
    }
    Ok(())
}

/// A run that succeeded or waits at a gate is done for now; any other end needs a person.
pub fn summary_outcome(summary: &engine::RunSummary) -> crate::Outcome {
    match summary.status {
        storage::RunStatus::Succeeded | storage::RunStatus::WaitingApproval => crate::Outcome::Done,
        _ => crate::Outcome::Invalid,
    }
}
