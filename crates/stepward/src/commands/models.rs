//! `stepward models add|list|rm|default|test` and `stepward dev fake-model`.
//!
//! A provider's settings (kind, base URL, the assistant's model, the default flag) are rows of
//! their own; its key is the vault model key of the same name, read from stdin (never echoed
//! on a terminal, never an argument) and never shown again. Every change is in the audit log,
//! by name. The endpoint rules are the operator's (`--allow-model-endpoint`), never the
//! account's.

use std::str::FromStr;
use std::sync::Arc;

use anyhow::{Context, bail};
use redact::SecretValue;
use serde_json::json;
use storage::models::{ModelProvider, ModelProviderStore, NewModelProvider};

use crate::Outcome;
use crate::app::{App, now};
use crate::cli::{DevCommand, ModelsCommand};
use crate::commands::Shown;
use crate::config::Config;
use platform::providers::{ProviderError, check_name};

pub fn run(command: &ModelsCommand, config: Config) -> anyhow::Result<Outcome> {
    // Only `add` makes an installation; the others read or change one.
    let app = match command {
        ModelsCommand::Add { .. } => App::open(config)?,
        _ => App::open_installed(config)?,
    };
    match command {
        ModelsCommand::Add {
            name,
            provider,
            base_url,
            assistant_model,
        } => add(
            &app,
            name,
            provider,
            base_url.as_deref(),
            assistant_model.as_deref(),
        ),
        ModelsCommand::List { json } => list(&app, *json),
        ModelsCommand::Rm { name } => remove(&app, name),
        ModelsCommand::Default { name } => set_default(&app, name),
        ModelsCommand::Test { name, model, json } => test(&app, name, model.as_deref(), *json),
        ModelsCommand::Supervisor { retries } => supervisor(&app, retries.as_deref()),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Checks the base URL's form and, without resolving any name, its address and scheme
/// against the operator's rules: a refused endpoint is refused at once, not at its first
/// use. Names are resolved (and checked again) at every request.
fn check_base_url(config: &Config, kind: llm::ProviderKind, base_url: &str) -> anyhow::Result<()> {
    let url = llm::endpoint_url(kind, base_url)?;
    let offline = llm::Client::new(llm::ClientOptions {
        endpoints: config.model_endpoints.clone(),
        resolver: Arc::new(llm::StaticResolver::new()),
        ..llm::ClientOptions::default()
    })?;
    match runtime()?.block_on(offline.check_endpoint(&url)) {
        Ok(_) | Err(llm::Error::Resolve { .. }) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

fn add(
    app: &App,
    name: &str,
    provider: &str,
    base_url: Option<&str>,
    assistant_model: Option<&str>,
) -> anyhow::Result<Outcome> {
    let base_url = base_url.map(str::trim).filter(|url| !url.is_empty());
    let assistant_model = assistant_model
        .map(str::trim)
        .filter(|model| !model.is_empty());
    // The key first: every refusal below may quote what was typed, and none may quote the key
    // (review N3), nor store it in a field that is shown in plain text (review N1).
    let key = read_key(name)?;
    refuse_values_in_settings(app, &key, name, base_url, assistant_model)?;
    check_name(name)?;
    let kind = llm::ProviderKind::from_str(provider)?;
    check_base_url(
        &app.config,
        kind,
        base_url.unwrap_or(kind.default_base_url()),
    )?;
    let account = &app.account;
    let key_info = app
        .vault
        .model_keys()
        .set(account, name, key)
        .context("cannot store the model key")?;
    let saved = app
        .store
        .save_model_provider(&NewModelProvider {
            account: account.clone(),
            name: name.to_owned(),
            kind: kind.as_str().to_owned(),
            base_url: base_url.map(str::to_owned),
            assistant_model: assistant_model.map(str::to_owned),
            at: now(),
        })
        .context("cannot store the provider")?;
    let provider = &saved.provider;
    app.audit(
        storage::AuditAction::ModelAdd,
        json!({
            "name": name,
            "provider": kind.as_str(),
            "base_url": provider.base_url,
            "assistant_model": provider.assistant_model,
            "default": provider.is_default,
            "replaced": saved.replaced,
            "key_version": key_info.version,
        }),
    )?;
    let verb = if saved.replaced { "replaced" } else { "added" };
    Shown::new(app)?.error(&format!(
        "model provider {name} {verb}: {} at {}, key stored sealed (version {}){}",
        kind.as_str(),
        shown_url(provider),
        key_info.version,
        if provider.is_default {
            "; it is the account's default"
        } else {
            ""
        }
    ));
    errln!("check it with `stepward models test {name} --model ID`");
    Ok(Outcome::Done)
}

/// A provider's name, base URL and assistant model are stored, listed and logged in plain
/// text: refuses any of them that holds the key just given (as typed or percent-encoded) or a
/// value of the account, without repeating it.
fn refuse_values_in_settings(
    app: &App,
    key: &SecretValue,
    name: &str,
    base_url: Option<&str>,
    assistant_model: Option<&str>,
) -> anyhow::Result<()> {
    let redactor = app
        .redactor()
        .context("cannot read the account's values to check the provider's settings")?;
    let key = key.dangerously_expose().trim();
    let settings = [
        ("its name", Some(name)),
        ("`--base-url`", base_url),
        ("`--assistant-model`", assistant_model),
    ];
    for (what, text) in settings {
        let Some(text) = text else { continue };
        let decoded = percent_encoding::percent_decode_str(text).decode_utf8_lossy();
        let holds_key = !key.is_empty() && (text.contains(key) || decoded.contains(key));
        if holds_key {
            bail!(
                "nothing was stored: {what} holds the provider's key, and settings are shown \
                 and logged in plain text; give the key on stdin only"
            );
        }
        if redactor.holds_secret(text.as_bytes()) || redactor.holds_secret(decoded.as_bytes()) {
            bail!(
                "nothing was stored: {what} holds a value of the account (a secret, connection \
                 or model key), and settings are shown and logged in plain text"
            );
        }
    }
    Ok(())
}

/// Reads the key: from a terminal without echo, ending at Enter; else all of stdin.
fn read_key(name: &str) -> anyhow::Result<SecretValue> {
    let mut values = crate::secret_input::read_values(&[format!("the key of {name}")])
        .with_context(|| {
            format!(
                "no key for {name}: pipe it in, e.g. `stepward models add {name} --provider \
                 anthropic < key.txt`, or type it at the prompt"
            )
        })?;
    values
        .pop()
        .ok_or_else(|| anyhow::anyhow!("no key was given for {name}"))
}

/// The URL a provider's requests go to.
fn shown_url(provider: &ModelProvider) -> String {
    let kind = llm::ProviderKind::from_str(&provider.kind).ok();
    match (kind, &provider.base_url) {
        (Some(kind), base) => {
            llm::endpoint_url(kind, base.as_deref().unwrap_or(kind.default_base_url()))
                .map(|url| url.to_string())
                .unwrap_or_else(|_| base.clone().unwrap_or_default())
        }
        (None, base) => base.clone().unwrap_or_default(),
    }
}

/// The wire view of a provider, with its key's version (or none when the key is missing).
pub fn view(
    provider: &ModelProvider,
    key_version: Option<u64>,
) -> api_types::models::ModelProviderView {
    api_types::models::ModelProviderView {
        name: provider.name.clone(),
        provider: provider.kind.clone(),
        base_url: shown_url(provider),
        assistant_model: provider.assistant_model.clone(),
        is_default: provider.is_default,
        key_version,
        created_at: provider.created_at.0,
        updated_at: provider.updated_at.0,
    }
}

fn list(app: &App, json: bool) -> anyhow::Result<Outcome> {
    let providers = app
        .store
        .model_providers(&app.account)
        .context("cannot read the model providers")?;
    let keys = app.vault.model_keys().list(&app.account)?;
    let views: Vec<_> = providers
        .iter()
        .map(|provider| {
            let version = keys
                .iter()
                .find(|key| key.name == provider.name)
                .map(|key| key.version);
            view(provider, version)
        })
        .collect();
    // Settings stored before a value entered the vault are masked on the way out (review N4).
    let shown = Shown::new(app)?;
    if json {
        shown.json(&views)?;
        return Ok(Outcome::Done);
    }
    if views.is_empty() {
        outln!(
            "no model providers; add one with `stepward models add NAME --provider \
             anthropic|openai` (the key on stdin)"
        );
        return Ok(Outcome::Done);
    }
    for provider in &views {
        let key = match provider.key_version {
            Some(version) => format!("key version {version}"),
            None => "no key: add it again".to_owned(),
        };
        shown.line(&format!(
            "{}{}  {}  {}  assistant model: {}  {key}",
            provider.name,
            if provider.is_default {
                " (default)"
            } else {
                ""
            },
            provider.provider,
            provider.base_url,
            provider.assistant_model.as_deref().unwrap_or("none"),
        ));
    }
    Ok(Outcome::Done)
}

fn remove(app: &App, name: &str) -> anyhow::Result<Outcome> {
    check_name(name)?;
    let redactor = app
        .redactor()
        .context("cannot read the account's values to write the audit entry")?;
    let entry = app.audit_entry(
        &redactor,
        storage::AuditAction::ModelRemove,
        &json!({ "name": name }),
    );
    // The same removal as the server's: the key with its audit entry first, nothing removed
    // when the entry cannot be written (issue 11, finding 4).
    let removed =
        platform::providers::remove_provider(app.store.as_ref(), Some(&app.vault), &entry, name)
            .with_context(|| format!("cannot remove the model provider {name}"))?;
    if !removed {
        bail!("the account has no model provider `{name}`; `stepward models list` shows them");
    }
    errln!("model provider {name} and its key removed");
    Ok(Outcome::Done)
}

fn set_default(app: &App, name: &str) -> anyhow::Result<Outcome> {
    check_name(name)?;
    if !app
        .store
        .set_default_model_provider(&app.account, name, now())
        .context("cannot set the default provider")?
    {
        bail!("the account has no model provider `{name}`; `stepward models list` shows them");
    }
    app.audit(storage::AuditAction::ModelDefault, json!({ "name": name }))?;
    errln!("{name} is the account's default model provider");
    Ok(Outcome::Done)
}

/// `stepward models supervisor [--retries N|default]`: who sees failures, and the budget.
fn supervisor(app: &App, retries: Option<&str>) -> anyhow::Result<Outcome> {
    use storage::AccountStore;
    if let Some(retries) = retries {
        let wanted = match retries {
            "default" => None,
            number => Some(
                number
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= 5)
                    .with_context(|| {
                        format!(
                            "`--retries {number}`: give a whole number from 0 to 5, or `default`"
                        )
                    })?,
            ),
        };
        app.store
            .set_supervisor_retries(&app.account, wanted)
            .context("cannot set the supervisor's retries")?;
        app.audit(
            storage::AuditAction::SupervisorRetries,
            json!({ "retries": wanted.map_or_else(|| json!("default"), |n| json!(n)) }),
        )?;
    }
    let set = app
        .store
        .supervisor_retries(&app.account)
        .context("cannot read the supervisor's retries")?;
    let who = match worker::supervisor::assistant_of(app.store.as_ref(), &app.account) {
        worker::supervisor::Assistant::On { provider, model } => format!(
            "failures go to the assistant on {provider} (model {model}): a failed step's \
             inputs, error and printed text (scrubbed) are sent to it"
        ),
        worker::supervisor::Assistant::Nobody { why } => format!("failures go to a person: {why}"),
    };
    outln!("{who}");
    outln!(
        "supervisor retries per step per run: {}",
        match set {
            Some(n) => n.to_string(),
            None => format!("{} (the default)", engine::DEFAULT_SUPERVISOR_RETRIES),
        }
    );
    Ok(Outcome::Done)
}

/// The account's provider `name`, ready to call, or what is wrong with it and the command that
/// mends it.
pub fn provider(app: &App, name: &str) -> anyhow::Result<(ModelProvider, llm::Provider)> {
    platform::providers::provider(
        app.store.as_ref(),
        app.vault.as_ref(),
        &app.account,
        name,
        app.config.model_client()?,
    )
    .map_err(|error| {
        let hint = match &error {
            ProviderError::Unknown { .. } => "`stepward models list` shows the account's providers",
            ProviderError::KeyUnreadable { .. } | ProviderError::NoKey { .. } => {
                "add the provider again with its key: `stepward models add NAME`"
            }
            _ => "",
        };
        if hint.is_empty() {
            anyhow::Error::new(error)
        } else {
            anyhow::Error::new(error).context(hint.replace("NAME", name))
        }
    })
}

fn test(app: &App, name: &str, model: Option<&str>, json: bool) -> anyhow::Result<Outcome> {
    check_name(name)?;
    let (settings, provider) = provider(app, name)?;
    let Some(model) = model
        .map(str::to_owned)
        .or_else(|| settings.assistant_model.clone())
    else {
        bail!(
            "say which model to ask: `stepward models test {name} --model ID` (or give the \
             provider an `--assistant-model`)"
        );
    };
    let probe = runtime()?.block_on(provider.probe(&model));
    let result = probe_result(&probe);
    app.audit(
        storage::AuditAction::ModelTest,
        json!({
            "name": name,
            "model": model,
            "ok": result.ok,
            "error_kind": result.error_kind,
            "retries": result.retries,
        }),
    )?;
    // What the model answered, and the errors quoting it, are scrubbed on the way out.
    let shown = Shown::new(app)?;
    if json {
        shown.json(&result)?;
    } else {
        for retry in &probe.retries {
            shown.error(&format!(
                "retry {} after {:.1} s: {}",
                retry.retry,
                retry.wait.as_secs_f64(),
                retry.reason
            ));
        }
        match &probe.result {
            Ok(turn) => {
                shown.line(&format!("answer: {}", turn.text.trim()));
                shown.line(&format!("model: {}", turn.model));
                outln!(
                    "tokens: {} in, {} out",
                    turn.usage.input_tokens,
                    turn.usage.output_tokens
                );
            }
            Err(error) => shown.error(&format!("error: the test of {name} failed: {error}")),
        }
    }
    Ok(if result.ok {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}

/// A probe as the wire type the CLI's `--json` and the API share.
pub fn probe_result(probe: &llm::Probe) -> api_types::models::ModelTestResult {
    let retries = u32::try_from(probe.retries.len()).unwrap_or(u32::MAX);
    match &probe.result {
        Ok(turn) => api_types::models::ModelTestResult {
            ok: true,
            model: probe.model.clone(),
            answer: Some(turn.text.trim().to_owned()),
            answered_by: Some(turn.model.clone()),
            input_tokens: Some(turn.usage.input_tokens),
            output_tokens: Some(turn.usage.output_tokens),
            error_kind: None,
            error: None,
            retries,
        },
        Err(error) => api_types::models::ModelTestResult {
            ok: false,
            model: probe.model.clone(),
            answer: None,
            answered_by: None,
            input_tokens: None,
            output_tokens: None,
            error_kind: Some(error.kind().to_owned()),
            error: Some(error.to_string()),
            retries,
        },
    }
}

pub fn dev(command: &DevCommand) -> anyhow::Result<Outcome> {
    match command {
        DevCommand::FakeModel { listen, script } => {
            let text = crate::definitions::read_text(script)?;
            let script_value = fake_model::Script::from_json(&text)
                .with_context(|| format!("{} is not a fake model script", script.display()))?;
            let turns = script_value.turns.len();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let received = runtime.block_on(fake_model::serve_until(
                *listen,
                script_value,
                |fake| {
                    outln!(
                        "fake model serves {turns} scripted turn(s) at {} (Anthropic base URL {}, \
                         OpenAI-compatible base URL {}); the operator lets providers reach it with \
                         --allow-model-endpoint {}. Ctrl-C stops it.",
                        fake.url(),
                        fake.url(),
                        fake.openai_base_url(),
                        fake.endpoint()
                    );
                },
                async {
                    let _ = tokio::signal::ctrl_c().await;
                },
            ))?;
            errln!("fake model stopped after {} request(s)", received.len());
            Ok(Outcome::Done)
        }
    }
}
