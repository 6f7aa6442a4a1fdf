//! The vault's rows ([`storage::vault::VaultStore`]): ciphertexts, nonces and names, in the
//! tables of migrations 0002 and 0004 (the superseded-value history). Every write is one synced transaction; rotations read, reseal and
//! rewrite inside a single `BEGIN IMMEDIATE` transaction, so a failure or a crash half-way
//! leaves the rows as they were.

use rusqlite::{Connection, OptionalExtension, params};
use storage::vault::{
    HistoryWrite, InsertKeyOutcome, ItemKind, ItemSummary, KeyCheck, ResealItem, ResealSuperseded,
    RewrapKey, SealedItem, SealedValue, SupersededValue, VaultStore, WrappedAccountKey,
    WriteOutcome,
};
use storage::{AccountId, Error, NewAuditEntry, Timestamp};

use crate::audit::{PreparedEntry, append_audit_in, prepare_entry};
use crate::rows::{row_tuple, stored_account, to_u32, to_u64};
use crate::{Durability, SqliteStore, TxError, backend};

const INSTALL_ID_KEY: &str = "install_id";

fn parse_kind(text: &str) -> Result<ItemKind, Error> {
    ItemKind::parse(text).map_err(|unknown| Error::Corrupt {
        what: unknown.vocabulary,
        detail: unknown.to_string(),
    })
}

/// One row of the items-joined-with-values query.
struct JoinedRow {
    account_id: String,
    kind: String,
    name: String,
    version: i64,
    revoked_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
    field: Option<String>,
    key_version: Option<i64>,
    nonce: Option<Vec<u8>>,
    ciphertext: Option<Vec<u8>>,
}

const JOINED_SELECT: &str = "SELECT i.account_id, i.kind, i.name, i.version, i.revoked_at,
            i.created_at, i.updated_at, v.field, v.key_version, v.nonce, v.ciphertext
     FROM vault_items i
     LEFT JOIN vault_values v
       ON v.account_id = i.account_id AND v.kind = i.kind AND v.name = i.name";

fn read_joined(row: &rusqlite::Row<'_>) -> rusqlite::Result<JoinedRow> {
    Ok(JoinedRow {
        account_id: row.get(0)?,
        kind: row.get(1)?,
        name: row.get(2)?,
        version: row.get(3)?,
        revoked_at: row.get(4)?,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
        field: row.get(7)?,
        key_version: row.get(8)?,
        nonce: row.get(9)?,
        ciphertext: row.get(10)?,
    })
}

/// Groups joined rows (ordered by kind, name, field) into items.
fn group_items(rows: Vec<JoinedRow>) -> Result<Vec<SealedItem>, Error> {
    let mut items: Vec<SealedItem> = Vec::new();
    for row in rows {
        let kind = parse_kind(&row.kind)?;
        let same_item = items
            .last()
            .is_some_and(|last| last.kind == kind && last.name == row.name);
        if !same_item {
            items.push(SealedItem {
                account_id: stored_account(&row.account_id)?,
                kind,
                name: row.name,
                version: to_u64("vault item version", row.version)?,
                revoked_at: row.revoked_at.map(Timestamp),
                created_at: Timestamp(row.created_at),
                updated_at: Timestamp(row.updated_at),
                values: Vec::new(),
            });
        }
        if let (Some(field), Some(key_version), Some(nonce), Some(ciphertext), Some(item)) = (
            row.field,
            row.key_version,
            row.nonce,
            row.ciphertext,
            items.last_mut(),
        ) {
            item.values.push(SealedValue {
                field,
                key_version: to_u32("vault key version", key_version)?,
                nonce,
                ciphertext,
            });
        }
    }
    Ok(items)
}

