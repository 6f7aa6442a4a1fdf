//! The schema migrations this backend owns, applied in order and recorded in
//! `schema_migrations`.
//!
//! Each migration is a numbered file in `crates/storage-sqlite/migrations/`. A migration is
//! never edited once released: a change is a new file appended to [`MIGRATIONS`]. Each one runs
//! in its own transaction together with its `schema_migrations` row, so a crash mid-migration
//! leaves the database at the previous version.

use rusqlite::Connection;

use crate::Error;

/// One numbered migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration, in the order they apply. Versions are 1, 2, 3, ... without gaps.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core",
        sql: include_str!("../migrations/0001_core.sql"),
    },
    Migration {
        version: 2,
        name: "vault",
        sql: include_str!("../migrations/0002_vault.sql"),
    },
    Migration {
        version: 3,
        name: "people",
        sql: include_str!("../migrations/0003_people.sql"),
    },
    Migration {
        version: 4,
        name: "vault_history",
        sql: include_str!("../migrations/0004_vault_history.sql"),
    },
    Migration {
        version: 5,
        name: "vault_generation",
        sql: include_str!("../migrations/0005_vault_generation.sql"),
    },
    Migration {
        version: 6,
        name: "model_providers",
        sql: include_str!("../migrations/0006_model_providers.sql"),
    },
    Migration {
        version: 7,
        name: "vault_pending_rotations",
        sql: include_str!("../migrations/0007_vault_pending_rotations.sql"),
    },
    Migration {
        version: 8,
        name: "journal_version",
        sql: include_str!("../migrations/0008_journal_version.sql"),
    },
    Migration {
        version: 9,
        name: "runs_list",
        sql: include_str!("../migrations/0009_runs_list.sql"),
    },
    Migration {
        version: 10,
        name: "audit_chains",
        sql: include_str!("../migrations/0010_audit_chains.sql"),
    },
    Migration {
        version: 11,
        name: "api_key_creators",
        sql: include_str!("../migrations/0011_api_key_creators.sql"),
    },
    Migration {
        version: 12,
        name: "supervisor_retries",
        sql: include_str!("../migrations/0012_supervisor_retries.sql"),
    },
    Migration {
        version: 13,
        name: "share_tool_results",
        sql: include_str!("../migrations/0013_share_tool_results.sql"),
    },
    Migration {
        version: 14,
        name: "interviews",
        sql: include_str!("../migrations/0014_interviews.sql"),
    },
    Migration {
        version: 15,
        name: "audit_by_action",
        sql: include_str!("../migrations/0015_audit_by_action.sql"),
    },
    Migration {
        version: 16,
        name: "work_queue",
        sql: include_str!("../migrations/0016_work_queue.sql"),
    },
    Migration {
        version: 17,
        name: "live_output",
        sql: include_str!("../migrations/0017_live_output.sql"),
    },
    Migration {
        version: 18,
        name: "tool_tests",
        sql: include_str!("../migrations/0018_tool_tests.sql"),
    },
    Migration {
        version: 19,
        name: "gate_mail",
        sql: include_str!("../migrations/0019_gate_mail.sql"),
    },
    Migration {
        version: 20,
        name: "run_numbers",
        sql: include_str!("../migrations/0020_run_numbers.sql"),
    },
    Migration {
        version: 21,
        name: "people_on_lists",
        sql: include_str!("../migrations/0021_people_on_lists.sql"),
    },
];

/// Applies every migration the database does not have yet, up to `target_version`.
pub(crate) fn migrate(connection: &mut Connection, target_version: u32) -> Result<(), Error> {
    connection
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version     INTEGER PRIMARY KEY,
                 name        TEXT NOT NULL,
                 applied_at  TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
             );",
        )
        .map_err(|source| Error::Migration {
            version: 0,
            name: "schema_migrations",
            source,
        })?;
    let current = current_version(connection)?;
    if let Some(newest) = MIGRATIONS.last()
        && current > newest.version
    {
        return Err(Error::NewerSchema {
            found: current,
            known: newest.version,
        });
    }
    for migration in MIGRATIONS
        .iter()
        .filter(|migration| migration.version > current && migration.version <= target_version)
    {
        let failed = |source| Error::Migration {
            version: migration.version,
            name: migration.name,
            source,
        };
        let transaction = connection.transaction().map_err(failed)?;
        transaction.execute_batch(migration.sql).map_err(failed)?;
        transaction
            .execute(
                "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
                rusqlite::params![migration.version, migration.name],
            )
            .map_err(failed)?;
        transaction.commit().map_err(failed)?;
    }
    Ok(())
}

/// The newest applied migration, 0 for an empty database.
pub(crate) fn current_version(connection: &Connection) -> Result<u32, Error> {
    connection
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |row| row.get(0),
        )
        .map_err(|source| Error::Migration {
            version: 0,
            name: "schema_migrations",
            source,
        })
}
