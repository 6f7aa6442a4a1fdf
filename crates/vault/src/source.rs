//! The vault as the one source of a run's secret values ([`redact::SecretSource`]).

use std::collections::{BTreeMap, BTreeSet};

use redact::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};
use storage::vault::{ItemKind, SealedItem, SealedValue, SupersededValue};
use storage::{AccountId, Timestamp};

use crate::error::Error;
use crate::names::kind_label;
use crate::vault::{MAX_ATTEMPTS, ValueIdentity, Vault, open_identified, open_value};

impl SecretSource for Vault {
    /// Every field of each requested connection, each requested secret and model key. A name
    /// that does not exist makes the whole request fail with [`SourceError::Missing`] naming
    /// every missing one; otherwise a revoked connection makes it fail with
    /// [`SourceError::Revoked`].
    fn resolve(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        self.resolve_request(account_id, request)
            .map_err(ResolveFailure::into_source_error)
    }

    /// Every stored value of the account, revoked connections included (a revoked credential
    /// in a file is still a leak), and every superseded value still kept (an old key may still
    /// work at the provider).
    fn account_values(&self, account_id: &AccountId) -> Result<Vec<SecretValue>, SourceError> {
        self.all_values(account_id).map_err(unavailable)
    }

    /// The account's vault generation, moved by every write of its items in the same
    /// transaction.
    fn generation(&self, account_id: &AccountId) -> Result<u64, SourceError> {
        self.store
            .generation(account_id)
            .map_err(|error| unavailable(Error::from(error)))
    }

    /// The kept values of the requested names that were replaced or removed at or after
    /// `since_millis`, and the values of requested items revoked at or after it (a revoked
    /// credential stopped being current for runs then). Kept values past the retention are
    /// gone; a name that no longer exists is not an error.
    fn superseded_values(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
        since_millis: i64,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        self.superseded_for(account_id, request, Timestamp(since_millis))
            .map_err(unavailable)
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

/// The error and its causes as one sentence: each states its own context once.
fn with_causes(error: &Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(current) = cause {
        text.push_str(": ");
        text.push_str(&current.to_string());
        cause = current.source();
    }
    text
}

fn unavailable(error: Error) -> SourceError {
    SourceError::Unavailable {
        detail: with_causes(&error),
    }
}

/// The name a run knows a value by.
fn secret_name(kind: ItemKind, name: &str, field: &str) -> SecretName {
    match kind {
        ItemKind::Connection => SecretName::ConnectionField {
            alias: name.to_owned(),
            field: field.to_owned(),
        },
        ItemKind::Secret => SecretName::AgentSecret {
            name: name.to_owned(),
        },
        ItemKind::ModelKey => SecretName::ModelKey {
            provider: name.to_owned(),
        },
    }
}

/// Every item identity a request names.
fn requested_identities(request: &SecretRequest) -> BTreeSet<(ItemKind, &str)> {
    requested_in_order(request).collect()
}

/// The item identities a request names, in the order asked for (repeats included).
fn requested_in_order(request: &SecretRequest) -> impl Iterator<Item = (ItemKind, &str)> {
    request
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
        )
}

/// How a missing or revoked item is named: `connection payments`, `secret GITHUB_TOKEN`,
/// `model key anthropic`.
fn display_name(kind: ItemKind, name: &str) -> String {
    format!("{} {name}", kind_label(kind))
}

impl Vault {
    fn resolve_request(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, ResolveFailure> {
        // Each name once, in the order first asked for.
        let mut wanted: Vec<(ItemKind, &str)> = Vec::new();
        let mut seen = BTreeSet::new();
        for entry in requested_in_order(request) {
            if seen.insert(entry) {
                wanted.push(entry);
            }
        }
        if wanted.is_empty() {
            return Ok(Vec::new());
        }

        let account = account_id.clone();
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
            account_id: account_id.clone(),
        })?;
        let mut resolved = Vec::new();
        for identity in &wanted {
            let Some(item) = by_identity.get(identity) else {
                continue;
            };
            for value in &item.values {
                resolved.push((
                    secret_name(item.kind, &item.name, &value.field),
                    open_value(&key, item, value)?,
                ));
            }
        }
        Ok(resolved)
    }

