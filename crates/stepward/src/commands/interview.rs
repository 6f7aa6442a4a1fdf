//! `stepward interview [NAME]` (issue 17 §4): the interview with the assistant in the
//! terminal, for the local account. Each line read from stdin is a message of the person;
//! `confirm` saves the proposal shown, `quit` (or the end of input) ends without saving.
//!
//! The assistant is the account's default provider and its assistant model; with none, the
//! command says so and a person writes the workflow (there is no interview). Every proposal is
//! checked before it is shown (`engine::Engine::check_draft`), then shown with its reach rows
//! under the caption and the authoring lints; nothing is executed. Confirming saves it as one
//! version, authored by the assistant and accepted by this operating-system user, audited;
//! one that conflicts with a version saved meanwhile is refused, losing nothing.

use std::io::BufRead;

use agent::interview::{Conversation, Proposed, Reply};
use anyhow::{Context, bail};
use storage::models::ModelProviderStore;
use workspace::RelPath;

use crate::Outcome;
use crate::app::App;
use crate::cli::InterviewArgs;
use crate::config::Config;
use worker::supervisor::{Assistant, assistant_of};

/// A proposal shown, kept for `confirm`.
struct Shown {
    draft: engine::Draft,
    name: String,
    number: u32,
    /// The workspace files its check read, with their hashes then: `confirm` saves only while
    /// each is still so (the reach rows shown were made from them).
    read: Vec<(RelPath, Option<String>)>,
}

pub fn run(args: &InterviewArgs, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open_installed(config)?;
    let account = app.account.clone();
    let (provider_name, model_id) = match assistant_of(app.store.as_ref(), &account) {
        Assistant::On { provider, model } => (provider, model),
        Assistant::Nobody { why } => bail!(
            "there is no assistant to interview you ({why}); write the workflow yourself and save \
             it with `stepward workflows save NAME FILE`"
        ),
    };
    let (_, provider) = crate::commands::models::provider(&app, &provider_name)?;
    let redactor = app
        .redactor()
        .context("cannot build the account's redactor")?;
    let names = platform::providers::account_names(app.store.as_ref(), &app.account)?;
    let engine = app.reading_engine();
    let mut about = args.name.clone();
    let mut base: Vec<(RelPath, Option<String>)> = Vec::new();
    let mut current = None;
    if let Some(name) = &about {
        let path = engine::workflow_path(name).with_context(|| {
            format!("`{name}` cannot name a workflow: letters, digits, `-` and `_`, at most 64")
        })?;
        base = engine.current_hashes(&account, &[path])?;
        current = engine
            .workflow_version_text(&account, name, None)?
            .map(|(_, text)| text);
    }
    let mut conversation = Conversation::new(&agent::interview::context(
        about.as_deref(),
        current.as_deref(),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the assistant")?;
    outln!(
        "Interview with the assistant ({provider_name}, model {model_id}){}. Nothing runs during \
         an interview. Each line you type is a message; `confirm` saves the proposal shown, \
         `quit` ends without saving.",
        about
            .as_deref()
            .map(|name| format!(" about {name}"))
            .unwrap_or_default()
    );
    app.audit(
        storage::AuditAction::InterviewStarted,
        serde_json::json!({"workflow": about, "provider": provider_name, "model": model_id,
                           "door": "cli"}),
    )?;
    let mut shown: Option<Shown> = None;
    let mut proposals = 0_u32;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read your message")?;
        let message = line.trim();
        if message.is_empty() {
            continue;
        }
        if message == "quit" {
            break;
        }
        if message == "confirm" {
            let Some(proposal) = &shown else {
                outln!("There is no proposal to confirm yet; tell the assistant about the task.");
                continue;
            };
            match confirm(
                &app,
                &engine,
                &names,
                proposal,
                &base,
                &provider_name,
                &model_id,
            ) {
                Ok(version) => {
                    outln!(
                        "Saved as version {version} of {}, authored by the assistant and accepted \
                         by {}.",
                        proposal.name,
                        crate::app::os_user()
                    );
                    return Ok(Outcome::Done);
                }
                Err(error) => {
                    outln!("Not saved: {error:#}. The proposal is still here.");
                    continue;
                }
            }
        }
        let mut check = |proposed: &Proposed| -> Result<engine::CheckedDraft, Vec<String>> {
            let draft = engine::Draft {
                workflow: proposed.workflow.clone(),
                files: proposed.files.clone(),
            };
            let checked = engine.check_draft(&account, &names, about.as_deref(), &draft)?;
            if about.is_none()
                && let Some(path) = engine::workflow_path(&checked.name)
                && let Ok(found) = engine.current_hashes(&account, &[path])
                && found.iter().any(|(_, hash)| hash.is_some())
            {
                return Err(vec![format!(
                    "workflows/{}.yaml: a workflow named `{}` exists already, and this interview \
                     makes a new one; choose another name",
                    checked.name, checked.name
                )]);
            }
            Ok(checked)
        };
        let reply = runtime.block_on(agent::interview::answer(
            &provider,
            &model_id,
            &redactor,
            &mut conversation,
            message,
            &mut check,
        ));
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => {
                outln!(
                    "The assistant could not answer ({error}); send your message again, or \
                     write the workflow yourself."
                );
                continue;
            }
        };
        match reply {
            Reply::Question { text } => outln!("assistant: {text}"),
            Reply::Proposal {
                proposed,
                checked,
                refused,
            } => {
                print_refused(&refused);
                proposals += 1;
                for path in checked.paths() {
                    if !base.iter().any(|(seen, _)| seen == &path) {
                        base.extend(engine.current_hashes(&account, &[path])?);
                    }
                }
                about = Some(checked.name.clone());
                print_proposal(&app, proposals, &proposed, &checked)?;
                shown = Some(Shown {
                    draft: engine::Draft {
                        workflow: proposed.workflow,
                        files: proposed.files,
                    },
                    name: checked.name,
                    number: proposals,
                    read: checked.read,
                });
            }
            Reply::Unfixed { proposed, refused } => {
                if let Some((last, earlier)) = refused.split_last() {
                    print_refused(earlier);
                    outln!(
                        "The assistant's proposal did not pass the checks in {} tries, so it \
                         cannot be confirmed; tell it what to change, or write the workflow \
                         yourself. What it proposed:\n\n{}\n\nIts problems:",
                        agent::interview::MAX_PROPOSALS,
                        proposed.workflow
                    );
                    for problem in last {
                        outln!("  {problem}");
                    }
                }
            }
        }
    }
    outln!("The interview ended; nothing was saved.");
    Ok(Outcome::Done)
}

