//! Secrets, connections and model keys: setting, listing (names only), removing, revoking.

use redact::SecretValue;
use storage::vault::{ItemKind, ItemSummary, SealedItem, WriteOutcome};
use storage::{AccountId, NewAuditEntry, Timestamp};

use crate::MIN_VALUE_BYTES;
use crate::error::Error;
use crate::names::{
    check_alias, check_field, check_provider, check_secret_name, check_secret_name_format,
    field_variable_part, kind_label,
};
use crate::vault::{
    AccountKey, MAX_ATTEMPTS, RootState, ValueIdentity, Vault, now, open_value, seal_value,
};

/// Builds a write's audit entry from the item as the write will leave it (name, version,
/// field names; never a value). Called once per attempt, so a retried write records the
/// version it actually wrote.
pub type ItemAudit<'a> = dyn Fn(&ItemSummary) -> NewAuditEntry + 'a;

/// A secret or model key as listings show it: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub name: String,
    /// 1 when first set, one more at each change of value.
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A connection as listings show it: its alias and field names, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub alias: String,
    /// Field names in ascending order.
    pub fields: Vec<String>,
    pub version: u64,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The agent secrets of every account (`secrets: [GITHUB_TOKEN]`).
pub struct Secrets<'vault> {
    vault: &'vault Vault,
}

/// The connections of every account (`connections: [payments]`).
pub struct Connections<'vault> {
    vault: &'vault Vault,
}

/// The model provider keys of every account.
pub struct ModelKeys<'vault> {
    vault: &'vault Vault,
}

impl Vault {
    /// The agent secrets.
    pub fn secrets(&self) -> Secrets<'_> {
        Secrets { vault: self }
    }

    /// The connections.
    pub fn connections(&self) -> Connections<'_> {
        Connections { vault: self }
    }

    /// The model provider keys.
    pub fn model_keys(&self) -> ModelKeys<'_> {
        ModelKeys { vault: self }
    }
}

impl Secrets<'_> {
    /// Creates the secret, or replaces its value and bumps its version.
    pub fn set(
        &self,
        account_id: &AccountId,
        name: &str,
        value: SecretValue,
    ) -> Result<SecretInfo, Error> {
        self.set_with(account_id, name, value, None)
    }

    /// [`Secrets::set`] with its audit entry, built from the item as it will stand, appended
    /// in the write's own transaction: when the entry cannot be written nothing is set.
    pub fn set_audited(
        &self,
        account_id: &AccountId,
        name: &str,
        value: SecretValue,
        audit: &ItemAudit<'_>,
    ) -> Result<SecretInfo, Error> {
        self.set_with(account_id, name, value, Some(audit))
    }

    fn set_with(
        &self,
        account_id: &AccountId,
        name: &str,
        value: SecretValue,
        audit: Option<&ItemAudit<'_>>,
    ) -> Result<SecretInfo, Error> {
        check_secret_name(name)?;
        let summary = self.vault.put_item(
            account_id,
            ItemKind::Secret,
            name,
            &[(String::new(), value)],
            audit,
        )?;
        Ok(secret_info(summary))
    }

    /// Every secret of the account: names, versions and dates.
    pub fn list(&self, account_id: &AccountId) -> Result<Vec<SecretInfo>, Error> {
        self.vault
            .list_kind(account_id, ItemKind::Secret)
            .map(|summaries| summaries.into_iter().map(secret_info).collect())
    }

    /// Deletes the secret; [`Error::NotFound`] if there is none.
    /// A malformed name is [`Error::InvalidName`]; a reserved one is accepted, so that a secret
    /// stored before its name became reserved can still be removed.
    pub fn remove(&self, account_id: &AccountId, name: &str) -> Result<(), Error> {
        check_secret_name_format(name)?;
        self.vault
            .remove_item(account_id, ItemKind::Secret, name, None)
    }

    /// [`Secrets::remove`] with its audit entry appended in the same transaction: when the
    /// entry cannot be written nothing is removed.
    pub fn remove_audited(
        &self,
        account_id: &AccountId,
        name: &str,
        audit: &NewAuditEntry,
    ) -> Result<(), Error> {
        check_secret_name_format(name)?;
        self.vault
            .remove_item(account_id, ItemKind::Secret, name, Some(audit))
    }

    /// The secret's current value. Only for a person who asked to see it; runs get values
    /// through [`redact::SecretSource`].
    pub fn dangerously_reveal(
        &self,
        account_id: &AccountId,
        name: &str,
    ) -> Result<SecretValue, Error> {
        check_secret_name_format(name)?;
        self.vault.reveal_single(account_id, ItemKind::Secret, name)
    }
}

