//! A database created by an older version migrates forward with its data intact.

use redact::SecretRequest;
use storage::{Account, AccountId, EventLog, NewEvent, RunId, RunStore, Timestamp};
use storage_sqlite::SqliteStore;
use storage_sqlite::migrations::MIGRATIONS;

use crate::support::{FixedSource, run_secrets};

#[test]
fn migrations_are_numbered_without_gaps() {
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        assert_eq!(migration.version as usize, index + 1, "{}", migration.name);
    }
}

#[test]
fn database_at_migration_1_with_data_migrates_forward() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let run = RunId::parse("run-old").unwrap();
    {
        let old = SqliteStore::open_at_version(&path, 1).unwrap();
        assert_eq!(old.schema_version().unwrap(), 1);
        storage::AccountStore::create_account(
            &old,
            &Account {
                id: AccountId::parse("acct").unwrap(),
                name: "local".into(),
                created_at: Timestamp(1),
            },
        )
        .unwrap();
        drop(old);
        // The run and its first event as a binary of migration 1 wrote them: the statements of
        // today's store name columns that later migrations added.
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute(
                "INSERT INTO runs (id, account_id, status, workflow_name, workflow_file_name,
                     workflow_source, workflow_hash, inputs, created_at, updated_at)
                 VALUES (?1, 'acct', 'running', 'refund', 'refund.yaml', 'name: refund', ?2,
                     '{\"ticket_id\":\"T-1\"}', 2, 2)",
                rusqlite::params![
                    run.as_str(),
                    storage::Sha256Hex::of(b"name: refund").as_str()
                ],
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO events (run_id, seq, kind, payload, at)
                 VALUES (?1, 1, 'run.created', '{}', 2)",
                rusqlite::params![run.as_str()],
            )
            .unwrap();
    }
    let migrated = SqliteStore::open(&path).unwrap();
    let newest = MIGRATIONS.last().unwrap().version;
    assert_eq!(migrated.schema_version().unwrap(), newest);
    let applied: Vec<u32> = {
        let connection = rusqlite::Connection::open(&path).unwrap();
        let mut statement = connection
            .prepare("SELECT version FROM schema_migrations ORDER BY version")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(applied, (1..=newest).collect::<Vec<_>>());
    let stored = migrated.run(&run).unwrap().unwrap();
    assert_eq!(stored.workflow_name, "refund");
    assert_eq!(stored.inputs, serde_json::json!({"ticket_id": "T-1"}));
    assert_eq!(migrated.events(&run).unwrap().len(), 1);
    // An event written before the journal version was stored is version 1.
    assert_eq!(migrated.events(&run).unwrap()[0].version, 1);
    // The old data keeps working with the new schema: the log continues without a gap.
    let redactor = run_secrets(run.as_str(), "sk_live_0123456789abcdef").redactor();
    let seq = migrated
        .append(
            &run,
            &NewEvent {
                kind: "run.resumed",
                version: 1,
                payload: redactor.scrub_json(&serde_json::json!({})),
                at: Timestamp(3),
            },
        )
        .unwrap();
    assert_eq!(seq, 2);
    let _ = (
        FixedSource::with_connection_field("a", "b", "c"),
        SecretRequest::default(),
    );
}

#[test]
fn reopening_a_current_database_applies_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.db");
    drop(SqliteStore::open(&path).unwrap());
    let again = SqliteStore::open(&path).unwrap();
    assert_eq!(
        again.schema_version().unwrap(),
        MIGRATIONS.last().unwrap().version
    );
}

#[test]
fn database_is_in_wal_mode() {
    let (_dir, store) = crate::support::temp_store();
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// G20 (review "credentials" A12): deleted rows (a pruned superseded ciphertext, a revoked
/// token's hash) are overwritten, not left in the file's free pages.
#[test]
fn g20_deleted_content_is_overwritten() {
    let (_dir, store) = crate::support::temp_store();
    assert!(store.secure_delete().unwrap());
}
