//! Rotation of the root key (rewraps every account key) and of an account key (re-encrypts
//! the account's values), each in one storage transaction so a rotation that dies half-way
//! leaves the old state.

use storage::vault::{SealedItem, SealedValue, SupersededValue, WrappedAccountKey, WriteOutcome};
use storage::{AccountId, NewAuditEntry};

use crate::crypto::{KeyBytes, random_id};
use crate::error::Error;
use crate::root_key::{
    KeyLocation, Notice, RootKeySource, pending_key_path, promote_pending_key, read_key_env,
    read_key_file, refuse_inside_data_dir, replace_key_file, write_new_key_file,
};
use crate::vault::{
    AccountKey, MAX_ATTEMPTS, RootState, ValueIdentity, Vault, make_key_check, now,
    open_identified_bytes, open_value_bytes, seal_value, unwrap_account_key, wrap_account_key,
    wrap_account_key_with,
};

impl Vault {
    /// Re-encrypts every value of the account, and every superseded value it still keeps,
    /// under a new account key, in one transaction (superseded values past their retention are
    /// deleted instead). Returns the new key version.
    pub fn rotate_account_key(&self, account_id: &AccountId) -> Result<u32, Error> {
        self.rotate_account_key_with(account_id, None)
    }

    /// [`Vault::rotate_account_key`] with its audit entry (built from the new key version)
    /// appended in the rotation's own transaction: when the entry cannot be written the
    /// rotation is rolled back and the error returned.
    pub fn rotate_account_key_audited(
        &self,
        account_id: &AccountId,
        audit: &dyn Fn(u32) -> NewAuditEntry,
    ) -> Result<u32, Error> {
        self.rotate_account_key_with(account_id, Some(audit))
    }

    fn rotate_account_key_with(
        &self,
        account_id: &AccountId,
        audit: Option<&dyn Fn(u32) -> NewAuditEntry>,
    ) -> Result<u32, Error> {
        let account = account_id.clone();
        let root = self.read_root();
        for _ in 0..MAX_ATTEMPTS {
            let Some(stored) = self.store.account_key(&account)? else {
                return Err(Error::NoAccountKey {
                    account_id: account_id.clone(),
                });
            };
            let old = unwrap_account_key(&root, &stored)?;
            let new = AccountKey {
                version: old.version + 1,
                key: KeyBytes::generate()?,
            };
            let wrapped = wrap_account_key(&root, &account, new.version, &new.key)?;
            let entry = audit.map(|build| build(new.version));
            let mut reseal =
                |item: &SealedItem| reseal_item(&old, &new, item).map_err(into_store_error);
            let mut reseal_kept = |value: &SupersededValue| {
                reseal_superseded(&old, &new, value).map_err(into_store_error)
            };
            let outcome = self
                .store
                .rotate_account_key(
                    &wrapped,
                    &mut reseal,
                    &mut reseal_kept,
                    self.prune_superseded_before(now()),
                    entry.as_ref(),
                )
                .map_err(from_store_error)?;
            match outcome {
                WriteOutcome::Written => return Ok(new.version),
                WriteOutcome::RootKeyConflict { .. } => return Err(Error::RootKeyChangedElsewhere),
                WriteOutcome::KeyConflict { .. } | WriteOutcome::VersionConflict { .. } => {}
            }
        }
        Err(Error::Contention {
            account_id: account_id.clone(),
            kind: "account key",
            name: account_id.to_string(),
        })
    }

