//! `stepward check FILE...`: parse every file, report every problem with its place.

use anyhow::Context;

use crate::Outcome;
use crate::app::LOCAL_ACCOUNT_ID;
use crate::cli::CheckArgs;
use crate::commands::{diagnostics_json, print_diagnostics, print_json};
use crate::config::Config;
use crate::definitions::{DefinitionKind, display_name, read_text};

/// The local account's names, when the data directory already has a database: definitions
/// are then checked against them too. `check` never creates a data directory or a key.
fn local_account_names(config: &Config) -> anyhow::Result<Option<spec::AccountNames>> {
    let database = config.database_path();
    if !database.exists() {
        return Ok(None);
    }
    let store = storage_sqlite::SqliteStore::open(&database)
        .with_context(|| format!("cannot open the database {}", database.display()))?;
    let account = storage::AccountId(LOCAL_ACCOUNT_ID.to_owned());
    crate::commands::models::account_names(&store, &account).map(Some)
}

pub fn run(args: &CheckArgs, config: &Config) -> anyhow::Result<Outcome> {
    let account = local_account_names(config)?;
    let mut reports = Vec::new();
    let mut all_valid = true;
    for path in &args.files {
        let text = read_text(path)?;
        let name = display_name(path);
        let diagnostics = match (DefinitionKind::of(path), &account) {
            (DefinitionKind::Workflow, None) => spec::parse_workflow(&name, &text).err(),
            (DefinitionKind::Agent, None) => spec::parse_agent(&name, &text).err(),
            (DefinitionKind::Workflow, Some(account)) => {
                spec::parse_workflow_for_account(&name, &text, account).err()
            }
            (DefinitionKind::Agent, Some(account)) => {
                spec::parse_agent_for_account(&name, &text, account).err()
            }
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
