//! The vault: opening it (root key, key check), account keys, and sealing and opening items.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redact::SecretValue;
use storage::vault::{
    HistoryWrite, InsertKeyOutcome, ItemKind, KeyCheck, SealedItem, SealedValue, VaultStore,
    WrappedAccountKey,
};
use storage::{AccountId, Timestamp};
use zeroize::Zeroizing;

use crate::crypto::{
    ACCOUNT_KEY_LABEL, KEY_CHECK_LABEL, KEY_CHECK_PLAINTEXT, KeyBytes, VALUE_LABEL,
    associated_data, random_id,
};
use crate::error::Error;
use crate::names::kind_label;
use crate::root_key::{
    KeyLocation, Notice, RootKeySource, VaultOptions, default_key_path, generated_key_notice,
    missing_default_key, pending_key_path, promote_pending_key, read_key_env, read_key_file,
    read_required_key_file, refuse_inside_data_dir, user_config_dir, write_new_key_file,
};

/// How many times a write is retried when another writer changed the same rows in between.
pub(crate) const MAX_ATTEMPTS: usize = 64;

/// How long a superseded value is kept by default, short enough that an old credential does not
/// stay stored for ever. A value a run that has not ended may have seen (the run was created
/// before the value was replaced) is kept past this until the run ends, however long it waits
/// at a gate (the store's pruning checks the runs).
pub const DEFAULT_SUPERSEDED_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The vault of every account. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Vault {
    pub(crate) store: Arc<dyn VaultStore>,
    root: RwLock<RootState>,
    install_id: String,
    user_config_dir: Option<PathBuf>,
    /// The data directory a root key file must stay outside of.
    pub(crate) data_dir: Option<PathBuf>,
    /// How long replaced and removed values are kept (sealed) for the scrub sets of resumed
    /// runs.
    superseded_retention: Duration,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Ids and locations only: the keys never reach a formatter.
        formatter
            .debug_struct("Vault")
            .field("install_id", &self.install_id)
            .field("root_key_location", &self.root_key_location())
            .finish_non_exhaustive()
    }
}

/// The root key in use and where it came from.
pub(crate) struct RootState {
    pub(crate) key: KeyBytes,
    pub(crate) root_key_id: String,
    pub(crate) location: KeyLocation,
}

/// An unwrapped account key with its version.
pub(crate) struct AccountKey {
    pub(crate) version: u32,
    pub(crate) key: KeyBytes,
}

