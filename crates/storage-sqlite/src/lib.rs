//! The embedded SQLite backend of the storage traits, with its own migrations.
//!
//! One writing connection behind a mutex: SQLite serialises writers anyway, and one connection
//! keeps every write of this process in one order. The database runs in WAL mode, so reads
//! run on read connections beside it (a small pool, [`MAX_READERS`]): a slow reader (a long
//! audit page, a chain check) never holds the writer's lock, and a write commits while a read
//! transaction is open (the reader keeps the snapshot it began with). The storage tests check
//! this as a property (`it/readers.rs`).
//!
//! Durability: the connection runs with `synchronous=NORMAL`, and the writes the guarantees
//! hang on switch it to `FULL` for their own transaction: an attempt about to start WITH
//! NETWORK, a decision, a run's status, parked state, an account, an audit entry. In WAL mode a
//! `NORMAL` commit is already safe against a crash of this process (the WAL is in the OS page
//! cache and survives `kill -9`); only a power loss or kernel crash can drop the newest
//! commits. A `FULL` commit fsyncs the WAL file, and since the WAL is written sequentially,
//! that sync also makes every earlier `NORMAL` commit durable. So after a power loss the
//! database holds at least everything up to the last critical write, and what follows it is a
//! lost tail, never a hole: each event is committed with the next sequence number, so the log
//! stays gapless. In particular "running, with network" is on disk before the sandbox starts
//! (G14). An offline attempt's start is not synced: if a power loss drops it, recovery simply
//! runs the step again, which the failure policy allows for offline steps. This keeps the
//! engine's per-step overhead well under a millisecond for offline steps; a networked step
//! pays one fsync, small beside starting its sandbox.

#![forbid(unsafe_code)]

mod accounts;
mod audit;
mod audit_read;
mod audited;
mod decisions;
mod events;
mod interviews;
mod key_owners;
mod live;
mod mail;
pub mod migrations;
mod models;
mod people;
mod queue;
mod rows;
mod runs;
mod tool_tests;
mod vault;

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

pub use crate::audit::{MAX_AUDIT_PAGE, PageCost};

/// How many read connections the store opens at most; a reader beyond them waits for one.
pub const MAX_READERS: usize = 4;

/// How long a writer waits for another process holding the database before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What opening or migrating the database can fail with. The storage traits themselves return
/// [`storage::Error`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database file cannot be opened or configured.
    #[error("cannot open the database {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// A migration failed; the database stays at the version before it.
    #[error("migration {version:04} ({name}) failed")]
    Migration {
        version: u32,
        name: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    /// The database file cannot be made private (0600).
    #[error("cannot make the database {path} private (mode 600)")]
    Private {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The database was written by a newer version of stepward.
    #[error("the database is at schema version {found}, newer than this build knows ({known})")]
    NewerSchema { found: u32, known: u32 },
}

/// Creates the database file 0600 (whatever the umask) before SQLite opens it, or makes an
/// existing one 0600: its write-ahead log and shared-memory files take the database file's
/// permissions, so none of the three is readable by other users.
fn private_database_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    for suffix in ["-wal", "-shm"] {
        let beside = PathBuf::from(format!("{}{suffix}", path.display()));
        if beside.exists() {
            std::fs::set_permissions(&beside, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Whether a transaction must be on disk (fsynced) before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Survives a crash of this process (WAL, `synchronous=NORMAL`).
    ProcessCrashSafe,
    /// Survives a power loss too (`synchronous=FULL` for this commit).
    Synced,
}

/// The SQLite store. Implements every trait of [`storage`].
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    readers: Readers,
}

/// The read connections: idle ones, and how many are open.
struct Readers {
    idle: Mutex<(Vec<Connection>, usize)>,
    returned: Condvar,
}

/// A read connection taken from the pool, given back when dropped.
struct Reader<'a> {
    readers: &'a Readers,
    connection: Option<Connection>,
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self
                .readers
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            idle.0.push(connection);
            self.readers.returned.notify_one();
        }
    }
}