    /// Rotates the root key to the one at `new_source`, then every account's data key.
    ///
    /// First, in one transaction, every account key is rewrapped under the new root key, the
    /// key check replaced, and every account listed as pending; then each account's data key is
    /// rotated (its values re-encrypted) in a transaction of its own, which takes it off the
    /// list. So the old root key, even with a copy of the key table made before, opens nothing
    /// stored afterwards. A rotation that dies half-way leaves every value readable with the
    /// new root key; [`Vault::finish_account_rotations`] (what `stepward keys rotate-root`
    /// runs when accounts are still pending) finishes it. For [`RootKeySource::DefaultFile`] a
    /// new key is generated, written beside the current default file, and renamed over it once
    /// the first transaction committed. The returned notice says where the root key must be
    /// read from now, and what the old one still opens.
    pub fn rotate_root(&self, new_source: &RootKeySource) -> Result<Notice, Error> {
        let (old_location, new_location) = self.rewrap_under_new_root(new_source)?;
        let rotated = self
            .finish_account_rotations()
            .map_err(|source| self.unfinished(source))?;
        Ok(rotation_notice(&old_location, &new_location, rotated.len()))
    }

    /// The accounts whose data key a root-key rotation left to rotate.
    pub fn pending_account_rotations(&self) -> Result<Vec<AccountId>, Error> {
        Ok(self.store.pending_account_rotations()?)
    }

    /// Rotates the data key of every account a root-key rotation left pending; returns them.
    pub fn finish_account_rotations(&self) -> Result<Vec<AccountId>, Error> {
        let mut rotated = Vec::new();
        for account in self.pending_account_rotations()? {
            self.rotate_account_key(&account)?;
            rotated.push(account);
        }
        Ok(rotated)
    }

    /// Writes a new random root key to `path` (mode 0600, its folders 0700) for a rotation to
    /// read, refusing a path inside the data directory and a file that already exists.
    pub fn generate_root_key_file(&self, path: &std::path::Path) -> Result<(), Error> {
        if path.exists() {
            return Err(Error::NewRootKeyExists {
                path: path.to_path_buf(),
            });
        }
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(|source| Error::RootKeyWrite {
                path: path.to_path_buf(),
                source,
            })?;
        }
        refuse_inside_data_dir(path, self.data_dir.as_deref())?;
        let key = KeyBytes::generate()?;
        if write_new_key_file(path, &key)? {
            Ok(())
        } else {
            Err(Error::NewRootKeyExists {
                path: path.to_path_buf(),
            })
        }
    }

    fn unfinished(&self, source: Error) -> Error {
        Error::RotationUnfinished {
            left: self.pending_account_rotations().unwrap_or_default(),
            source: Box::new(source),
        }
    }

    /// The first half of [`Vault::rotate_root`]: every account key rewrapped under the new
    /// root key and listed as pending, in one transaction.
    fn rewrap_under_new_root(
        &self,
        new_source: &RootKeySource,
    ) -> Result<(KeyLocation, KeyLocation), Error> {
        let mut root = self.write_root();
        let (new_key, new_location, pending) = match new_source {
            RootKeySource::File(path) => {
                refuse_inside_data_dir(path, self.data_dir.as_deref())?;
                (
                    read_key_file(path)?
                        .ok_or_else(|| Error::NewRootKeyMissing { path: path.clone() })?,
                    KeyLocation::File(path.clone()),
                    None,
                )
            }
            RootKeySource::Env(name) => (read_key_env(name)?, KeyLocation::Env(name.clone()), None),
            RootKeySource::DefaultFile => {
                let path = self.default_key_path()?;
                refuse_inside_data_dir(&path, self.data_dir.as_deref())?;
                let pending = pending_key_path(&path);
                let key = KeyBytes::generate()?;
                replace_key_file(&pending, &key)?;
                (key, KeyLocation::File(path.clone()), Some((pending, path)))
            }
        };
        if new_key.same_key_as(&root.key) {
            return Err(Error::RootKeyUnchanged {
                location: new_location.to_string(),
            });
        }
        let new_root_key_id = random_id()?;
        let new_check = make_key_check(&new_key, &new_root_key_id)?;
        let outcome = {
            let current: &RootState = &root;
            let mut rewrap = |wrapped: &WrappedAccountKey| {
                rewrap_key(current, &new_key, &new_root_key_id, wrapped).map_err(into_store_error)
            };
            self.store
                .rotate_root(&current.root_key_id, &new_check, &mut rewrap)
                .map_err(from_store_error)?
        };
        match outcome {
            WriteOutcome::Written => {}
            WriteOutcome::RootKeyConflict { .. }
            | WriteOutcome::KeyConflict { .. }
            | WriteOutcome::VersionConflict { .. } => return Err(Error::RootKeyChangedElsewhere),
        }
        if let Some((pending, path)) = &pending {
            promote_pending_key(pending, path)?;
        }
        let old_location = std::mem::replace(
            &mut *root,
            RootState {
                key: new_key,
                root_key_id: new_root_key_id,
                location: new_location.clone(),
            },
        )
        .location;
        Ok((old_location, new_location))
    }
}

