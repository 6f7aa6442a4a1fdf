//! `stepward tools test AGENT TOOL --input NAME=VALUE` (issue 40): runs one custom tool of an
//! agent of the local account, in a fresh sandbox like any step, with the agent's network and
//! nothing of the platform's in its environment, and prints the scrubbed record the engine
//! kept (also in the audit log). `--with-secrets` puts the agent's `secrets:` in its
//! environment, only once `--confirm SHA256` names the script as it is saved now: without it
//! the command shows who last changed the script, when, and what changed since the last test
//! with secrets, and runs nothing.

use anyhow::{Context, bail};

use crate::Outcome;
use crate::app::App;
use crate::cli::ToolsCommand;
use crate::commands::Shown;
use crate::config::Config;

pub fn run(command: &ToolsCommand, config: Config) -> anyhow::Result<Outcome> {
    let ToolsCommand::Test {
        agent,
        tool,
        input,
        with_secrets,
        confirm,
        python,
        json,
    } = command;
    let app = App::open_installed(config)?;
    let mut pairs = Vec::new();
    for pair in input {
        let Some((name, value)) = pair.split_once('=') else {
            bail!(
                "--input {pair}: write NAME=VALUE (a string as it is; a number, a boolean, an object or a list as JSON)"
            );
        };
        pairs.push((name.trim().to_owned(), value.to_owned()));
    }
    let python = match python {
        Some(given) => Some(
            spec::PythonVersion::parse(given.trim())
                .with_context(|| format!("--python {given}: write MAJOR.MINOR, such as 3.11"))?,
        ),
        None => None,
    };
    let (engine, _lock) = app.engine()?;
    let request = engine::ToolTestRequest {
        agent: agent.clone(),
        tool: tool.clone(),
        arguments: engine::ToolArguments::Text(pairs),
        secrets: engine::SecretsChoice::asked(
            *with_secrets,
            confirm.as_ref().map(|sha| sha.trim().to_owned()),
        ),
        python,
    };
    let shown = Shown::new(&app)?;
    let test = match engine.test_tool(&app.account, App::cli_actor(), &request) {
        Ok(test) => test,
        Err(engine::Error::ToolTestNeedsConfirmation { confirmation }) => {
            let changed = match (&confirmation.last_changed_by, confirmation.last_changed_at) {
                (Some(by), Some(at)) => format!(
                    "by {by}, {}",
                    platform::views::utc_time(i64::try_from(at).unwrap_or(i64::MAX))
                ),
                _ => "by no revision (written by hand)".to_owned(),
            };
            let tested = match &confirmation.last_tested_with_secrets {
                Some((by, at, _)) => format!(
                    "by {}, {}",
                    platform::views::actor_words(by),
                    platform::views::utc_time(*at)
                ),
                None => "never".to_owned(),
            };
            shown.line(&format!(
                "{} runs with the agent's secrets only once you confirm its script.",
                confirmation.script
            ));
            shown.line(&format!(
                "  it would receive: {} (network: {})",
                if confirmation.secrets.is_empty() {
                    "no secret".to_owned()
                } else {
                    confirmation.secrets.join(", ")
                },
                confirmation.network
            ));
            shown.line(&format!("  last changed: {changed}"));
            shown.line(&format!("  last test with secrets: {tested}"));
            shown.line("  what changed since then:");
            for line in confirmation.diff.lines() {
                shown.line(&format!("    {line}"));
            }
            shown.line(&format!(
                "run it again with --with-secrets --confirm {} to run this script, this agent file \
                 and these files with them",
                confirmation.confirm_sha256
            ));
            return Ok(Outcome::Invalid);
        }
        Err(
            error
            @ (engine::Error::ToolTestRefused { .. } | engine::Error::ToolTestNotFound { .. }),
        ) => {
            shown.line(&format!("refused: {error}"));
            return Ok(Outcome::Invalid);
        }
        Err(error) => return Err(error).context("cannot test the tool"),
    };
    if *json {
        shown.json(&platform::views::tool_test_view(test))?;
        return Ok(Outcome::Done);
    }
    shown.line(&format!(
        "tool test {}: {}{}",
        test.id,
        test.outcome,
        if test.with_secrets {
            ", with the agent's secrets"
        } else {
            ""
        }
    ));
    if let Some(result) = &test.result {
        shown.line(&format!("  result: {result}"));
    }
    if let Some(error) = &test.error {
        for line in error.lines() {
            shown.line(&format!("  {line}"));
        }
    }
    if !test.printed.is_empty() {
        shown.line("  printed:");
        for line in test.printed.lines() {
            shown.line(&format!("    {line}"));
        }
    }
    if test.truncated {
        shown.line("  (what it printed was cut at the output bound)");
    }
    Ok(if test.outcome == "succeeded" {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}
