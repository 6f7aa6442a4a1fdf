//! The account's model providers as the runtime and both front doors use them: its names (what
//! definitions are checked against), the grammar of a provider's name, and a provider ready to
//! call, its settings read from the store and its key from the vault.

use std::str::FromStr;

use anyhow::{Context, bail};
use redact::{SecretName, SecretRequest, SecretSource};
use storage::AccountId;
use storage::models::{ModelProvider, ModelProviderStore};

/// The account's names that definitions are checked against (G19: no script is handed a
/// model key; `model:` names a provider the account has).
pub fn account_names(
    store: &dyn ModelProviderStore,
    account: &AccountId,
) -> anyhow::Result<spec::AccountNames> {
    let providers = store
        .model_providers(account)
        .context("cannot read the account's model providers")?;
    Ok(spec::AccountNames {
        default_provider: providers
            .iter()
            .find(|provider| provider.is_default)
            .map(|provider| provider.name.clone()),
        model_providers: providers
            .into_iter()
            .map(|provider| provider.name)
            .collect(),
    })
}

/// A provider's name becomes the name of its vault key and the part of `model:` before the
/// first `/`.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    let mut characters = name.chars();
    let first_ok = characters
        .next()
        .is_some_and(|first| first.is_ascii_lowercase());
    let rest_ok = characters.all(|character| {
        character.is_ascii_lowercase()
            || character.is_ascii_digit()
            || character == '-'
            || character == '_'
    });
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        bail!(
            "`{name}` is not a provider name: agent files write `model: NAME/MODEL_ID`, so a \
             name is 1 to 64 lower-case letters, digits, `-` and `_`, starting with a letter \
             (such as `anthropic` or `local-llama`)"
        )
    }
}

/// The account's provider `name`, ready to call: its settings and its key from the vault.
pub fn provider(
    store: &dyn ModelProviderStore,
    secrets: &dyn SecretSource,
    account: &AccountId,
    name: &str,
    client: llm::Client,
) -> anyhow::Result<(ModelProvider, llm::Provider)> {
    let settings = store
        .model_providers(account)?
        .into_iter()
        .find(|provider| provider.name == name)
        .with_context(|| {
            format!("the account has no model provider `{name}`; `stepward models list` shows them")
        })?;
    let kind = llm::ProviderKind::from_str(&settings.kind)?;
    let request = SecretRequest {
        model_keys: vec![name.to_owned()],
        ..SecretRequest::default()
    };
    let key = secrets
        .resolve(account, &request)
        .with_context(|| {
            format!(
                "the key of {name} cannot be read; add it again with `stepward models add {name}`"
            )
        })?
        .into_iter()
        .find(|(found, _)| matches!(found, SecretName::ModelKey { provider } if provider == name))
        .map(|(_, value)| value)
        .with_context(|| format!("the vault has no key for {name}"))?;
    let provider = llm::Provider::new(account, kind, settings.base_url.as_deref(), key, client)?;
    Ok((settings, provider))
}