impl Connections<'_> {
    /// Creates the connection, or replaces all its fields and bumps its version (which also
    /// lifts a revocation).
    pub fn add(
        &self,
        account_id: &AccountId,
        alias: &str,
        fields: Vec<(String, SecretValue)>,
    ) -> Result<ConnectionInfo, Error> {
        self.add_with(account_id, alias, fields, None)
    }

    /// [`Connections::add`] with its audit entry, built from the item as it will stand,
    /// appended in the write's own transaction: when the entry cannot be written nothing is
    /// set.
    pub fn add_audited(
        &self,
        account_id: &AccountId,
        alias: &str,
        fields: Vec<(String, SecretValue)>,
        audit: &ItemAudit<'_>,
    ) -> Result<ConnectionInfo, Error> {
        self.add_with(account_id, alias, fields, Some(audit))
    }

    fn add_with(
        &self,
        account_id: &AccountId,
        alias: &str,
        fields: Vec<(String, SecretValue)>,
        audit: Option<&ItemAudit<'_>>,
    ) -> Result<ConnectionInfo, Error> {
        check_alias(alias)?;
        if fields.is_empty() {
            return Err(Error::NoFields {
                alias: alias.to_owned(),
            });
        }
        let mut seen: Vec<(String, &str)> = Vec::with_capacity(fields.len());
        for (field, _) in &fields {
            check_field(field)?;
            let variable_part = field_variable_part(field);
            if let Some((_, first)) = seen.iter().find(|(part, _)| *part == variable_part) {
                return Err(Error::DuplicateField {
                    alias: alias.to_owned(),
                    first: (*first).to_owned(),
                    second: field.clone(),
                    variable: format!("CONN_{}_{variable_part}", field_variable_part(alias)),
                });
            }
            seen.push((variable_part, field));
        }
        let summary =
            self.vault
                .put_item(account_id, ItemKind::Connection, alias, &fields, audit)?;
        Ok(connection_info(summary))
    }

    /// Every connection of the account: aliases, field names, versions, dates, revocation.
    pub fn list(&self, account_id: &AccountId) -> Result<Vec<ConnectionInfo>, Error> {
        self.vault
            .list_kind(account_id, ItemKind::Connection)
            .map(|summaries| summaries.into_iter().map(connection_info).collect())
    }

    /// Deletes the connection and its values; [`Error::NotFound`] if there is none.
    /// A malformed alias is [`Error::InvalidName`].
    pub fn remove(&self, account_id: &AccountId, alias: &str) -> Result<(), Error> {
        check_alias(alias)?;
        self.vault
            .remove_item(account_id, ItemKind::Connection, alias, None)
    }

    /// [`Connections::remove`] with its audit entry appended in the same transaction.
    pub fn remove_audited(
        &self,
        account_id: &AccountId,
        alias: &str,
        audit: &NewAuditEntry,
    ) -> Result<(), Error> {
        check_alias(alias)?;
        self.vault
            .remove_item(account_id, ItemKind::Connection, alias, Some(audit))
    }

    /// Marks the connection revoked: runs that ask for it are refused, naming it, until it is
    /// added again. Its values stay stored (and stay in every scrub set).
    /// A malformed alias is [`Error::InvalidName`].
    pub fn revoke(&self, account_id: &AccountId, alias: &str) -> Result<(), Error> {
        self.revoke_with(account_id, alias, None)
    }

    /// [`Connections::revoke`] with its audit entry appended in the same transaction: when the
    /// entry cannot be written nothing is revoked.
    pub fn revoke_audited(
        &self,
        account_id: &AccountId,
        alias: &str,
        audit: &NewAuditEntry,
    ) -> Result<(), Error> {
        self.revoke_with(account_id, alias, Some(audit))
    }

    fn revoke_with(
        &self,
        account_id: &AccountId,
        alias: &str,
        audit: Option<&NewAuditEntry>,
    ) -> Result<(), Error> {
        check_alias(alias)?;
        let account = account_id.clone();
        if self
            .vault
            .store
            .revoke_item(&account, ItemKind::Connection, alias, now(), audit)?
        {
            Ok(())
        } else {
            Err(not_found(account_id, ItemKind::Connection, alias))
        }
    }

    /// The connection's fields and current values. Only for a person who asked to see them.
    pub fn dangerously_reveal(
        &self,
        account_id: &AccountId,
        alias: &str,
    ) -> Result<Vec<(String, SecretValue)>, Error> {
        check_alias(alias)?;
        self.vault
            .reveal_item(account_id, ItemKind::Connection, alias)
    }
}