    fn superseded_for(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
        since: Timestamp,
    ) -> Result<Vec<(SecretName, SecretValue)>, Error> {
        let wanted = requested_identities(request);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let account = account_id.clone();
        let root = self.read_root();
        let is_wanted = |kind: ItemKind, name: &str| wanted.contains(&(kind, name));
        // As in `read_consistently`: a key rotation committing between the reads is detected
        // by a key version that does not match, and the reads repeated.
        let mut attempt = 0;
        let (kept, revoked, key) = loop {
            attempt += 1;
            let kept: Vec<SupersededValue> = self
                .store
                .superseded_values(&account, since)?
                .into_iter()
                .filter(|value| is_wanted(value.kind, &value.name))
                .collect();
            let revoked: Vec<SealedItem> = self
                .store
                .items(&account)?
                .into_iter()
                .filter(|item| {
                    is_wanted(item.kind, &item.name)
                        && item
                            .revoked_at
                            .is_some_and(|revoked_at| revoked_at >= since)
                })
                .collect();
            let key = self.account_key(&root, &account)?;
            let consistent = match &key {
                Some(key) => {
                    kept.iter().all(|value| value.key_version == key.version)
                        && revoked
                            .iter()
                            .flat_map(|item| item.values.iter())
                            .all(|value| value.key_version == key.version)
                }
                None => kept.is_empty() && revoked.is_empty(),
            };
            if consistent || attempt >= MAX_ATTEMPTS {
                break (kept, revoked, key);
            }
        };
        if kept.is_empty() && revoked.is_empty() {
            return Ok(Vec::new());
        }
        let key = key.ok_or_else(|| Error::NoAccountKey {
            account_id: account_id.clone(),
        })?;
        let mut values = Vec::new();
        for value in &kept {
            let identity = ValueIdentity {
                account_id: &value.account_id,
                kind: value.kind,
                name: &value.name,
                version: value.version,
            };
            let sealed = SealedValue {
                field: value.field.clone(),
                key_version: value.key_version,
                nonce: value.nonce.clone(),
                ciphertext: value.ciphertext.clone(),
            };
            values.push((
                secret_name(value.kind, &value.name, &value.field),
                open_identified(&key, &identity, &sealed)?,
            ));
        }
        for item in &revoked {
            for value in &item.values {
                values.push((
                    secret_name(item.kind, &item.name, &value.field),
                    open_value(&key, item, value)?,
                ));
            }
        }
        Ok(values)
    }

    /// Every value of the account, current (revoked ones included) and superseded (still
    /// kept), read consistently with one key version.
    fn all_values(&self, account_id: &AccountId) -> Result<Vec<SecretValue>, Error> {
        let account = account_id.clone();
        let root = self.read_root();
        let mut attempt = 0;
        let (items, kept, key) = loop {
            attempt += 1;
            let items = self.store.items(&account)?;
            let kept = self
                .store
                .superseded_values(&account, Timestamp(i64::MIN))?;
            let key = self.account_key(&root, &account)?;
            let consistent = match &key {
                Some(key) => {
                    items
                        .iter()
                        .flat_map(|item| item.values.iter())
                        .all(|value| value.key_version == key.version)
                        && kept.iter().all(|value| value.key_version == key.version)
                }
                None => items.is_empty() && kept.is_empty(),
            };
            // Past the last attempt, a value sealed under another key version fails to open
            // below, which is the error to give.
            if consistent || attempt >= MAX_ATTEMPTS {
                break (items, kept, key);
            }
        };
        let Some(key) = key else {
            return Ok(Vec::new());
        };
        let mut values = Vec::new();
        for item in &items {
            for value in &item.values {
                values.push(open_value(&key, item, value)?);
            }
        }
        for value in &kept {
            let identity = ValueIdentity {
                account_id: &value.account_id,
                kind: value.kind,
                name: &value.name,
                version: value.version,
            };
            let sealed = SealedValue {
                field: value.field.clone(),
                key_version: value.key_version,
                nonce: value.nonce.clone(),
                ciphertext: value.ciphertext.clone(),
            };
            values.push(open_identified(&key, &identity, &sealed)?);
        }
        Ok(values)
    }
}
