//! `stepward workflows`: the local account's workflows and their versions (issue 17 §3).
//! A version is a saved change of `workflows/NAME.yaml` in the workspace (the revision that
//! wrote it); what is shown, diffed or exported is scrubbed of the account's current values,
//! so it holds connection references only. `save` is parsed first (G1).

use anyhow::Context;
use platform::workflows::WorkflowSource as _;
use workspace::Author;

use crate::Outcome;
use crate::app::App;
use crate::cli::WorkflowsCommand;
use crate::commands::Shown;
use crate::config::Config;

fn when(unix_millis: u64) -> String {
    match i64::try_from(unix_millis) {
        Ok(millis) => crate::commands::runs::iso_time(millis),
        Err(_) => unix_millis.to_string(),
    }
}

fn missing(name: &str) -> String {
    format!("there is no workflow `{name}` in the workspace; `stepward workflows list` names them")
}

pub fn run(command: &WorkflowsCommand, config: Config) -> anyhow::Result<Outcome> {
    // Only `save` makes an installation; the others read one.
    let app = match command {
        WorkflowsCommand::Save { .. } => App::open(config)?,
        _ => App::open_installed(config)?,
    };
    let shown = Shown::new(&app)?;
    let engine = app.reading_engine();
    let account = app.account.clone();
    let versions_of = |name: &str| {
        engine
            .workflow_versions(&account, name)
            .with_context(|| format!("cannot read the versions of {name}"))
    };
    match command {
        WorkflowsCommand::List { json } => {
            let names = platform::workflows::WorkspaceWorkflows::new(app.workspaces())
                .workflow_names(&account)
                .context("cannot list the workflows")?;
            let mut rows = Vec::new();
            for name in &names {
                let newest = versions_of(name)?.pop();
                rows.push(serde_json::json!({
                    "name": name,
                    "version": newest.as_ref().map(|version| version.number),
                    "author": newest.as_ref().map(|version| app.author_words(&version.author)),
                    "at": newest.as_ref().map(|version| when(version.unix_millis)),
                }));
            }
            if *json {
                shown.json(&rows)?;
            } else if names.is_empty() {
                outln!(
                    "no workflows in the workspace; save one with `stepward workflows save NAME \
                     FILE`"
                );
            }
            for row in rows.iter().filter(|_| !*json) {
                shown.line(&format!(
                    "{}  version {}  {}  {}",
                    row["name"].as_str().unwrap_or_default(),
                    row["version"],
                    row["at"].as_str().unwrap_or("-"),
                    row["author"].as_str().unwrap_or("-"),
                ));
            }
            Ok(Outcome::Done)
        }
        WorkflowsCommand::Show { name, version } => {
            let versions = versions_of(name)?;
            if versions.is_empty() {
                shown.error(&format!("error: {}", missing(name)));
                return Ok(Outcome::Invalid);
            }
            for each in &versions {
                shown.line(&format!(
                    "version {}  {}  {}  {}",
                    each.number,
                    when(each.unix_millis),
                    app.author_words(&each.author),
                    each.message
                ));
            }
            let Some((chosen, text)) = engine
                .workflow_version_text(&account, name, *version)
                .context("cannot read the version")?
            else {
                shown.error(&format!(
                    "error: {name} has no version {}; it has 1 to {}",
                    version.unwrap_or_default(),
                    versions.len()
                ));
                return Ok(Outcome::Invalid);
            };
            shown.line(&format!(
                "--- version {} of workflows/{name}.yaml",
                chosen.number
            ));
            out!("{text}");
            Ok(Outcome::Done)
        }
        WorkflowsCommand::Diff { name, a, b } => {
            match engine
                .workflow_diff(&account, name, *a, *b)
                .context("cannot diff the versions")?
            {
                Some(diff) => {
                    out!("{diff}");
                    Ok(Outcome::Done)
                }
                None => {
                    shown.error(&format!(
                        "error: {name} has no version {a} or {b}; `stepward workflows show \
                         {name}` lists them"
                    ));
                    Ok(Outcome::Invalid)
                }
            }
        }
        WorkflowsCommand::Export { name } => {
            match engine
                .workflow_version_text(&account, name, None)
                .context("cannot read the workflow")?
            {
                Some((_, text)) => {
                    out!("{text}");
                    Ok(Outcome::Done)
                }
                None => {
                    shown.error(&format!("error: {}", missing(name)));
                    Ok(Outcome::Invalid)
                }
            }
        }
        WorkflowsCommand::Save {
            name,
            file,
            message,
        } => {
            let text = crate::definitions::read_text(file)?;
            let author = Author::Cli {
                os_user: crate::app::os_user(),
            };
            // Announced first, as every workspace write at every door (issue 37): an intent
            // that cannot be written saves nothing; its outcome follows.
            let announced = engine
                .announce_workspace_write(
                    &account,
                    App::cli_actor(),
                    &author,
                    &[format!("workflows/{name}.yaml")],
                )
                .context("nothing was saved")?;
            let intent = announced.intent.clone();
            let saved = engine.save_workflow_version(&account, name, &text, &author, message);
            if let Err(error) = &saved {
                app.audit(
                    storage::AuditAction::WorkflowSaveRefused,
                    serde_json::json!({"intent": intent, "workflow": name,
                                       "reason": error.to_string()}),
                )?;
            }
            match saved {
                Ok(version) => {
                    app.audit(
                        storage::AuditAction::WorkflowSave,
                        serde_json::json!({"intent": intent, "workflow": name,
                                           "version": version.number,
                                           "revision": version.revision}),
                    )?;
                    shown.line(&format!("{name}: version {}", version.number));
                    Ok(Outcome::Done)
                }
                Err(engine::DefinitionWriteError::Invalid { diagnostics, .. }) => {
                    for diagnostic in &diagnostics {
                        shown.error(&diagnostic.to_string());
                    }
                    shown.error(&format!("error: {name} is invalid; nothing was saved"));
                    Ok(Outcome::Invalid)
                }
                Err(
                    error @ (engine::DefinitionWriteError::HoldsValue { .. }
                    | engine::DefinitionWriteError::NotAWorkflowPath { .. }
                    | engine::DefinitionWriteError::Unreadable { .. }),
                ) => {
                    shown.error(&format!("error: {error}"));
                    Ok(Outcome::Invalid)
                }
                Err(error) => Err(anyhow::Error::new(error)).context("nothing was saved"),
            }
        }
    }
}