impl Vault {
    /// Opens the vault: finds the root key, checks that it opens this data directory
    /// (generating the default key file on first start), and returns what to tell the person.
    pub fn open(
        options: &VaultOptions,
        store: Arc<dyn VaultStore>,
    ) -> Result<(Vault, Option<Notice>), Error> {
        let install_id = store.ensure_install_id(&random_id()?)?;
        // The id becomes a file name; accept only the shape this crate generates.
        if install_id.len() != 32 || !install_id.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(Error::InstallIdMalformed { install_id });
        }
        let stored_check = store.key_check()?;
        let data_dir = options.data_dir.as_deref();
        let (key, location, notice) = match &options.root_key {
            RootKeySource::File(path) => {
                refuse_inside_data_dir(path, data_dir)?;
                (
                    read_required_key_file(path)?,
                    KeyLocation::File(path.clone()),
                    None,
                )
            }
            RootKeySource::Env(name) => (read_key_env(name)?, KeyLocation::Env(name.clone()), None),
            RootKeySource::DefaultFile => {
                let config_dir = user_config_dir(options.user_config_dir.as_deref())?;
                let path = default_key_path(&config_dir, &install_id);
                // Checked before a key is generated there.
                refuse_inside_data_dir(&path, data_dir)?;
                let (key, notice) = load_default_key(&path, stored_check.as_ref())?;
                (key, KeyLocation::File(path), notice)
            }
        };
        let check = match stored_check {
            Some(check) => check,
            None => {
                let fresh = make_key_check(&key, &random_id()?)?;
                store.init_key_check(&fresh)?
            }
        };
        if !key_opens_check(&key, &check) {
            return Err(Error::RootKeyWrong {
                location: location.to_string(),
            });
        }
        let vault = Vault {
            store,
            root: RwLock::new(RootState {
                key,
                root_key_id: check.root_key_id,
                location,
            }),
            install_id,
            user_config_dir: options.user_config_dir.clone(),
            data_dir: options.data_dir.clone(),
            superseded_retention: DEFAULT_SUPERSEDED_RETENTION,
        };
        Ok((vault, notice))
    }

    /// Keeps replaced and removed values (sealed, never listed) for `retention` instead of
    /// [`DEFAULT_SUPERSEDED_RETENTION`]. A run that waits at a gate longer than this and is
    /// resumed in another process no longer gets the values replaced early in its wait
    /// scrubbed, so it should exceed the longest expected wait. Older values are deleted on the
    /// next write.
    pub fn with_superseded_retention(mut self, retention: Duration) -> Vault {
        self.superseded_retention = retention;
        self
    }

    /// How long replaced and removed values are kept.
    pub fn superseded_retention(&self) -> Duration {
        self.superseded_retention
    }

    /// The oldest superseded value a write made at `now` keeps.
    pub(crate) fn prune_superseded_before(&self, now: Timestamp) -> Timestamp {
        let retention = i64::try_from(self.superseded_retention.as_millis()).unwrap_or(i64::MAX);
        Timestamp(now.0.saturating_sub(retention))
    }

    /// What a write at `now` that replaces or removes values does with the history.
    pub(crate) fn history_write(&self, now: Timestamp) -> HistoryWrite {
        HistoryWrite {
            superseded_at: now,
            prune_before: self.prune_superseded_before(now),
        }
    }

    /// This installation's random id (the name of the default root key file).
    pub fn install_id(&self) -> &str {
        &self.install_id
    }

    /// Where the root key in use was read from, for display.
    pub fn root_key_location(&self) -> String {
        self.read_root().location.to_string()
    }

    pub(crate) fn read_root(&self) -> RwLockReadGuard<'_, RootState> {
        // A panic while holding the lock cannot leave the state half-changed: rotation replaces
        // the whole state in one assignment after its transaction committed.
        self.root.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write_root(&self) -> RwLockWriteGuard<'_, RootState> {
        self.root.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn default_key_path(&self) -> Result<PathBuf, Error> {
        let config_dir = user_config_dir(self.user_config_dir.as_deref())?;
        Ok(default_key_path(&config_dir, &self.install_id))
    }

    /// The account's current key, creating it on first use.
    pub(crate) fn account_key_or_create(
        &self,
        root: &RootState,
        account_id: &AccountId,
    ) -> Result<AccountKey, Error> {
        if let Some(stored) = self.store.account_key(account_id)? {
            return unwrap_account_key(root, &stored);
        }
        let key = KeyBytes::generate()?;
        let wrapped = wrap_account_key(root, account_id, 1, &key)?;
        match self.store.insert_account_key(&wrapped)? {
            InsertKeyOutcome::Inserted => Ok(AccountKey { version: 1, key }),
            InsertKeyOutcome::Existing(stored) => unwrap_account_key(root, &stored),
            InsertKeyOutcome::RootKeyChanged { .. } => Err(Error::RootKeyChangedElsewhere),
        }
    }

    /// The account's current key, if it has one.
    pub(crate) fn account_key(
        &self,
        root: &RootState,
        account_id: &AccountId,
    ) -> Result<Option<AccountKey>, Error> {
        match self.store.account_key(account_id)? {
            Some(stored) => unwrap_account_key(root, &stored).map(Some),
            None => Ok(None),
        }
    }
}