impl ModelKeys<'_> {
    /// Creates or replaces the account's key for a model provider.
    pub fn set(
        &self,
        account_id: &AccountId,
        provider: &str,
        value: SecretValue,
    ) -> Result<SecretInfo, Error> {
        self.set_with(account_id, provider, value, None)
    }

    /// [`ModelKeys::set`] with its audit entry appended in the write's own transaction.
    pub fn set_audited(
        &self,
        account_id: &AccountId,
        provider: &str,
        value: SecretValue,
        audit: &ItemAudit<'_>,
    ) -> Result<SecretInfo, Error> {
        self.set_with(account_id, provider, value, Some(audit))
    }

    fn set_with(
        &self,
        account_id: &AccountId,
        provider: &str,
        value: SecretValue,
        audit: Option<&ItemAudit<'_>>,
    ) -> Result<SecretInfo, Error> {
        check_provider(provider)?;
        let summary = self.vault.put_item(
            account_id,
            ItemKind::ModelKey,
            provider,
            &[(String::new(), value)],
            audit,
        )?;
        Ok(secret_info(summary))
    }

    /// Every provider the account has a key for: names, versions and dates.
    pub fn list(&self, account_id: &AccountId) -> Result<Vec<SecretInfo>, Error> {
        self.vault
            .list_kind(account_id, ItemKind::ModelKey)
            .map(|summaries| summaries.into_iter().map(secret_info).collect())
    }

    /// Deletes the provider's key; [`Error::NotFound`] if there is none.
    /// A malformed provider is [`Error::InvalidName`].
    pub fn remove(&self, account_id: &AccountId, provider: &str) -> Result<(), Error> {
        check_provider(provider)?;
        self.vault
            .remove_item(account_id, ItemKind::ModelKey, provider, None)
    }

    /// [`ModelKeys::remove`] with its audit entry appended in the same transaction.
    pub fn remove_audited(
        &self,
        account_id: &AccountId,
        provider: &str,
        audit: &NewAuditEntry,
    ) -> Result<(), Error> {
        check_provider(provider)?;
        self.vault
            .remove_item(account_id, ItemKind::ModelKey, provider, Some(audit))
    }
}

fn secret_info(summary: ItemSummary) -> SecretInfo {
    SecretInfo {
        name: summary.name,
        version: summary.version,
        created_at: summary.created_at,
        updated_at: summary.updated_at,
    }
}

fn connection_info(summary: ItemSummary) -> ConnectionInfo {
    ConnectionInfo {
        alias: summary.name,
        fields: summary.fields,
        version: summary.version,
        revoked_at: summary.revoked_at,
        created_at: summary.created_at,
        updated_at: summary.updated_at,
    }
}

pub(crate) fn not_found(account_id: &AccountId, kind: ItemKind, name: &str) -> Error {
    Error::NotFound {
        account_id: account_id.clone(),
        kind: kind_label(kind),
        name: name.to_owned(),
    }
}

fn summary_of(item: &SealedItem) -> ItemSummary {
    let mut fields: Vec<String> = item
        .values
        .iter()
        .map(|value| value.field.clone())
        .collect();
    fields.sort();
    ItemSummary {
        account_id: item.account_id.clone(),
        kind: item.kind,
        name: item.name.clone(),
        version: item.version,
        fields,
        revoked_at: item.revoked_at,
        created_at: item.created_at,
        updated_at: item.updated_at,
    }
}