/// Opens a connection that only reads: `query_only` refuses every write on it.
fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "query_only", "ON")?;
    Ok(connection)
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and applies every pending migration.
    pub fn open(path: &Path) -> Result<SqliteStore, Error> {
        let newest = migrations::MIGRATIONS
            .last()
            .map_or(0, |migration| migration.version);
        SqliteStore::open_at_version(path, newest)
    }

    /// Opens the database migrated only up to `version`. Exists so tests can build a database
    /// as an older release left it; everything else uses [`SqliteStore::open`].
    pub fn open_at_version(path: &Path, version: u32) -> Result<SqliteStore, Error> {
        let open_failed = |source| Error::Open {
            path: path.to_owned(),
            source,
        };
        private_database_file(path).map_err(|source| Error::Private {
            path: path.to_owned(),
            source,
        })?;
        let mut connection = Connection::open(path).map_err(open_failed)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_failed)?;
        let journal_mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(open_failed)?;
        if !journal_mode.eq_ignore_ascii_case("wal") {
            return Err(open_failed(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {journal_mode}, WAL is required"
            ))));
        }
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_failed)?;
        connection
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(open_failed)?;
        // Deleted rows are overwritten, not left in free pages: a superseded value's ciphertext
        // pruned after its retention, a removed session's token hash, are gone from the file.
        connection
            .pragma_update(None, "secure_delete", "ON")
            .map_err(open_failed)?;
        migrations::migrate(&mut connection, version)?;
        Ok(SqliteStore {
            path: path.to_owned(),
            connection: Mutex::new(connection),
            readers: Readers {
                idle: Mutex::new((Vec::new(), 0)),
                returned: Condvar::new(),
            },
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether deleted content is overwritten (`PRAGMA secure_delete`), for tests.
    pub fn secure_delete(&self) -> Result<bool, Error> {
        self.with_conn(|connection| {
            connection.query_row("PRAGMA secure_delete", [], |row| row.get::<_, i64>(0))
        })
        .map(|on| on == 1)
        .map_err(|source| Error::Open {
            path: self.path.clone(),
            source,
        })
    }

    /// The newest migration applied to this database.
    pub fn schema_version(&self) -> Result<u32, Error> {
        self.with_conn(migrations::current_version)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-written transaction behind: an
        // unfinished rusqlite transaction rolls back when dropped. So a poisoned lock is safe
        // to take over.
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes an idle read connection, opens one when fewer than [`MAX_READERS`] are open, or
    /// waits for one to come back.
    fn reader(&self) -> rusqlite::Result<Reader<'_>> {
        let mut idle = self
            .readers
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(connection) = idle.0.pop() {
                return Ok(Reader {
                    readers: &self.readers,
                    connection: Some(connection),
                });
            }
            if idle.1 < MAX_READERS {
                idle.1 += 1;
                drop(idle);
                return match open_reader(&self.path) {
                    Ok(connection) => Ok(Reader {
                        readers: &self.readers,
                        connection: Some(connection),
                    }),
                    Err(error) => {
                        let mut idle = self
                            .readers
                            .idle
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        idle.1 -= 1;
                        Err(error)
                    }
                };
            }
            idle = self
                .readers
                .returned
                .wait(idle)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Runs a read on a read connection (beside the writer, never waiting for its lock).
    pub(crate) fn with_reader<R>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        let reader = self.reader()?;
        match &reader.connection {
            Some(connection) => f(connection),
            None => Err(rusqlite::Error::InvalidQuery),
        }
    }

    /// Runs `f` inside one read transaction on a read connection: everything `f` reads sees
    /// the database as it was when the transaction began, while writes go on committing beside
    /// it. The audit chain checks run in one; tests hold one open to show that a slow reader
    /// blocks no one.
    pub fn read_snapshot<R>(&self, f: impl FnOnce(&Connection) -> R) -> Result<R, storage::Error> {
        self.with_reader(|connection| {
            connection.execute_batch("BEGIN DEFERRED")?;
            // A deferred transaction takes its snapshot at its first read.
            let started =
                connection.query_row("SELECT COUNT(*) FROM schema_migrations", [], |row| {
                    row.get::<_, i64>(0)
                });
            let value = started.map(|_| f(connection));
            let ended = connection.execute_batch("COMMIT");
            let value = value?;
            ended?;
            Ok(value)
        })
        .map_err(backend("read a snapshot"))
    }

    /// Runs `f` with the writing connection, for sibling modules (the vault rows).
    pub(crate) fn with_conn<R>(&self, f: impl FnOnce(&Connection) -> R) -> R {
        let connection = self.lock();
        f(&connection)
    }

    /// Runs a query and turns each row into a record: `read` takes the columns while the
    /// connection is held, `convert` parses them into the record afterwards.
    pub(crate) fn read_records<Row, Record>(
        &self,
        operation: &'static str,
        sql: &str,
        parameters: impl rusqlite::Params,
        read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Row>,
        convert: impl FnMut(Row) -> Result<Record, storage::Error>,
    ) -> Result<Vec<Record>, storage::Error> {
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(sql)?;
                let rows = statement.query_map(parameters, read)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend(operation))?;
        rows.into_iter().map(convert).collect()
    }

    /// Runs `f` inside one `BEGIN IMMEDIATE` transaction, committed if `f` returns `Ok`. With
    /// [`Durability::Synced`] the commit is fsynced before this returns.
    pub(crate) fn with_transaction<R, E>(
        &self,
        durability: Durability,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<rusqlite::Error>,
    {
        let mut connection = self.lock();
        if durability == Durability::Synced {
            connection.pragma_update(None, "synchronous", "FULL")?;
        }
        let result = (|| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = f(&transaction)?;
            transaction.commit()?;
            Ok(value)
        })();
        if durability == Durability::Synced {
            connection.pragma_update(None, "synchronous", "NORMAL")?;
        }
        result
    }
}

impl SqliteStore {
    /// [`SqliteStore::with_transaction`] for trait implementations: `f` may fail with a driver
    /// error or a [`storage::Error`] (through [`TxError`]), and the result is a
    /// [`storage::Error`].
    pub(crate) fn transaction<R>(
        &self,
        durability: Durability,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<R, TxError>,
    ) -> Result<R, storage::Error> {
        self.with_transaction(durability, f)
            .map_err(|TxError(error)| error)
    }
}

/// Maps a driver error into the storage error, naming the operation.
pub(crate) fn backend(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> storage::Error {
    move |source| storage::Error::Backend {
        operation,
        source: Box::new(source),
    }
}

/// A storage error that also absorbs driver errors, so `?` works inside transactions.
#[derive(Debug)]
pub(crate) struct TxError(pub storage::Error);

impl From<rusqlite::Error> for TxError {
    fn from(source: rusqlite::Error) -> Self {
        TxError(storage::Error::Backend {
            operation: "transaction",
            source: Box::new(source),
        })
    }
}

impl From<storage::Error> for TxError {
    fn from(error: storage::Error) -> Self {
        TxError(error)
    }
}
