//! `stepward check FILE...`: parse every file, report every problem with its place.

use crate::Outcome;
use crate::cli::CheckArgs;
use crate::commands::{diagnostics_json, print_diagnostics, print_json};
use crate::definitions::{DefinitionKind, display_name, read_text};

pub fn run(args: &CheckArgs, maxima: &spec::LimitMaxima) -> anyhow::Result<Outcome> {
    let mut reports = Vec::new();
    let mut all_valid = true;
    let mut declares_limits = false;
    for path in &args.files {
        let text = read_text(path)?;
        let name = display_name(path);
        let diagnostics = match DefinitionKind::of(path) {
            DefinitionKind::Workflow => match spec::parse_workflow_within(&name, &text, maxima) {
                Ok(workflow) => {
                    declares_limits |= workflow
                        .steps()
                        .iter()
                        .any(|step| !step.limits().declared().is_empty());
                    Vec::new()
                }
                Err(diagnostics) => diagnostics,
            },
            DefinitionKind::Agent => match spec::parse_agent_within(&name, &text, maxima) {
                Ok(agent) => {
                    declares_limits |= !agent.limits().declared().is_empty();
                    Vec::new()
                }
                Err(diagnostics) => diagnostics,
            },
        };
        declares_limits |= diagnostics
            .iter()
            .any(|diagnostic| diagnostic.code == "limit-above-maximum");
        all_valid &= diagnostics.is_empty();
        if !args.json {
            if diagnostics.is_empty() {
                println!("{name}: valid");
            } else {
                print_diagnostics(&diagnostics, &text);
                eprintln!("{name}: {} problem(s)", diagnostics.len());
            }
        }
        reports.push(api_types::CheckReport {
            file: name,
            valid: diagnostics.is_empty(),
            diagnostics: diagnostics_json(&diagnostics),
        });
    }
    if args.json {
        print_json(&reports)?;
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