fn reseal_item(old: &AccountKey, new: &AccountKey, item: &SealedItem) -> Result<SealedItem, Error> {
    let identity = ValueIdentity {
        account_id: &item.account_id,
        kind: item.kind,
        name: &item.name,
        version: item.version,
    };
    let values = item
        .values
        .iter()
        .map(|value| {
            let plaintext = open_value_bytes(old, item, value)?;
            seal_value(new, &identity, &value.field, &plaintext)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(SealedItem {
        values,
        ..item.clone()
    })
}

/// Re-encrypts one superseded value under the new account key, with the same identity (its
/// own item version) bound into the associated data.
fn reseal_superseded(
    old: &AccountKey,
    new: &AccountKey,
    value: &SupersededValue,
) -> Result<SupersededValue, Error> {
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
    let plaintext = open_identified_bytes(old, &identity, &sealed)?;
    let resealed = seal_value(new, &identity, &value.field, &plaintext)?;
    Ok(SupersededValue {
        key_version: resealed.key_version,
        nonce: resealed.nonce,
        ciphertext: resealed.ciphertext,
        ..value.clone()
    })
}

fn rewrap_key(
    current: &RootState,
    new_key: &KeyBytes,
    new_root_key_id: &str,
    wrapped: &WrappedAccountKey,
) -> Result<WrappedAccountKey, Error> {
    let account_key = unwrap_account_key(current, wrapped)?;
    wrap_account_key_with(
        new_key,
        new_root_key_id,
        &wrapped.account_id,
        wrapped.key_version,
        &account_key.key,
    )
}

/// Carries a vault error through a store's rotation callback.
fn into_store_error(error: Error) -> storage::Error {
    storage::Error::Backend {
        operation: "vault rotation",
        source: Box::new(error),
    }
}

/// Recovers a vault error that a rotation callback raised, or wraps the store's own.
fn from_store_error(error: storage::Error) -> Error {
    match error {
        storage::Error::Backend { operation, source } => match source.downcast::<Error>() {
            Ok(vault_error) => *vault_error,
            Err(source) => Error::Store {
                source: storage::Error::Backend { operation, source },
            },
        },
        other => Error::Store { source: other },
    }
}

fn rotation_notice(
    old_location: &KeyLocation,
    new_location: &KeyLocation,
    accounts_rotated: usize,
) -> Notice {
    let root_key_path = match new_location {
        KeyLocation::File(path) => Some(path.clone()),
        KeyLocation::Env(_) => None,
    };
    let where_now = if old_location == new_location {
        format!("the new key replaced the old one at {new_location}")
    } else {
        format!(
            "from now on it must be read from {new_location}; start stepward with that root \
             key source"
        )
    };
    let text = format!(
        "Rotated the vault's root key: {where_now}. The data keys of {accounts_rotated} \
         account(s) were rotated too and their values re-encrypted. Back up the new key. The old \
         key (at {old_location}) still opens copies of the vault made before this rotation \
         (backups of the data directory, with the values they held then), and nothing stored \
         from now on: keep it only as long as you keep such backups."
    );
    Notice {
        root_key_path,
        text,
    }
}
