//! `stepward files`: the local account's workspace from the command line. A write is a revision
//! authored by the operating-system user (G25), screened for the account's current values like
//! every other write (G19), and audited by paths. Safe beside a running server: every writer
//! takes the workspace's lock.

use std::io::Read;

use anyhow::{Context, bail};
use serde_json::json;
use workspace::{Author, Change, RelPath};

use crate::Outcome;
use crate::app::App;
use crate::cli::FilesCommand;
use crate::commands::printable;
use crate::config::Config;

/// The most bytes `files put` reads (from a file or stdin).
const MAX_PUT_BYTES: u64 = 64 * 1024 * 1024;

pub fn run(command: &FilesCommand, config: Config) -> anyhow::Result<Outcome> {
    // Only `put` makes an installation; the others read or change one.
    let app = match command {
        FilesCommand::Put { .. } => App::open(config)?,
        _ => App::open_installed(config)?,
    };
    let workspace = app
        .workspaces()
        .for_account(&app.account)
        .context("cannot open the local account's workspace")?;
    let shown = crate::commands::Shown::new(&app)?;
    match command {
        FilesCommand::List { json } => {
            let listing = workspace
                .list_files()
                .context("cannot list the workspace")?;
            if *json {
                let files: Vec<api_types::workspace::WorkspaceFileItem> = listing
                    .files
                    .iter()
                    .map(|file| api_types::workspace::WorkspaceFileItem {
                        path: file.path.clone(),
                        bytes: file.bytes,
                    })
                    .collect();
                shown.json(&files)?;
                if listing.truncated {
                    errln!(
                        "note: a part: the folder holds more than {} entries",
                        workspace::MAX_LISTED_ENTRIES
                    );
                }
                return Ok(Outcome::Done);
            }
            if listing.files.is_empty() {
                outln!(
                    "no files in the workspace yet; add one with `stepward files put PATH --from \
                     FILE`"
                );
            }
            for file in &listing.files {
                shown.line(&format!("{:>10}  {}", file.bytes, printable(&file.path)));
            }
            if listing.truncated {
                outln!(
                    "(a part: the folder holds more than {} entries)",
                    workspace::MAX_LISTED_ENTRIES
                );
            }
            Ok(Outcome::Done)
        }
        FilesCommand::Put {
            path,
            from,
            message,
            confirm_reach,
        } => {
            let contents = match from {
                Some(file) => read_bounded(
                    std::fs::File::open(file)
                        .with_context(|| format!("cannot open {}", file.display()))?,
                )
                .with_context(|| format!("cannot read {}", file.display()))?,
                None => read_bounded(std::io::stdin()).context("cannot read stdin")?,
            };
            write(&app, path, Change::Write(contents), message, confirm_reach)
        }
        FilesCommand::Rm {
            path,
            message,
            confirm_reach,
        } => write(&app, path, Change::Delete, message, confirm_reach),
        FilesCommand::History { json } => {
            let history = workspace
                .history()
                .context("cannot read the workspace's history")?;
            if *json {
                let revisions: Vec<api_types::workspace::WorkspaceRevisionView> = history
                    .iter()
                    .rev()
                    .map(platform::views::revision_view)
                    .collect();
                return shown.json(&revisions).map(|()| Outcome::Done);
            }
            if history.is_empty() {
                outln!(
                    "no revisions yet in the workspace: every write (`stepward files put PATH \
                     --from FILE`, a run's step, the console, the API) makes one"
                );
            }
            for revision in history.iter().rev() {
                let author = app.author_words(&revision.author);
                let paths: Vec<String> = revision
                    .changes
                    .iter()
                    .map(|change| match change.blob {
                        Some(_) => printable(&change.path),
                        None => format!("{} (deleted)", printable(&change.path)),
                    })
                    .collect();
                shown.line(&format!(
                    "{}  {}  by {}: {} ({})",
                    &revision.id.as_str()[..12],
                    platform::views::utc_time(
                        i64::try_from(revision.unix_millis).unwrap_or(i64::MAX)
                    ),
                    printable(&author),
                    printable(&revision.message),
                    paths.join(", ")
                ));
            }
            Ok(Outcome::Done)
        }
    }
}