/// Finds the default key file, finishing an interrupted root rotation, or generates it on
/// first start.
fn load_default_key(
    path: &Path,
    stored_check: Option<&KeyCheck>,
) -> Result<(KeyBytes, Option<Notice>), Error> {
    let pending = pending_key_path(path);
    let current = read_key_file(path)?;
    if let Some(check) = stored_check {
        let current_opens = current
            .as_ref()
            .is_some_and(|key| key_opens_check(key, check));
        if !current_opens {
            // A rotation committed its transaction but died before renaming the new key over
            // the old one: the pending key is the one that opens the vault now.
            if let Some(pending_key) = read_key_file(&pending)?
                && key_opens_check(&pending_key, check)
            {
                promote_pending_key(&pending, path)?;
                return Ok((pending_key, None));
            }
        }
    }
    match (current, stored_check) {
        (Some(key), _) => Ok((key, None)),
        (None, Some(_)) => Err(missing_default_key(path)),
        (None, None) => {
            let key = KeyBytes::generate()?;
            if write_new_key_file(path, &key)? {
                Ok((key, Some(generated_key_notice(path))))
            } else {
                // Another process generated it first; use theirs.
                Ok((read_required_key_file(path)?, None))
            }
        }
    }
}

/// The current time in milliseconds since the Unix epoch.
pub(crate) fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or(0);
    Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
}

pub(crate) fn make_key_check(key: &KeyBytes, root_key_id: &str) -> Result<KeyCheck, Error> {
    let sealed = key.seal(
        KEY_CHECK_PLAINTEXT,
        &associated_data(&[KEY_CHECK_LABEL, root_key_id.as_bytes()]),
    )?;
    Ok(KeyCheck {
        root_key_id: root_key_id.to_owned(),
        nonce: sealed.nonce,
        ciphertext: sealed.ciphertext,
        created_at: now(),
    })
}

pub(crate) fn key_opens_check(key: &KeyBytes, check: &KeyCheck) -> bool {
    key.open(
        &check.nonce,
        &check.ciphertext,
        &associated_data(&[KEY_CHECK_LABEL, check.root_key_id.as_bytes()]),
    )
    .is_some_and(|plaintext| plaintext.as_slice() == KEY_CHECK_PLAINTEXT)
}

fn account_key_associated_data(
    account_id: &AccountId,
    key_version: u32,
    root_key_id: &str,
) -> Vec<u8> {
    associated_data(&[
        ACCOUNT_KEY_LABEL,
        account_id.as_str().as_bytes(),
        key_version.to_string().as_bytes(),
        root_key_id.as_bytes(),
    ])
}

/// Wraps an account key under a root key.
pub(crate) fn wrap_account_key_with(
    root_key: &KeyBytes,
    root_key_id: &str,
    account_id: &AccountId,
    key_version: u32,
    key: &KeyBytes,
) -> Result<WrappedAccountKey, Error> {
    let sealed = root_key.seal(
        key.dangerously_as_bytes(),
        &account_key_associated_data(account_id, key_version, root_key_id),
    )?;
    Ok(WrappedAccountKey {
        account_id: account_id.clone(),
        key_version,
        root_key_id: root_key_id.to_owned(),
        nonce: sealed.nonce,
        wrapped_key: sealed.ciphertext,
        created_at: now(),
    })
}

pub(crate) fn wrap_account_key(
    root: &RootState,
    account_id: &AccountId,
    key_version: u32,
    key: &KeyBytes,
) -> Result<WrappedAccountKey, Error> {
    wrap_account_key_with(&root.key, &root.root_key_id, account_id, key_version, key)
}

/// Unwraps an account key under a root key.
pub(crate) fn unwrap_account_key_with(
    root_key: &KeyBytes,
    wrapped: &WrappedAccountKey,
) -> Result<AccountKey, Error> {
    let tampered = || Error::AccountKeyTampered {
        account_id: wrapped.account_id.clone(),
        key_version: wrapped.key_version,
    };
    let plaintext = root_key
        .open(
            &wrapped.nonce,
            &wrapped.wrapped_key,
            &account_key_associated_data(
                &wrapped.account_id,
                wrapped.key_version,
                &wrapped.root_key_id,
            ),
        )
        .ok_or_else(tampered)?;
    let key = KeyBytes::from_slice(&plaintext).ok_or_else(tampered)?;
    Ok(AccountKey {
        version: wrapped.key_version,
        key,
    })
}