impl Vault {
    /// Seals `values` under the account's key as the next version of the item and stores it,
    /// retrying when another writer changed the item or the account key in between.
    fn put_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        values: &[(String, SecretValue)],
        audit: Option<&ItemAudit<'_>>,
    ) -> Result<ItemSummary, Error> {
        for (field, value) in values {
            let length = value.dangerously_expose().len();
            if length == 0 {
                return Err(Error::EmptyValue {
                    kind: kind_label(kind),
                    name: name.to_owned(),
                    field: field.clone(),
                });
            }
            if length < MIN_VALUE_BYTES {
                return Err(Error::ValueTooShort {
                    kind: kind_label(kind),
                    name: name.to_owned(),
                    field: field.clone(),
                    min_bytes: MIN_VALUE_BYTES,
                });
            }
        }
        let root = self.read_root();
        for _ in 0..MAX_ATTEMPTS {
            let key = self.account_key_or_create(&root, account_id)?;
            let existing = self.store.item(account_id, kind, name)?;
            let expected_version = existing.as_ref().map(|item| item.version);
            let version = expected_version.map_or(1, |stored| stored + 1);
            let identity = ValueIdentity {
                account_id,
                kind,
                name,
                version,
            };
            let sealed = values
                .iter()
                .map(|(field, value)| {
                    seal_value(
                        &key,
                        &identity,
                        field,
                        value.dangerously_expose().as_bytes(),
                    )
                })
                .collect::<Result<Vec<_>, Error>>()?;
            let written_at = now();
            let item = SealedItem {
                account_id: account_id.clone(),
                kind,
                name: name.to_owned(),
                version,
                revoked_at: None,
                created_at: existing.map_or(written_at, |stored| stored.created_at),
                updated_at: written_at,
                values: sealed,
            };
            let history = self.history_write(written_at);
            let summary = summary_of(&item);
            let entry = audit.map(|build| build(&summary));
            match self
                .store
                .put_item(&item, expected_version, &history, entry.as_ref())?
            {
                WriteOutcome::Written => return Ok(summary),
                WriteOutcome::RootKeyConflict { .. } => return Err(Error::RootKeyChangedElsewhere),
                WriteOutcome::VersionConflict { .. } | WriteOutcome::KeyConflict { .. } => {}
            }
        }
        Err(Error::Contention {
            account_id: account_id.clone(),
            kind: kind_label(kind),
            name: name.to_owned(),
        })
    }

    fn list_kind(&self, account_id: &AccountId, kind: ItemKind) -> Result<Vec<ItemSummary>, Error> {
        let summaries = self.store.list_items(account_id)?;
        Ok(summaries
            .into_iter()
            .filter(|summary| summary.kind == kind)
            .collect())
    }

    fn remove_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        audit: Option<&NewAuditEntry>,
    ) -> Result<(), Error> {
        let history = self.history_write(now());
        if self
            .store
            .remove_item(account_id, kind, name, &history, audit)?
        {
            Ok(())
        } else {
            Err(not_found(account_id, kind, name))
        }
    }

    fn reveal_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
    ) -> Result<Vec<(String, SecretValue)>, Error> {
        let account = account_id.clone();
        let root = self.read_root();
        let (items, key) = self.read_consistently(&root, &account, || {
            Ok(self.store.item(&account, kind, name)?.into_iter().collect())
        })?;
        let Some(item) = items.into_iter().next() else {
            return Err(not_found(account_id, kind, name));
        };
        let key = key.ok_or_else(|| Error::NoAccountKey {
            account_id: account_id.clone(),
        })?;
        item.values
            .iter()
            .map(|value| Ok((value.field.clone(), open_value(&key, &item, value)?)))
            .collect()
    }

    fn reveal_single(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
    ) -> Result<SecretValue, Error> {
        let mut values = self.reveal_item(account_id, kind, name)?;
        match values.pop() {
            Some((_, value)) if values.is_empty() => Ok(value),
            _ => Err(Error::Store {
                source: storage::Error::Corrupt {
                    what: "vault item",
                    detail: format!(
                        "{} {name:?} does not hold exactly one value",
                        kind_label(kind)
                    ),
                },
            }),
        }
    }

    /// Reads items and the account key so that every value is sealed under that key: a key
    /// rotation that commits between the two reads is detected and the read repeated. After
    /// the last attempt the items are returned as they are, and opening a value sealed under
    /// another key version fails as tampered.
    pub(crate) fn read_consistently(
        &self,
        root: &RootState,
        account_id: &AccountId,
        read_items: impl Fn() -> Result<Vec<SealedItem>, Error>,
    ) -> Result<(Vec<SealedItem>, Option<AccountKey>), Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let items = read_items()?;
            let key = self.account_key(root, account_id)?;
            let consistent = match &key {
                Some(key) => items
                    .iter()
                    .flat_map(|item| item.values.iter())
                    .all(|value| value.key_version == key.version),
                None => items.is_empty(),
            };
            if consistent || attempt >= MAX_ATTEMPTS {
                return Ok((items, key));
            }
        }
    }
}
