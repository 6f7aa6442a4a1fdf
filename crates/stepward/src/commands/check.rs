//! `stepward check FILE...`: parse every file, report every problem with its place.

use crate::Outcome;
use crate::app::App;
use crate::cli::CheckArgs;
use crate::commands::{
    Shown, definition_value_diagnostic, diagnostics_json, print_diagnostics, print_json,
};
use crate::config::Config;
use crate::definitions::{DefinitionKind, display_name, read_text};

/// The local account, when the data directory already has a database: definitions are then
/// checked against its names, and against its values as `run` checks them (G16), and what is
/// printed is scrubbed with them. `check` never creates a data directory or a key.
fn local_account(config: &Config) -> anyhow::Result<Option<(spec::AccountNames, Shown)>> {
    if !config.database_path().exists() {
        return Ok(None);
    }
    let app = App::open(config.clone())?;
    let names = crate::commands::models::account_names(&app.store, &app.account)?;
    Ok(Some((names, Shown::new(&app)?)))
}

pub fn run(args: &CheckArgs, config: &Config) -> anyhow::Result<Outcome> {
    let local = local_account(config)?;
    let account = local.as_ref().map(|(names, _)| names);
    let shown = local.as_ref().map(|(_, shown)| shown);
    let maxima = &config.limit_maxima;
    let mut reports = Vec::new();
    let mut all_valid = true;
    let mut declares_limits = false;
    for path in &args.files {
        let text = read_text(path)?;
        let name = display_name(path);
        let parsed_workflow = |text: &str| match &account {
            Some(account) => spec::parse_workflow_for_account(&name, text, maxima, account),
            None => spec::parse_workflow_within(&name, text, maxima),
        };
        let parsed_agent = |text: &str| match &account {
            Some(account) => spec::parse_agent_for_account(&name, text, maxima, account),
            None => spec::parse_agent_within(&name, text, maxima),
        };
        let mut diagnostics = match DefinitionKind::of(path) {
            DefinitionKind::Workflow => match parsed_workflow(&text) {
                Ok(workflow) => {
                    declares_limits |= workflow
                        .steps()
                        .iter()
                        .any(|step| !step.limits().declared().is_empty());
                    Vec::new()
                }
                Err(diagnostics) => diagnostics,
            },
            DefinitionKind::Agent => match parsed_agent(&text) {
                Ok(agent) => {
                    declares_limits |= !agent.limits().declared().is_empty();
                    Vec::new()
                }
                Err(diagnostics) => diagnostics,
            },
        };
        if diagnostics.is_empty()
            && let Some(found) =
                shown.and_then(|shown| definition_value_diagnostic(shown, &name, &text))
        {
            diagnostics.push(found);
        }
        declares_limits |= diagnostics
            .iter()
            .any(|diagnostic| diagnostic.code == "limit-above-maximum");
        all_valid &= diagnostics.is_empty();
        if !args.json {
            if diagnostics.is_empty() {
                match shown {
                    Some(shown) => shown.line(&format!("{name}: valid")),
                    None => println!("{name}: valid"),
                }
            } else {
                print_diagnostics(&diagnostics, &text, shown);
                let line = format!("{name}: {} problem(s)", diagnostics.len());
                match shown {
                    Some(shown) => shown.error(&line),
                    None => eprintln!("{line}"),
                }
            }
        }
        reports.push(api_types::CheckReport {
            file: name,
            valid: diagnostics.is_empty(),
            diagnostics: diagnostics_json(&diagnostics),
        });
    }
    if args.json {
        match shown {
            Some(shown) => shown.json(&reports)?,
            None => print_json(&reports)?,
        }
    }
    if declares_limits {
        // `check` runs without a server: say which maxima the declared limits were held to.
        let source = if *maxima == spec::LimitMaxima::BUILT_IN {
            "the built-in maxima (a server may set others with --max-step-*)"
        } else {
            "the maxima given with --max-step-*"
        };
        eprintln!(
            "note: declared limits were checked against {source}: memory_mib {}, timeout_s {}, \
             cpu_s {}, output_kib {}, work_mib {}",
            maxima.memory_mib, maxima.timeout_s, maxima.cpu_s, maxima.output_kib, maxima.work_mib
        );
    }
    Ok(if all_valid {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}