pub(crate) fn unwrap_account_key(
    root: &RootState,
    wrapped: &WrappedAccountKey,
) -> Result<AccountKey, Error> {
    if wrapped.root_key_id != root.root_key_id {
        return Err(Error::RootKeyChangedElsewhere);
    }
    unwrap_account_key_with(&root.key, wrapped)
}

/// The identity of one value, bound into its associated data.
pub(crate) struct ValueIdentity<'a> {
    pub(crate) account_id: &'a AccountId,
    pub(crate) kind: ItemKind,
    pub(crate) name: &'a str,
    pub(crate) version: u64,
}

fn value_associated_data(identity: &ValueIdentity<'_>, field: &str, key_version: u32) -> Vec<u8> {
    associated_data(&[
        VALUE_LABEL,
        identity.account_id.as_str().as_bytes(),
        identity.kind.as_str().as_bytes(),
        identity.name.as_bytes(),
        field.as_bytes(),
        identity.version.to_string().as_bytes(),
        key_version.to_string().as_bytes(),
    ])
}

/// Encrypts one value of an item under the account key.
pub(crate) fn seal_value(
    key: &AccountKey,
    identity: &ValueIdentity<'_>,
    field: &str,
    plaintext: &[u8],
) -> Result<SealedValue, Error> {
    let sealed = key.key.seal(
        plaintext,
        &value_associated_data(identity, field, key.version),
    )?;
    Ok(SealedValue {
        field: field.to_owned(),
        key_version: key.version,
        nonce: sealed.nonce,
        ciphertext: sealed.ciphertext,
    })
}

fn item_identity(item: &SealedItem) -> ValueIdentity<'_> {
    ValueIdentity {
        account_id: &item.account_id,
        kind: item.kind,
        name: &item.name,
        version: item.version,
    }
}

/// Decrypts one value of a stored item, as raw bytes.
pub(crate) fn open_value_bytes(
    key: &AccountKey,
    item: &SealedItem,
    value: &SealedValue,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    open_identified_bytes(key, &item_identity(item), value)
}

/// Decrypts one value sealed under `identity` (a current or a superseded one), as raw bytes.
pub(crate) fn open_identified_bytes(
    key: &AccountKey,
    identity: &ValueIdentity<'_>,
    value: &SealedValue,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let tampered = || Error::ValueTampered {
        account_id: identity.account_id.clone(),
        kind: kind_label(identity.kind),
        name: identity.name.to_owned(),
        field: value.field.clone(),
    };
    if value.key_version != key.version {
        return Err(tampered());
    }
    key.key
        .open(
            &value.nonce,
            &value.ciphertext,
            &value_associated_data(identity, &value.field, value.key_version),
        )
        .ok_or_else(tampered)
}

/// Decrypts one value of a stored item into a [`SecretValue`].
pub(crate) fn open_value(
    key: &AccountKey,
    item: &SealedItem,
    value: &SealedValue,
) -> Result<SecretValue, Error> {
    open_identified(key, &item_identity(item), value)
}

/// Decrypts one value sealed under `identity` into a [`SecretValue`].
pub(crate) fn open_identified(
    key: &AccountKey,
    identity: &ValueIdentity<'_>,
    value: &SealedValue,
) -> Result<SecretValue, Error> {
    let mut bytes = open_identified_bytes(key, identity, value)?;
    let owned = std::mem::take(&mut *bytes);
    match String::from_utf8(owned) {
        Ok(text) => Ok(SecretValue::new(text)),
        Err(error) => {
            // Hand the bytes back to a zeroizing buffer so they are wiped.
            *bytes = error.into_bytes();
            Err(Error::NotUtf8 {
                account_id: identity.account_id.clone(),
                kind: kind_label(identity.kind),
                name: identity.name.to_owned(),
            })
        }
    }
}