fn parse(path: &str) -> anyhow::Result<RelPath> {
    RelPath::parse(path).map_err(|refusal| anyhow::anyhow!("{refusal}"))
}

fn read_bounded(source: impl Read) -> anyhow::Result<Vec<u8>> {
    let mut contents = Vec::new();
    source.take(MAX_PUT_BYTES + 1).read_to_end(&mut contents)?;
    if contents.len() as u64 > MAX_PUT_BYTES {
        bail!("the contents are over {MAX_PUT_BYTES} bytes; a workspace file is at most that");
    }
    Ok(contents)
}

fn write(
    app: &App,
    path: &str,
    change: Change,
    message: &str,
    confirm_reach: &[String],
) -> anyhow::Result<Outcome> {
    let relative = parse(path)?;
    let author = Author::Cli {
        os_user: crate::app::os_user(),
    };
    // The intent first, and it must be written (issue 11, finding 4); the outcome after the
    // commit. The next process that opens the data records the outcome of an intent a stopped
    // process left open, from the revision log (`engine::workspace_writes`).
    let announced = app
        .reading_engine()
        .announce_workspace_write(
            &app.account,
            App::cli_actor(),
            &author,
            &[relative.as_str().to_owned()],
        )
        .with_context(|| format!("nothing was written to {path}"))?;
    let intent = announced.intent.clone();
    // A workflow or agent file is parsed first (G1) and refused whole when invalid.
    let written = app.reading_engine().write_definitions_confirming(
        &app.account,
        &author,
        message,
        vec![(relative.clone(), change)],
        &[],
        &engine::ReachConfirmation {
            confirmed: confirm_reach.to_vec(),
            except: None,
        },
    );
    let revision = match written {
        Ok(revision) => revision,
        Err(engine::DefinitionWriteError::Invalid { diagnostics, .. }) => {
            app.audit(
                storage::AuditAction::WorkspaceWriteRefused,
                json!({"intent": intent, "paths": [relative.as_str()], "reason": "invalid"}),
            )?;
            let shown = crate::commands::Shown::new(app)?;
            for diagnostic in &diagnostics {
                shown.error(&diagnostic.to_string());
            }
            shown.error(&format!("error: {path} is invalid; nothing was written"));
            return Ok(Outcome::Invalid);
        }
        Err(engine::DefinitionWriteError::ChangesReach { workflows }) => {
            app.audit(
                storage::AuditAction::WorkspaceWriteRefused,
                json!({"intent": intent, "paths": [relative.as_str()], "reason": "changes reach"}),
            )?;
            let shown = crate::commands::Shown::new(app)?;
            shown.error(&format!(
                "error: nothing was written to {path}: it changes what {} saved workflow(s) may \
                 reach or run:",
                workflows.len()
            ));
            for affected in &workflows {
                shown.error(&format!("  {}", affected.workflow));
                for row in &affected.rows {
                    shown.error(&format!("    {row}"));
                }
                for script in &affected.scripts {
                    shown.error(&format!("    its script {script} changes"));
                }
            }
            let flags: Vec<String> = workflows
                .iter()
                .map(|affected| format!("--confirm-reach {}", affected.workflow))
                .collect();
            shown.error(&format!(
                "help: read the changes above; to write it anyway, run the same command with {}",
                flags.join(" ")
            ));
            return Ok(Outcome::Invalid);
        }
        Err(error) => {
            app.audit(
                storage::AuditAction::WorkspaceWriteRefused,
                json!({"intent": intent, "paths": [relative.as_str()]}),
            )?;
            return Err(anyhow::Error::new(error))
                .with_context(|| format!("nothing was written to {path}"));
        }
    };
    app.audit(
        storage::AuditAction::WorkspaceWrite,
        json!({"intent": intent, "revision": revision.id.as_str(), "paths": [relative.as_str()]}),
    )?;
    outln!("revision {}: {}", revision.id, printable(path));
    Ok(Outcome::Done)
}
