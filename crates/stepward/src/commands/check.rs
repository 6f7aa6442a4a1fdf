//! `stepward check FILE...`: parse every file, report every problem with its place.

use crate::Outcome;
use crate::cli::CheckArgs;
use crate::commands::{diagnostics_json, print_diagnostics, print_json};
use crate::definitions::{DefinitionKind, display_name, read_text};

pub fn run(args: &CheckArgs) -> anyhow::Result<Outcome> {
    let mut reports = Vec::new();
    let mut all_valid = true;
    for path in &args.files {
        let text = read_text(path)?;
        let name = display_name(path);
        let diagnostics = match DefinitionKind::of(path) {
            DefinitionKind::Workflow => spec::parse_workflow(&name, &text).err(),
            DefinitionKind::Agent => spec::parse_agent(&name, &text).err(),
        }
        .unwrap_or_default();
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
    Ok(if all_valid {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}
