//! Shared test fixtures: a temporary data directory and configuration directory, a SQLite
//! store in it, key files, and a store wrapper that makes rotations fail half-way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use redact::{SecretRequest, SecretSource, SecretValue};
use storage::vault::{
    HistoryWrite, InsertKeyOutcome, ItemKind, ItemSummary, KeyCheck, ResealItem, ResealSuperseded,
    RewrapKey, SealedItem, SupersededValue, VaultStore, WrappedAccountKey, WriteOutcome,
};
use storage::{AccountId, Timestamp};
use storage_sqlite::SqliteStore;
use vault::{RootKeySource, Vault, VaultOptions};

/// A data directory and a separate user configuration directory, removed on drop.
pub struct Dirs {
    _root: tempfile::TempDir,
    pub data: PathBuf,
    pub config: PathBuf,
    pub keys: PathBuf,
}

impl Dirs {
    pub fn new() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let config = root.path().join("config");
        let keys = root.path().join("keys");
        for directory in [&data, &config, &keys] {
            std::fs::create_dir_all(directory).unwrap();
        }
        Dirs {
            _root: root,
            data,
            config,
            keys,
        }
    }

    pub fn db_path(&self) -> PathBuf {
        self.data.join("stepward.db")
    }

    pub fn store(&self) -> Arc<SqliteStore> {
        Arc::new(SqliteStore::open(&self.db_path()).unwrap())
    }

    /// Options for the default key file under this fixture's configuration directory.
    pub fn default_options(&self) -> VaultOptions {
        self.options(RootKeySource::DefaultFile)
    }

    pub fn options(&self, root_key: RootKeySource) -> VaultOptions {
        VaultOptions {
            root_key,
            user_config_dir: Some(self.config.clone()),
            data_dir: Some(self.data.clone()),
        }
    }

    /// Writes a fresh random root key file and returns its path.
    pub fn new_key_file(&self, name: &str) -> PathBuf {
        let path = self.keys.join(name);
        let mut bytes = [0u8; 32];
        getrandom_fill(&mut bytes);
        std::fs::write(&path, format!("{}\n", hex::encode(bytes))).unwrap();
        path
    }

    /// Opens the vault on a fresh connection to this fixture's database.
    pub fn open(&self, options: &VaultOptions) -> Vault {
        Vault::open(options, self.store()).unwrap().0
    }
}

fn getrandom_fill(bytes: &mut [u8]) {
    getrandom::fill(bytes).unwrap();
}

pub fn secret(text: &str) -> SecretValue {
    SecretValue::new(text.to_owned())
}

/// A value that is recognisable in a byte scan and unlikely to occur by chance.
pub fn distinctive_value(label: &str) -> String {
    let mut bytes = [0u8; 12];
    getrandom_fill(&mut bytes);
    format!("sk_{label}_{}", hex::encode(bytes))
}

/// Resolves one agent secret and returns its plaintext.
pub fn resolve_secret(vault: &Vault, account: &str, name: &str) -> String {
    let request = SecretRequest {
        secrets: vec![name.to_owned()],
        ..SecretRequest::default()
    };
    let mut resolved = vault
        .resolve(&AccountId::parse(account).unwrap(), &request)
        .unwrap();
    assert_eq!(resolved.len(), 1);
    resolved.remove(0).1.dangerously_expose().to_owned()
}

pub use test_support::bytes::{contains, files_under as all_bytes_under};

/// Copies every file of a directory (flat) to another.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// How [`FaultyStore`] fails a rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The callback fails with an error after this many rows went through.
    ErrorAfterRows(usize),
    /// The callback panics after this many rows went through (a crash of the worker).
    PanicAfterRows(usize),
    /// The rotation commits, then the call reports an error (a crash right after commit).
    ErrorAfterCommit,
}

/// A store that delegates to another and injects one fault into rotations.
pub struct FaultyStore {
    pub inner: Arc<dyn VaultStore>,
    pub fault: Fault,
    pub rows_seen: AtomicUsize,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn VaultStore>, fault: Fault) -> FaultyStore {
        FaultyStore {
            inner,
            fault,
            rows_seen: AtomicUsize::new(0),
        }
    }

    fn before_row(&self) -> Result<(), storage::Error> {
        let seen = self.rows_seen.fetch_add(1, Ordering::SeqCst);
        match self.fault {
            Fault::ErrorAfterRows(limit) if seen >= limit => Err(injected()),
            Fault::PanicAfterRows(limit) if seen >= limit => panic!("injected crash mid-rotation"),
            _ => Ok(()),
        }
    }

    fn after_commit<T>(&self, result: Result<T, storage::Error>) -> Result<T, storage::Error> {
        match (self.fault, result) {
            (Fault::ErrorAfterCommit, Ok(_)) => Err(injected()),
            (_, result) => result,
        }
    }
}

