//! The vault as the one source of a run's secret values ([`redact::SecretSource`]).

use std::collections::{BTreeMap, BTreeSet};

use redact::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};
use storage::AccountId;
use storage::vault::{ItemKind, SealedItem};

use crate::error::Error;
use crate::names::kind_label;
use crate::vault::{Vault, open_value};

impl SecretSource for Vault {
    /// Every field of each requested connection, each requested secret and model key. A name
    /// that does not exist makes the whole request fail with [`SourceError::Missing`] naming
    /// every missing one; otherwise a revoked connection makes it fail with
    /// [`SourceError::Revoked`].
    fn resolve(
        &self,
        account_id: &str,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        self.resolve_request(account_id, request)
            .map_err(ResolveFailure::into_source_error)
    }

    /// Every stored value of the account, revoked connections included (a revoked credential
    /// in a file is still a leak).
    fn current_values(&self, account_id: &str) -> Result<Vec<SecretValue>, SourceError> {
        self.all_values(account_id).map_err(unavailable)
    }
}

enum ResolveFailure {
    Missing(Vec<String>),
    Revoked(Vec<String>),
    Vault(Error),
}

impl ResolveFailure {
    fn into_source_error(self) -> SourceError {
        match self {
            ResolveFailure::Missing(names) => SourceError::Missing { names },
            ResolveFailure::Revoked(names) => SourceError::Revoked { names },
            ResolveFailure::Vault(error) => unavailable(error),
        }
    }
}

impl From<Error> for ResolveFailure {
    fn from(error: Error) -> ResolveFailure {
        ResolveFailure::Vault(error)
    }
}

fn unavailable(error: Error) -> SourceError {
    SourceError::Unavailable {
        detail: error.to_string(),
    }
}

/// How a missing or revoked item is named: `connection payments`, `secret GITHUB_TOKEN`,
/// `model key anthropic`.
fn display_name(kind: ItemKind, name: &str) -> String {
    format!("{} {name}", kind_label(kind))
}

impl Vault {
    fn resolve_request(
        &self,
        account_id: &str,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, ResolveFailure> {
        // Each name once, in the order first asked for.
        let mut wanted: Vec<(ItemKind, &str)> = Vec::new();
        let mut seen = BTreeSet::new();
        let requested = request
            .connections
            .iter()
            .map(|alias| (ItemKind::Connection, alias.as_str()))
            .chain(
                request
                    .secrets
                    .iter()
                    .map(|name| (ItemKind::Secret, name.as_str())),
            )
            .chain(
                request
                    .model_keys
                    .iter()
                    .map(|provider| (ItemKind::ModelKey, provider.as_str())),
            );
        for entry in requested {
            if seen.insert(entry) {
                wanted.push(entry);
            }
        }
        if wanted.is_empty() {
            return Ok(Vec::new());
        }

        let account = AccountId(account_id.to_owned());
        let root = self.read_root();
        let (items, key) =
            self.read_consistently(&root, &account, || Ok(self.store.items(&account)?))?;
        let by_identity: BTreeMap<(ItemKind, &str), &SealedItem> = items
            .iter()
            .map(|item| ((item.kind, item.name.as_str()), item))
            .collect();

        let missing: Vec<String> = wanted
            .iter()
            .filter(|identity| !by_identity.contains_key(*identity))
            .map(|(kind, name)| display_name(*kind, name))
            .collect();
        if !missing.is_empty() {
            return Err(ResolveFailure::Missing(missing));
        }
        let revoked: Vec<String> = wanted
            .iter()
            .filter(|identity| {
                by_identity
                    .get(*identity)
                    .is_some_and(|item| item.revoked_at.is_some())
            })
            .map(|(kind, name)| display_name(*kind, name))
            .collect();
        if !revoked.is_empty() {
            return Err(ResolveFailure::Revoked(revoked));
        }

        let key = key.ok_or_else(|| Error::NoAccountKey {
            account_id: account_id.to_owned(),
        })?;
        let mut resolved = Vec::new();
        for identity in &wanted {
            let Some(item) = by_identity.get(identity) else {
                continue;
            };
            for value in &item.values {
                let secret_name = match item.kind {
                    ItemKind::Connection => SecretName::ConnectionField {
                        alias: item.name.clone(),
                        field: value.field.clone(),
                    },
                    ItemKind::Secret => SecretName::AgentSecret {
                        name: item.name.clone(),
                    },
                    ItemKind::ModelKey => SecretName::ModelKey {
                        provider: item.name.clone(),
                    },
                };
                resolved.push((secret_name, open_value(&key, item, value)?));
            }
        }
        Ok(resolved)
    }

    fn all_values(&self, account_id: &str) -> Result<Vec<SecretValue>, Error> {
        let account = AccountId(account_id.to_owned());
        let root = self.read_root();
        let (items, key) =
            self.read_consistently(&root, &account, || Ok(self.store.items(&account)?))?;
        let Some(key) = key else {
            return Ok(Vec::new());
        };
        let mut values = Vec::new();
        for item in &items {
            for value in &item.values {
                values.push(open_value(&key, item, value)?);
            }
        }
        Ok(values)
    }
}