fn query_items(
    connection: &Connection,
    account_id: &AccountId,
    only: Option<(ItemKind, &str)>,
) -> Result<Vec<SealedItem>, TxError> {
    let rows = match only {
        Some((kind, name)) => {
            let mut statement = connection.prepare_cached(&format!(
                "{JOINED_SELECT} WHERE i.account_id = ?1 AND i.kind = ?2 AND i.name = ?3
                 ORDER BY i.kind, i.name, v.field"
            ))?;
            statement
                .query_map(
                    params![account_id.as_str(), kind.as_str(), name],
                    read_joined,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?
        }
        None => {
            let mut statement = connection.prepare_cached(&format!(
                "{JOINED_SELECT} WHERE i.account_id = ?1 ORDER BY i.kind, i.name, v.field"
            ))?;
            statement
                .query_map(params![account_id.as_str()], read_joined)?
                .collect::<rusqlite::Result<Vec<_>>>()?
        }
    };
    Ok(group_items(rows)?)
}

fn write_values(connection: &Connection, item: &SealedItem) -> Result<(), TxError> {
    connection.execute(
        "DELETE FROM vault_values WHERE account_id = ?1 AND kind = ?2 AND name = ?3",
        params![item.account_id.as_str(), item.kind.as_str(), item.name],
    )?;
    let mut insert = connection.prepare_cached(
        "INSERT INTO vault_values (account_id, kind, name, field, key_version, nonce, ciphertext)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for value in &item.values {
        insert.execute(params![
            item.account_id.as_str(),
            item.kind.as_str(),
            item.name,
            value.field,
            value.key_version,
            value.nonce,
            value.ciphertext,
        ])?;
    }
    Ok(())
}

/// Copies the item's current values, as they are, into the superseded-value history. Runs
/// before the item's row changes, so the copied version is the one the values were sealed
/// under.
fn move_values_to_history(
    connection: &Connection,
    account_id: &AccountId,
    kind: ItemKind,
    name: &str,
    superseded_at: Timestamp,
) -> Result<(), TxError> {
    connection.execute(
        "INSERT INTO vault_value_history
             (account_id, kind, name, version, field, key_version, nonce, ciphertext,
              superseded_at)
         SELECT v.account_id, v.kind, v.name, i.version, v.field, v.key_version, v.nonce,
                v.ciphertext, ?4
         FROM vault_values v
         JOIN vault_items i
           ON i.account_id = v.account_id AND i.kind = v.kind AND i.name = v.name
         WHERE v.account_id = ?1 AND v.kind = ?2 AND v.name = ?3",
        params![account_id.as_str(), kind.as_str(), name, superseded_at.0],
    )?;
    Ok(())
}

/// Deletes superseded values past their retention, of every account, except those a run that
/// has not ended may have seen: a run of the account created before the value stopped being
/// current (it may have printed it, and parked at a gate for longer than the retention) keeps
/// the value in the account's scrub set until it ends (G16).
fn prune_history(connection: &Connection, prune_before: Timestamp) -> Result<(), TxError> {
    connection.execute(
        "DELETE FROM vault_value_history
         WHERE superseded_at < ?1
           AND NOT EXISTS (
               SELECT 1 FROM runs
               WHERE runs.account_id = vault_value_history.account_id
                 AND runs.status NOT IN ('succeeded', 'failed', 'stopped')
                 AND runs.created_at <= vault_value_history.superseded_at
           )",
        params![prune_before.0],
    )?;
    Ok(())
}

/// One row of the superseded-value history, as stored.
struct HistoryRow {
    history_id: i64,
    account_id: String,
    kind: String,
    name: String,
    version: i64,
    field: String,
    key_version: i64,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
    superseded_at: i64,
}

fn read_history_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryRow> {
    Ok(HistoryRow {
        history_id: row.get(0)?,
        account_id: row.get(1)?,
        kind: row.get(2)?,
        name: row.get(3)?,
        version: row.get(4)?,
        field: row.get(5)?,
        key_version: row.get(6)?,
        nonce: row.get(7)?,
        ciphertext: row.get(8)?,
        superseded_at: row.get(9)?,
    })
}

fn superseded_from_row(row: HistoryRow) -> Result<SupersededValue, Error> {
    Ok(SupersededValue {
        history_id: row.history_id,
        account_id: stored_account(&row.account_id)?,
        kind: parse_kind(&row.kind)?,
        name: row.name,
        version: to_u64("vault item version", row.version)?,
        field: row.field,
        key_version: to_u32("vault key version", row.key_version)?,
        nonce: row.nonce,
        ciphertext: row.ciphertext,
        superseded_at: Timestamp(row.superseded_at),
    })
}

/// The account's superseded values at or after `since`, oldest first.
fn query_history(
    connection: &Connection,
    account_id: &AccountId,
    since: Timestamp,
) -> Result<Vec<SupersededValue>, TxError> {
    let mut statement = connection.prepare_cached(
        "SELECT history_id, account_id, kind, name, version, field, key_version, nonce,
                ciphertext, superseded_at
         FROM vault_value_history
         WHERE account_id = ?1 AND superseded_at >= ?2
         ORDER BY superseded_at, history_id",
    )?;
    let rows = statement
        .query_map(params![account_id.as_str(), since.0], read_history_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .map(superseded_from_row)
        .collect::<Result<Vec<_>, Error>>()?)
}

/// Reseals every kept superseded value of the account under the new key version.
fn reseal_history(
    connection: &Connection,
    account_id: &AccountId,
    new_key_version: u32,
    reseal_superseded: &mut ResealSuperseded<'_>,
) -> Result<(), TxError> {
    for value in query_history(connection, account_id, Timestamp(i64::MIN))? {
        let resealed = reseal_superseded(&value)?;
        let same_identity = resealed.history_id == value.history_id
            && resealed.account_id == value.account_id
            && resealed.kind == value.kind
            && resealed.name == value.name
            && resealed.version == value.version
            && resealed.field == value.field
            && resealed.superseded_at == value.superseded_at
            && resealed.key_version == new_key_version;
        if !same_identity {
            return Err(TxError(Error::Corrupt {
                what: "resealed superseded vault value",
                detail: format!(
                    "{} {:?} (history row {}) changed identity or key version while resealing",
                    value.kind.as_str(),
                    value.name,
                    value.history_id
                ),
            }));
        }
        connection.execute(
            "UPDATE vault_value_history SET key_version = ?2, nonce = ?3, ciphertext = ?4
             WHERE history_id = ?1",
            params![
                resealed.history_id,
                resealed.key_version,
                resealed.nonce,
                resealed.ciphertext,
            ],
        )?;
    }
    Ok(())
}

fn stored_key_version(
    connection: &Connection,
    account_id: &AccountId,
) -> Result<Option<u32>, TxError> {
    let version: Option<i64> = connection
        .query_row(
            "SELECT key_version FROM vault_account_keys WHERE account_id = ?1",
            params![account_id.as_str()],
            |row| row.get(0),
        )
        .optional()?;
    Ok(version
        .map(|version| to_u32("vault key version", version))
        .transpose()?)
}

fn stored_root_key_id(connection: &Connection) -> Result<Option<String>, TxError> {
    Ok(connection
        .query_row(
            "SELECT root_key_id FROM vault_key_check WHERE singleton = 1",
            [],
            |row| row.get(0),
        )
        .optional()?)
}

type KeyRow = (String, i64, String, Vec<u8>, Vec<u8>, i64);

const KEY_SELECT: &str =
    "SELECT account_id, key_version, root_key_id, nonce, wrapped_key, created_at
     FROM vault_account_keys";

fn key_from_row(
    (account_id, key_version, root_key_id, nonce, wrapped_key, created_at): KeyRow,
) -> Result<WrappedAccountKey, Error> {
    Ok(WrappedAccountKey {
        account_id: stored_account(&account_id)?,
        key_version: to_u32("vault key version", key_version)?,
        root_key_id,
        nonce,
        wrapped_key,
        created_at: Timestamp(created_at),
    })
}

type CheckRow = (String, Vec<u8>, Vec<u8>, i64);

/// Appends a write's audit entry, if it has one, inside the write's transaction: an entry
/// that cannot be appended rolls the write back (finding 4 of the server review).
fn append_prepared(
    transaction: &rusqlite::Transaction<'_>,
    prepared: Option<&PreparedEntry<'_>>,
) -> Result<(), TxError> {
    if let Some(prepared) = prepared {
        append_audit_in(transaction, prepared)?;
    }
    Ok(())
}

fn read_check(connection: &Connection) -> rusqlite::Result<Option<KeyCheck>> {
    connection
        .query_row(
            "SELECT root_key_id, nonce, ciphertext, created_at FROM vault_key_check
             WHERE singleton = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()
        .map(|row: Option<CheckRow>| {
            row.map(|(root_key_id, nonce, ciphertext, created_at)| KeyCheck {
                root_key_id,
                nonce,
                ciphertext,
                created_at: Timestamp(created_at),
            })
        })
}

impl VaultStore for SqliteStore {
    fn ensure_install_id(&self, candidate: &str) -> Result<String, Error> {
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "INSERT INTO vault_meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO NOTHING",
                params![INSTALL_ID_KEY, candidate],
            )?;
            Ok(transaction.query_row(
                "SELECT value FROM vault_meta WHERE key = ?1",
                params![INSTALL_ID_KEY],
                |row| row.get(0),
            )?)
        })
    }

    fn key_check(&self) -> Result<Option<KeyCheck>, Error> {
        self.with_conn(read_check)
            .map_err(backend("read vault key check"))
    }

    fn init_key_check(&self, check: &KeyCheck) -> Result<KeyCheck, Error> {
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "INSERT INTO vault_key_check (singleton, root_key_id, nonce, ciphertext, created_at)
                 VALUES (1, ?1, ?2, ?3, ?4) ON CONFLICT(singleton) DO NOTHING",
                params![check.root_key_id, check.nonce, check.ciphertext, check.created_at.0],
            )?;
            read_check(transaction)?.ok_or_else(|| {
                TxError(Error::Corrupt {
                    what: "vault key check",
                    detail: "the key check vanished right after it was stored".to_owned(),
                })
            })
        })
    }

    fn account_key(&self, account_id: &AccountId) -> Result<Option<WrappedAccountKey>, Error> {
        let row = self
            .with_conn(|connection| {
                connection
                    .query_row(
                        &format!("{KEY_SELECT} WHERE account_id = ?1"),
                        params![account_id.as_str()],
                        row_tuple,
                    )
                    .optional()
            })
            .map_err(backend("read vault account key"))?;
        row.map(key_from_row).transpose()
    }

    fn insert_account_key(&self, key: &WrappedAccountKey) -> Result<InsertKeyOutcome, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let current_root_key_id = stored_root_key_id(transaction)?;
            if current_root_key_id.as_deref() != Some(key.root_key_id.as_str()) {
                return Ok(InsertKeyOutcome::RootKeyChanged {
                    current_root_key_id,
                });
            }
            let inserted = transaction.execute(
                "INSERT INTO vault_account_keys
                     (account_id, key_version, root_key_id, nonce, wrapped_key, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(account_id) DO NOTHING",
                params![
                    key.account_id.as_str(),
                    key.key_version,
                    key.root_key_id,
                    key.nonce,
                    key.wrapped_key,
                    key.created_at.0,
                ],
            )?;
            if inserted == 1 {
                return Ok(InsertKeyOutcome::Inserted);
            }
            let row = transaction.query_row(
                &format!("{KEY_SELECT} WHERE account_id = ?1"),
                params![key.account_id.as_str()],
                row_tuple,
            )?;
            Ok(InsertKeyOutcome::Existing(key_from_row(row)?))
        })
    }

    fn list_items(&self, account_id: &AccountId) -> Result<Vec<ItemSummary>, Error> {
        let rows = self
            .with_conn(|connection| {
                let mut statement = connection.prepare_cached(
                    "SELECT i.account_id, i.kind, i.name, i.version, i.revoked_at, i.created_at,
                            i.updated_at, v.field
                     FROM vault_items i
                     LEFT JOIN vault_values v
                       ON v.account_id = i.account_id AND v.kind = i.kind AND v.name = i.name
                     WHERE i.account_id = ?1
                     ORDER BY i.kind, i.name, v.field",
                )?;
                statement
                    .query_map(params![account_id.as_str()], |row| {
                        Ok(JoinedRow {
                            account_id: row.get(0)?,
                            kind: row.get(1)?,
                            name: row.get(2)?,
                            version: row.get(3)?,
                            revoked_at: row.get(4)?,
                            created_at: row.get(5)?,
                            updated_at: row.get(6)?,
                            field: row.get(7)?,
                            key_version: None,
                            nonce: None,
                            ciphertext: None,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("list vault items"))?;
        let mut summaries: Vec<ItemSummary> = Vec::new();
        for row in rows {
            let kind = parse_kind(&row.kind)?;
            let same_item = summaries
                .last()
                .is_some_and(|last| last.kind == kind && last.name == row.name);
            if !same_item {
                summaries.push(ItemSummary {
                    account_id: stored_account(&row.account_id)?,
                    kind,
                    name: row.name,
                    version: to_u64("vault item version", row.version)?,
                    fields: Vec::new(),
                    revoked_at: row.revoked_at.map(Timestamp),
                    created_at: Timestamp(row.created_at),
                    updated_at: Timestamp(row.updated_at),
                });
            }
            if let (Some(field), Some(summary)) = (row.field, summaries.last_mut()) {
                summary.fields.push(field);
            }
        }
        Ok(summaries)
    }

    fn item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
    ) -> Result<Option<SealedItem>, Error> {
        self.with_conn(|connection| query_items(connection, account_id, Some((kind, name))))
            .map(|items| items.into_iter().next())
            .map_err(|TxError(error)| error)
    }

    fn items(&self, account_id: &AccountId) -> Result<Vec<SealedItem>, Error> {
        self.with_conn(|connection| query_items(connection, account_id, None))
            .map_err(|TxError(error)| error)
    }

    fn put_item(
        &self,
        item: &SealedItem,
        expected_version: Option<u64>,
        history: &HistoryWrite,
        audit: Option<&NewAuditEntry>,
    ) -> Result<WriteOutcome, Error> {
        let prepared = audit.map(prepare_entry).transpose()?;
        self.transaction(Durability::Synced, |transaction| {
            let stored: Option<i64> = transaction
                .query_row(
                    "SELECT version FROM vault_items
                     WHERE account_id = ?1 AND kind = ?2 AND name = ?3",
                    params![item.account_id.as_str(), item.kind.as_str(), item.name],
                    |row| row.get(0),
                )
                .optional()?;
            let stored_version = stored
                .map(|version| to_u64("vault item version", version))
                .transpose()?;
            if stored_version != expected_version {
                return Ok(WriteOutcome::VersionConflict { stored_version });
            }
            let current_key_version = stored_key_version(transaction, &item.account_id)?;
            if item
                .values
                .iter()
                .any(|value| Some(value.key_version) != current_key_version)
            {
                return Ok(WriteOutcome::KeyConflict {
                    current_key_version,
                });
            }
            let version = i64::try_from(item.version).map_err(|_| {
                TxError(Error::Corrupt {
                    what: "vault item version",
                    detail: format!("{} is out of range", item.version),
                })
            })?;
            if stored_version.is_some() {
                move_values_to_history(
                    transaction,
                    &item.account_id,
                    item.kind,
                    &item.name,
                    history.superseded_at,
                )?;
            }
            prune_history(transaction, history.prune_before)?;
            transaction.execute(
                "INSERT INTO vault_items
                     (account_id, kind, name, version, revoked_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6)
                 ON CONFLICT(account_id, kind, name) DO UPDATE SET
                     version = excluded.version,
                     revoked_at = NULL,
                     updated_at = excluded.updated_at",
                params![
                    item.account_id.as_str(),
                    item.kind.as_str(),
                    item.name,
                    version,
                    item.created_at.0,
                    item.updated_at.0,
                ],
            )?;
            write_values(transaction, item)?;
            append_prepared(transaction, prepared.as_ref())?;
            Ok(WriteOutcome::Written)
        })
    }

    fn revoke_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        revoked_at: Timestamp,
        audit: Option<&NewAuditEntry>,
    ) -> Result<bool, Error> {
        let prepared = audit.map(prepare_entry).transpose()?;
        self.transaction(Durability::Synced, |transaction| {
            let changed = transaction.execute(
                "UPDATE vault_items SET revoked_at = COALESCE(revoked_at, ?4)
                 WHERE account_id = ?1 AND kind = ?2 AND name = ?3",
                params![account_id.as_str(), kind.as_str(), name, revoked_at.0],
            )?;
            if changed == 1 {
                append_prepared(transaction, prepared.as_ref())?;
            }
            Ok(changed == 1)
        })
    }

    fn remove_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        history: &HistoryWrite,
        audit: Option<&NewAuditEntry>,
    ) -> Result<bool, Error> {
        let prepared = audit.map(prepare_entry).transpose()?;
        self.transaction(Durability::Synced, |transaction| {
            move_values_to_history(transaction, account_id, kind, name, history.superseded_at)?;
            prune_history(transaction, history.prune_before)?;
            // The values go first explicitly, so the delete does not depend on the
            // connection's foreign-key setting.
            transaction.execute(
                "DELETE FROM vault_values WHERE account_id = ?1 AND kind = ?2 AND name = ?3",
                params![account_id.as_str(), kind.as_str(), name],
            )?;
            let removed = transaction.execute(
                "DELETE FROM vault_items WHERE account_id = ?1 AND kind = ?2 AND name = ?3",
                params![account_id.as_str(), kind.as_str(), name],
            )?;
            if removed == 1 {
                append_prepared(transaction, prepared.as_ref())?;
            }
            Ok(removed == 1)
        })
    }

    fn superseded_values(
        &self,
        account_id: &AccountId,
        since: Timestamp,
    ) -> Result<Vec<SupersededValue>, Error> {
        self.with_conn(|connection| query_history(connection, account_id, since))
            .map_err(|TxError(error)| error)
    }

    fn pending_account_rotations(&self) -> Result<Vec<AccountId>, Error> {
        let rows: Vec<String> = self
            .with_conn(|connection| {
                let mut statement = connection.prepare(
                    "SELECT account_id FROM vault_pending_rotations ORDER BY account_id",
                )?;
                let rows = statement.query_map([], |row| row.get(0))?;
                rows.collect::<rusqlite::Result<Vec<String>>>()
            })
            .map_err(backend("read the pending account key rotations"))?;
        rows.iter().map(|account| stored_account(account)).collect()
    }

    fn generation(&self, account_id: &AccountId) -> Result<u64, Error> {
        let generation: Option<i64> = self
            .with_conn(|connection| {
                connection
                    .prepare_cached(
                        "SELECT generation FROM vault_generations WHERE account_id = ?1",
                    )?
                    .query_row(params![account_id.as_str()], |row| row.get(0))
                    .optional()
            })
            .map_err(backend("read the vault generation"))?;
        to_u64("vault generation", generation.unwrap_or(0))
    }

    fn rotate_account_key(
        &self,
        new_key: &WrappedAccountKey,
        reseal: &mut ResealItem<'_>,
        reseal_superseded: &mut ResealSuperseded<'_>,
        prune_superseded_before: Timestamp,
        audit: Option<&NewAuditEntry>,
    ) -> Result<WriteOutcome, Error> {
        let prepared = audit.map(prepare_entry).transpose()?;
        self.transaction(Durability::Synced, |transaction| {
            let current_root_key_id = stored_root_key_id(transaction)?;
            if current_root_key_id.as_deref() != Some(new_key.root_key_id.as_str()) {
                return Ok(WriteOutcome::RootKeyConflict {
                    current_root_key_id,
                });
            }
            let current_key_version = stored_key_version(transaction, &new_key.account_id)?;
            if current_key_version.map(|version| version + 1) != Some(new_key.key_version) {
                return Ok(WriteOutcome::KeyConflict {
                    current_key_version,
                });
            }
            transaction.execute(
                "UPDATE vault_account_keys
                 SET key_version = ?2, root_key_id = ?3, nonce = ?4, wrapped_key = ?5,
                     created_at = ?6
                 WHERE account_id = ?1",
                params![
                    new_key.account_id.as_str(),
                    new_key.key_version,
                    new_key.root_key_id,
                    new_key.nonce,
                    new_key.wrapped_key,
                    new_key.created_at.0,
                ],
            )?;
            for item in query_items(transaction, &new_key.account_id, None)? {
                let resealed = reseal(&item)?;
                let same_identity = resealed.account_id == item.account_id
                    && resealed.kind == item.kind
                    && resealed.name == item.name
                    && resealed.version == item.version
                    && resealed
                        .values
                        .iter()
                        .all(|value| value.key_version == new_key.key_version);
                if !same_identity {
                    return Err(TxError(Error::Corrupt {
                        what: "resealed vault item",
                        detail: format!(
                            "{} {:?} changed identity or key version while resealing",
                            item.kind.as_str(),
                            item.name
                        ),
                    }));
                }
                write_values(transaction, &resealed)?;
            }
            transaction.execute(
                "DELETE FROM vault_pending_rotations WHERE account_id = ?1",
                params![new_key.account_id.as_str()],
            )?;
            // The account's old key is gone after this transaction, so every kept superseded
            // value must move to the new key too (or be past retention and deleted).
            prune_history(transaction, prune_superseded_before)?;
            reseal_history(
                transaction,
                &new_key.account_id,
                new_key.key_version,
                reseal_superseded,
            )?;
            append_prepared(transaction, prepared.as_ref())?;
            Ok(WriteOutcome::Written)
        })
    }

    fn rotate_root(
        &self,
        current_root_key_id: &str,
        new_check: &KeyCheck,
        rewrap: &mut RewrapKey<'_>,
    ) -> Result<WriteOutcome, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let stored_root = stored_root_key_id(transaction)?;
            if stored_root.as_deref() != Some(current_root_key_id) {
                return Ok(WriteOutcome::RootKeyConflict {
                    current_root_key_id: stored_root,
                });
            }
            let rows = {
                let mut statement =
                    transaction.prepare_cached(&format!("{KEY_SELECT} ORDER BY account_id"))?;
                statement
                    .query_map([], row_tuple)?
                    .collect::<rusqlite::Result<Vec<_>>>()?
            };
            for row in rows {
                let wrapped = key_from_row(row)?;
                let rewrapped = rewrap(&wrapped)?;
                if rewrapped.account_id != wrapped.account_id
                    || rewrapped.key_version != wrapped.key_version
                    || rewrapped.root_key_id != new_check.root_key_id
                {
                    return Err(TxError(Error::Corrupt {
                        what: "rewrapped vault account key",
                        detail: format!(
                            "the key of account {} changed identity while rewrapping",
                            wrapped.account_id
                        ),
                    }));
                }
                transaction.execute(
                    "INSERT INTO vault_pending_rotations (account_id, since_root_key_id)
                     VALUES (?1, ?2)
                     ON CONFLICT(account_id) DO UPDATE SET since_root_key_id = ?2",
                    params![rewrapped.account_id.as_str(), new_check.root_key_id],
                )?;
                transaction.execute(
                    "UPDATE vault_account_keys
                     SET root_key_id = ?2, nonce = ?3, wrapped_key = ?4
                     WHERE account_id = ?1",
                    params![
                        rewrapped.account_id.as_str(),
                        rewrapped.root_key_id,
                        rewrapped.nonce,
                        rewrapped.wrapped_key,
                    ],
                )?;
            }
            transaction.execute(
                "UPDATE vault_key_check
                 SET root_key_id = ?1, nonce = ?2, ciphertext = ?3, created_at = ?4
                 WHERE singleton = 1",
                params![
                    new_check.root_key_id,
                    new_check.nonce,
                    new_check.ciphertext,
                    new_check.created_at.0,
                ],
            )?;
            Ok(WriteOutcome::Written)
        })
    }
}