fn injected() -> storage::Error {
    storage::Error::Backend {
        operation: "injected fault",
        source: "the test killed the rotation here".into(),
    }
}

impl VaultStore for FaultyStore {
    fn ensure_install_id(&self, candidate: &str) -> Result<String, storage::Error> {
        self.inner.ensure_install_id(candidate)
    }
    fn key_check(&self) -> Result<Option<KeyCheck>, storage::Error> {
        self.inner.key_check()
    }
    fn init_key_check(&self, check: &KeyCheck) -> Result<KeyCheck, storage::Error> {
        self.inner.init_key_check(check)
    }
    fn account_key(
        &self,
        account_id: &AccountId,
    ) -> Result<Option<WrappedAccountKey>, storage::Error> {
        self.inner.account_key(account_id)
    }
    fn insert_account_key(
        &self,
        key: &WrappedAccountKey,
    ) -> Result<InsertKeyOutcome, storage::Error> {
        self.inner.insert_account_key(key)
    }
    fn list_items(&self, account_id: &AccountId) -> Result<Vec<ItemSummary>, storage::Error> {
        self.inner.list_items(account_id)
    }
    fn item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
    ) -> Result<Option<SealedItem>, storage::Error> {
        self.inner.item(account_id, kind, name)
    }
    fn items(&self, account_id: &AccountId) -> Result<Vec<SealedItem>, storage::Error> {
        self.inner.items(account_id)
    }
    fn put_item(
        &self,
        item: &SealedItem,
        expected_version: Option<u64>,
        history: &HistoryWrite,
        audit: Option<&storage::NewAuditEntry>,
    ) -> Result<WriteOutcome, storage::Error> {
        self.inner.put_item(item, expected_version, history, audit)
    }
    fn revoke_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        revoked_at: Timestamp,
        audit: Option<&storage::NewAuditEntry>,
    ) -> Result<bool, storage::Error> {
        self.inner
            .revoke_item(account_id, kind, name, revoked_at, audit)
    }
    fn remove_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        history: &HistoryWrite,
        audit: Option<&storage::NewAuditEntry>,
    ) -> Result<bool, storage::Error> {
        self.inner
            .remove_item(account_id, kind, name, history, audit)
    }
    fn superseded_values(
        &self,
        account_id: &AccountId,
        since: Timestamp,
    ) -> Result<Vec<SupersededValue>, storage::Error> {
        self.inner.superseded_values(account_id, since)
    }
    fn generation(&self, account_id: &AccountId) -> Result<u64, storage::Error> {
        self.inner.generation(account_id)
    }
    fn pending_account_rotations(&self) -> Result<Vec<AccountId>, storage::Error> {
        self.inner.pending_account_rotations()
    }
    fn rotate_account_key(
        &self,
        new_key: &WrappedAccountKey,
        reseal: &mut ResealItem<'_>,
        reseal_superseded: &mut ResealSuperseded<'_>,
        prune_superseded_before: Timestamp,
        audit: Option<&storage::NewAuditEntry>,
    ) -> Result<WriteOutcome, storage::Error> {
        // Items and kept superseded values count as rows alike, so a fault can hit either.
        let mut faulty = |item: &SealedItem| {
            self.before_row()?;
            reseal(item)
        };
        let mut faulty_superseded = |value: &SupersededValue| {
            self.before_row()?;
            reseal_superseded(value)
        };
        let result = self.inner.rotate_account_key(
            new_key,
            &mut faulty,
            &mut faulty_superseded,
            prune_superseded_before,
            audit,
        );
        self.after_commit(result)
    }
    fn rotate_root(
        &self,
        current_root_key_id: &str,
        new_check: &KeyCheck,
        rewrap: &mut RewrapKey<'_>,
    ) -> Result<WriteOutcome, storage::Error> {
        let mut faulty = |key: &WrappedAccountKey| {
            self.before_row()?;
            rewrap(key)
        };
        let result = self
            .inner
            .rotate_root(current_root_key_id, new_check, &mut faulty);
        self.after_commit(result)
    }
}