fn print_refused(refused: &[Vec<String>]) {
    for problems in refused {
        outln!(
            "(a proposal of the assistant did not pass the checks and was not shown; it saw \
             these problems and tried again:)"
        );
        for problem in problems {
            outln!("  {problem}");
        }
    }
}

fn print_proposal(
    app: &App,
    number: u32,
    proposed: &Proposed,
    checked: &engine::CheckedDraft,
) -> anyhow::Result<()> {
    outln!(
        "\nProposal {number}: {}{}",
        checked.name,
        if proposed.note.is_empty() {
            String::new()
        } else {
            format!(": {}", proposed.note)
        }
    );
    for (path, text) in &checked.files {
        outln!("\n--- {path}\n{}", text.trim_end());
    }
    let mut rows = checked.reach.clone();
    platform::views::with_model_hosts(&mut rows, &app.store.model_providers(&app.account)?);
    outln!("\nWhat each step can reach");
    out!("{}", spec::render_reach_table(&rows));
    match worker::authoring::lint_workflow(&checked.workflow) {
        None => outln!("\nThe authoring lints were not run: this machine has no Python."),
        Some(lints) if lints.is_empty() => outln!("\nAuthoring warnings: none."),
        Some(lints) => {
            outln!("\nAuthoring warnings:");
            for lint in lints {
                outln!("  warning: {lint}");
            }
        }
    }
    outln!(
        "\nType `confirm` to save proposal {number} as the next version of {}, or tell the \
         assistant what to change.",
        checked.name
    );
    Ok(())
}

fn confirm(
    app: &App,
    engine: &engine::Engine,
    names: &spec::AccountNames,
    shown: &Shown,
    base: &[(RelPath, Option<String>)],
    provider: &str,
    model: &str,
) -> anyhow::Result<u32> {
    let person = crate::app::os_user();
    // Announced first, as every workspace write at every door (issue 37): an intent that
    // cannot be written saves nothing; its outcome follows.
    let mut paths = vec![format!("workflows/{}.yaml", shown.name)];
    paths.extend(shown.draft.files.iter().map(|(path, _)| path.clone()));
    let announced = engine
        .announce_workspace_write(
            &app.account,
            App::cli_actor(),
            &workspace::Author::Assistant {
                accepted_by: person.clone(),
            },
            &paths,
        )
        .context("nothing was saved")?;
    let intent = announced.intent.clone();
    let version = engine
        .save_draft(
            &app.account,
            names,
            &shown.draft,
            engine::AsRead {
                written: base,
                shown: &shown.read,
            },
            &workspace::Author::Assistant {
                accepted_by: person.clone(),
            },
            &format!(
                "workflow {}: proposed by the assistant ({provider}, model {model}) in an \
                 interview, accepted by {person}",
                shown.name
            ),
        )
        .map_err(|error| {
            let _ = app.audit(
                storage::AuditAction::InterviewConfirmRefused,
                serde_json::json!({"intent": intent, "workflow": shown.name,
                                   "proposal": shown.number, "reason": error.to_string(),
                                   "door": "cli"}),
            );
            anyhow::anyhow!(error)
        })?;
    app.audit(
        storage::AuditAction::InterviewConfirmed,
        serde_json::json!({"intent": intent, "workflow": shown.name, "version": version.number,
                           "revision": version.revision, "door": "cli",
                           "author": format!("the assistant ({provider}, model {model})"),
                           "accepted_by": person}),
    )?;
    Ok(version.number)
}
