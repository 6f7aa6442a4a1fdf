//! A SQLite store in a temporary folder, removed when the test ends (also when it fails).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use storage::{Account, AccountId, AccountStore as _, Timestamp};
use storage_sqlite::SqliteStore;

/// The store's file name in its folder, as a data directory has it.
pub const DATABASE: &str = "stepward.db";

/// A temporary folder and a store in it (`stepward.db`). Destructure it to keep both: the
/// folder is removed when `dir` is dropped.
pub struct TempStore {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
}

impl TempStore {
    /// A fresh store with no account.
    pub fn new() -> TempStore {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join(DATABASE)).unwrap());
        TempStore { dir, store }
    }

    /// A fresh store with the account `id`, named `name`, made at time 0.
    pub fn with_account(id: &str, name: &str) -> TempStore {
        let temp = TempStore::new();
        temp.add_account(id, name);
        temp
    }

    /// Adds the account `id`, named `name`, made at time 0.
    pub fn add_account(&self, id: &str, name: &str) {
        self.store
            .create_account(&Account {
                id: AccountId::parse(id).unwrap(),
                name: name.into(),
                created_at: Timestamp(0),
            })
            .unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The database file.
    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join(DATABASE)
    }
}

impl Default for TempStore {
    fn default() -> Self {
        TempStore::new()
    }
}
