//! `stepward check FILE...`: parse every file, report every problem with its place.

use crate::Outcome;
use crate::app::{AccountReader, App};
use crate::cli::CheckArgs;
use crate::commands::{
    Shown, check_code, definition_value_diagnostic, diagnostics_json, print_diagnostics, print_json,
};
use crate::config::Config;
use crate::definitions::{AgentLookup, DefinitionKind, display_name, read_text};

/// The local account, when the data directory already has a database: definitions are then
/// checked against its names (read without the vault, so without the root key), and, when the
/// vault opens, against its values as `run` checks them (G16), what is printed being scrubbed
/// with them. `check` never creates a data directory or a key. Its workspace's `agents/`
/// folder is where `run` takes agents from, so `check` looks there first.
struct LocalAccount {
    names: spec::AccountNames,
    shown: Option<Shown>,
    agents: std::path::PathBuf,
}

fn local_account(config: &Config) -> anyhow::Result<Option<LocalAccount>> {
    let Some(reader) = AccountReader::open_existing(config)? else {
        return Ok(None);
    };
    let names = platform::providers::account_names(reader.store.as_ref(), &reader.account)?;
    // The values need the vault; without its root key the names are still checked, and the
    // person is told what was not (newcomer 3, friction 1).
    let shown = match App::open(config.clone()) {
        Ok(app) => Some(Shown::new(&app)?),
        Err(error) => {
            errln!(
                "warning: {error:#}; so the definitions are checked against the account's \
                 names only, not against its values (`run` checks both)"
            );
            None
        }
    };
    Ok(Some(LocalAccount {
        names,
        shown,
        agents: reader.workspace_agents(),
    }))
}

pub fn run(args: &CheckArgs, config: &Config) -> anyhow::Result<Outcome> {
    let local = local_account(config)?;
    let account = local.as_ref().map(|local| &local.names);
    let shown = local.as_ref().and_then(|local| local.shown.as_ref());
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
        let (mut diagnostics, warnings) = match DefinitionKind::of(path) {
            DefinitionKind::Workflow => match parsed_workflow(&text) {
                Ok(workflow) => {
                    declares_limits |= workflow
                        .steps()
                        .iter()
                        .any(|step| !step.limits().declared().is_empty());
                    let found = check_code::check_workflow(
                        path,
                        &text,
                        &workflow,
                        &AgentLookup::new(path, local.as_ref().map(|l| l.agents.clone()), None),
                        maxima,
                    );
                    (found.errors, found.warnings)
                }
                Err(diagnostics) => (diagnostics, Vec::new()),
            },
            DefinitionKind::Agent => match parsed_agent(&text) {
                Ok(agent) => {
                    declares_limits |= !agent.limits().declared().is_empty();
                    let found = check_code::check_agent(path, &agent, maxima);
                    (found.errors, found.warnings)
                }
                Err(diagnostics) => (diagnostics, Vec::new()),
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
            for warning in &warnings {
                let line = warning
                    .render_with_source(&text)
                    .replacen("error[", "warning[", 1);
                match shown {
                    Some(shown) => shown.error(&line),
                    None => errln!("{line}"),
                }
            }
            if diagnostics.is_empty() {
                match shown {
                    Some(shown) => shown.line(&format!("{name}: valid")),
                    None => outln!("{name}: valid"),
                }
            } else {
                print_each_with_its_file(&diagnostics, &name, &text, shown);
                let line = format!(
                    "error: {name} is invalid: {} problem(s), each said above",
                    diagnostics.len()
                );
                match shown {
                    Some(shown) => shown.error(&line),
                    None => errln!("{line}"),
                }
            }
        }
        reports.push(api_types::CheckReport {
            file: name,
            valid: diagnostics.is_empty(),
            diagnostics: diagnostics_json(&diagnostics),
            warnings: diagnostics_json(&warnings),
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
        errln!(
            "note: declared limits were checked against {source}: memory_mib {}, timeout_s {}, \
             cpu_s {}, output_kib {}, work_mib {}",
            maxima.memory_mib,
            maxima.timeout_s,
            maxima.cpu_s,
            maxima.output_kib,
            maxima.work_mib
        );
    }
    Ok(if all_valid {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}

/// Prints each diagnostic under the line of the file it names: most are in the checked file,
/// a custom tool's syntax error is in its script.
fn print_each_with_its_file(
    diagnostics: &[spec::Diagnostic],
    name: &str,
    text: &str,
    shown: Option<&Shown>,
) {
    for diagnostic in diagnostics {
        if diagnostic.file == name {
            print_diagnostics(std::slice::from_ref(diagnostic), text, shown);
        } else {
            let other = read_text(std::path::Path::new(&diagnostic.file)).unwrap_or_default();
            print_diagnostics(std::slice::from_ref(diagnostic), &other, shown);
        }
    }
}
