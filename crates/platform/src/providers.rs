//! The account's model providers: their names (what definitions are checked against, G19),
//! the grammar of a provider's name, and a provider ready to call, its settings read from the
//! store and its key from the vault (never shown, never stored elsewhere).

use std::str::FromStr;

use redact::{SecretName, SecretRequest, SecretSource};
use storage::models::{ModelProvider, ModelProviderStore};
use storage::people::PeopleStore;
use storage::{AccountId, AuditLog, NewAuditEntry};

/// Why a provider cannot be named or used; each door says it in its own words.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// A name outside the grammar of provider names.
    #[error(
        "`{name}` is not a provider name: agent files write `model: NAME/MODEL_ID`, so a name is \
         1 to 64 lower-case letters, digits, `-` and `_`, starting with a letter (such as \
         `anthropic` or `local-llama`)"
    )]
    InvalidName { name: String },
    /// The account has no provider of that name.
    #[error("the account has no model provider `{name}`")]
    Unknown { name: String },
    /// The provider's stored kind is not one this version knows.
    #[error("model provider `{name}` is of a kind this version does not know: {detail}")]
    UnknownKind { name: String, detail: String },
    /// The vault could not be read for the provider's key.
    #[error("the key of {name} cannot be read")]
    KeyUnreadable {
        name: String,
        #[source]
        source: redact::SourceError,
    },
    /// The vault holds no key for the provider.
    #[error("the vault has no key for {name}")]
    NoKey { name: String },
    /// The settings do not make a provider (a base URL the endpoint rules refuse, ...).
    #[error("model provider `{name}` cannot be used")]
    Unusable {
        name: String,
        #[source]
        source: llm::Error,
    },
    /// The store failed.
    #[error("the account's model providers cannot be read")]
    Storage(#[from] storage::Error),
}

/// The account's names that definitions are checked against (G19: no script is handed a
/// model key; `model:` names a provider the account has; `notify:` names people of the
/// account who may decide).
pub fn account_names<S: ModelProviderStore + PeopleStore + ?Sized>(
    store: &S,
    account: &AccountId,
) -> Result<spec::AccountNames, ProviderError> {
    let providers = store.model_providers(account)?;
    let people = store
        .people(account)?
        .into_iter()
        .map(|person| spec::AccountPerson {
            email: person.email,
            may_decide: person.role.decides_gates(),
        })
        .collect();
    Ok(spec::AccountNames {
        people: Some(people),
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
/// first `/`: 1 to 64 lower-case letters, digits, `-` and `_`, starting with a letter.
pub fn check_name(name: &str) -> Result<(), ProviderError> {
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
        Err(ProviderError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// The account's provider `name`, ready to call: its settings and its key from the vault.
pub fn provider(
    store: &dyn ModelProviderStore,
    secrets: &dyn SecretSource,
    account: &AccountId,
    name: &str,
    client: llm::Client,
) -> Result<(ModelProvider, llm::Provider), ProviderError> {
    let settings = store
        .model_providers(account)?
        .into_iter()
        .find(|provider| provider.name == name)
        .ok_or_else(|| ProviderError::Unknown {
            name: name.to_owned(),
        })?;
    let kind = llm::ProviderKind::from_str(&settings.kind).map_err(|error| {
        ProviderError::UnknownKind {
            name: name.to_owned(),
            detail: error.to_string(),
        }
    })?;
    let request = SecretRequest {
        model_keys: vec![name.to_owned()],
        ..SecretRequest::default()
    };
    let key = secrets
        .resolve(account, &request)
        .map_err(|source| ProviderError::KeyUnreadable {
            name: name.to_owned(),
            source,
        })?
        .into_iter()
        .find(|(found, _)| matches!(found, SecretName::ModelKey { provider } if provider == name))
        .map(|(_, value)| value)
        .ok_or_else(|| ProviderError::NoKey {
            name: name.to_owned(),
        })?;
    let provider = llm::Provider::new(account, kind, settings.base_url.as_deref(), key, client)
        .map_err(|source| ProviderError::Unusable {
            name: name.to_owned(),
            source,
        })?;
    Ok((settings, provider))
}

/// Why a provider was not removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// The vault refused or failed to remove the provider's key.
    #[error("cannot remove the key of model provider `{name}`")]
    Vault {
        name: String,
        #[source]
        source: vault::Error,
    },
    /// The store failed.
    #[error("cannot {operation}")]
    Storage {
        operation: &'static str,
        #[source]
        source: storage::Error,
    },
}

/// Removes the model provider `name` of `entry`'s account and its key, for the API, the
/// console and `stepward models rm` alike; `false` when the account has neither (nothing is
/// recorded then).
///
/// The key goes first, with the audit entry in the same transaction, the settings row only
/// after: when the entry cannot be written nothing is removed. A provider whose key is
/// already gone has its entry written before its row goes.
pub fn remove_provider(
    store: &(impl ModelProviderStore + AuditLog + ?Sized),
    vault: Option<&vault::Vault>,
    entry: &NewAuditEntry,
    name: &str,
) -> Result<bool, RemoveError> {
    let account = &entry.account;
    let removed_key = match vault {
        Some(vault) => match vault.model_keys().remove_audited(account, name, entry) {
            Ok(()) => true,
            Err(vault::Error::NotFound { .. }) => false,
            Err(source) => {
                return Err(RemoveError::Vault {
                    name: name.to_owned(),
                    source,
                });
            }
        },
        None => false,
    };
    let storage = |operation| move |source| RemoveError::Storage { operation, source };
    if !removed_key {
        let exists = store
            .model_providers(account)
            .map_err(storage("read the model providers"))?
            .iter()
            .any(|provider| provider.name == name);
        if !exists {
            return Ok(false);
        }
        store
            .append_audit(entry)
            .map_err(storage("write the audit log"))?;
    }
    store
        .remove_model_provider(account, name)
        .map_err(storage("remove the model provider"))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{ProviderError, check_name};

    #[test]
    fn a_provider_name_is_lower_case_letters_digits_dashes_and_underscores_from_a_letter() {
        for good in ["anthropic", "local-llama", "a", "x_1"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = "a".repeat(65);
        for bad in ["", "Anthropic", "1st", "-x", "a/b", "a b", long.as_str()] {
            assert!(
                matches!(check_name(bad), Err(ProviderError::InvalidName { .. })),
                "{bad}"
            );
        }
    }
}
