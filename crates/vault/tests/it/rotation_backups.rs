//! G20 (review "credentials" A5): rotating the root key rotates every account's data key and
//! re-encrypts its values, so the old root key together with a copy of the key table made
//! before the rotation (the backup a rotation exists for) opens nothing stored in the data
//! directory afterwards: neither a value set after the rotation nor one set before it.

use rusqlite::Connection;
use vault::RootKeySource;

use crate::support::{Dirs, resolve_secret, secret};

/// The key table and key check of the database at `path`, as an attacker's old backup holds
/// them.
/// One account key row: account, nonce, wrapped key, key version, root key id.
type KeyRow = (String, Vec<u8>, Vec<u8>, i64, String);

fn key_rows(path: &std::path::Path) -> Vec<KeyRow> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT account_id, nonce, wrapped_key, key_version, root_key_id FROM vault_account_keys")
        .unwrap();
    statement
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Copies a database in WAL mode: its main file and whatever of the log is beside it.
fn copy_database(from: &std::path::Path, to: &std::path::Path) {
    std::fs::copy(from, to).unwrap();
    for suffix in ["-wal", "-shm"] {
        let log = std::path::PathBuf::from(format!("{}{suffix}", from.display()));
        if log.exists() {
            std::fs::copy(&log, format!("{}{suffix}", to.display())).unwrap();
        }
    }
}

#[test]
fn g20_an_old_root_key_and_a_pre_rotation_backup_open_nothing_stored_after_rotation() {
    let dirs = Dirs::new();
    let old_key_file = dirs.new_key_file("old.key");
    let old_options = dirs.options(RootKeySource::File(old_key_file.clone()));
    let vault = dirs.open(&old_options);
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "BEFORE",
            secret("value-set-before-rotation-1"),
        )
        .unwrap();
    // The backup: the whole database as it was before the rotation.
    let backup = dirs.data.join("backup.db");
    copy_database(&dirs.db_path(), &backup);
    let old_key_check: (String, Vec<u8>, Vec<u8>, i64) = Connection::open(&backup)
        .unwrap()
        .query_row(
            "SELECT root_key_id, nonce, ciphertext, created_at FROM vault_key_check",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .unwrap();

    let new_key_file = dirs.new_key_file("new.key");
    vault
        .rotate_root(&RootKeySource::File(new_key_file.clone()))
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "AFTER",
            secret("value-set-after-rotation-2"),
        )
        .unwrap();
    drop(vault);
    let new_vault = dirs.open(&dirs.options(RootKeySource::File(new_key_file)));
    assert_eq!(
        resolve_secret(&new_vault, "acct", "BEFORE"),
        "value-set-before-rotation-1"
    );
    drop(new_vault);

    // The attacker: a copy of the data directory taken now, with the key table and key check
    // of the old backup put back, opened with the old root key.
    let stolen = dirs.data.join("stolen.db");
    copy_database(&dirs.db_path(), &stolen);
    {
        let connection = Connection::open(&stolen).unwrap();
        for (account, nonce, wrapped, version, root) in key_rows(&backup) {
            connection
                .execute(
                    "UPDATE vault_account_keys SET nonce = ?2, wrapped_key = ?3, key_version = ?4,
                         root_key_id = ?5 WHERE account_id = ?1",
                    rusqlite::params![account, nonce, wrapped, version, root],
                )
                .unwrap();
        }
        connection
            .execute(
                "UPDATE vault_key_check SET root_key_id = ?1, nonce = ?2, ciphertext = ?3,
                     created_at = ?4",
                rusqlite::params![
                    old_key_check.0,
                    old_key_check.1,
                    old_key_check.2,
                    old_key_check.3
                ],
            )
            .unwrap();
    }
    let store = std::sync::Arc::new(storage_sqlite::SqliteStore::open(&stolen).unwrap());
    let (old_vault, _) = vault::Vault::open(&old_options, store).unwrap();
    for name in ["BEFORE", "AFTER"] {
        let opened = old_vault
            .secrets()
            .dangerously_reveal(&ids::AccountId::parse("acct").unwrap(), name);
        assert!(
            opened.is_err(),
            "the old root key and the old key table opened {name}"
        );
    }
}
