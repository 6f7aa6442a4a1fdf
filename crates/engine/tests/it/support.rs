//! Test harness: a scripted executor, a counting clock and ids, scripted supervisors, and an
//! engine over a SQLite file in a temp dir.

use std::path::PathBuf;
use std::sync::Arc;

use engine::{Engine, EngineOptions, PersonSupervisor, Supervisor};
use redact::testing::MemorySource;
use storage::{AccountId, AccountStore, RunId, RunStore, Store};
use storage_sqlite::SqliteStore;
use test_support::store::TempStore;

pub const ACCOUNT: &str = "acct";
pub const SECRET: &str = "sk_live_Zq8vX2mN4pL7tR1wY6kJ";
pub const ROTATED: &str = "sk_live_Rotated9Hc3Vb5Nm7Qw2";

pub use test_support::bytes::contains;
pub use test_support::steps::{
    ScriptedExecutor, ScriptedSupervisor, failed_after_code_started, succeeded,
};
pub use test_support::time::{CountingClock, CountingIds};
pub use test_support::workflows::{FETCH, OFFLINE, REFUND, workflow};

pub fn account() -> AccountId {
    AccountId::parse(ACCOUNT).unwrap()
}

/// Everything a test needs, over one SQLite file.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub executor: Arc<ScriptedExecutor>,
    pub source: Arc<MemorySource>,
    pub clock: Arc<CountingClock>,
    pub ids: Arc<CountingIds>,
    pub options: EngineOptions,
}

impl Harness {
    pub fn new() -> Harness {
        let TempStore { dir, store } = TempStore::with_account(ACCOUNT, "local");
        let source = Arc::new(MemorySource::new());
        source.set_connection_field(ACCOUNT, "payments", "api_key", SECRET);
        let mut options =
            EngineOptions::new(workspace::Workspaces::new(dir.path().join("accounts")));
        // Each engine of a test is a process of its own: the one a test builds after
        // dropping another (a crash, a restart) finds the earlier one's leases dead.
        options.holder_dead = |_| true;
        Harness {
            dir,
            store,
            executor: Arc::new(ScriptedExecutor::default()),
            source,
            clock: Arc::new(CountingClock::default()),
            ids: Arc::new(CountingIds::default()),
            options,
        }
    }

    /// The test account's working folder.
    pub fn work_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("accounts")
            .join(ACCOUNT)
            .join("workspace")
    }

    /// The test account's revision store.
    pub fn revisions_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("accounts")
            .join(ACCOUNT)
            .join("revisions")
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("stepward.db")
    }

    /// An engine with the default supervisor (every failure to a person).
    pub fn engine(&self) -> Engine {
        self.engine_with(Arc::new(PersonSupervisor))
    }

    pub fn engine_with(&self, supervisor: Arc<dyn Supervisor>) -> Engine {
        self.engine_on(self.store.clone(), supervisor)
    }

    pub fn engine_on(&self, store: Arc<dyn Store>, supervisor: Arc<dyn Supervisor>) -> Engine {
        Engine::new(
            self.options.clone(),
            store,
            self.executor.clone(),
            redact::ScrubSets::new(self.source.clone()),
            supervisor,
            self.clock.clone(),
            self.ids.clone(),
        )
    }

    /// Every byte of the database: the main file, the WAL and the shared-memory file.
    pub fn database_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                bytes.extend(std::fs::read(path).unwrap());
            }
        }
        bytes
    }

    pub fn events_kinds(&self, run: &RunId) -> Vec<String> {
        storage::EventLog::events(self.store.as_ref(), run)
            .unwrap()
            .into_iter()
            .map(|event| event.kind)
            .collect()
    }
}

/// G25 for every run every test makes: when a test ends (and did not already fail), each run
/// of every account, rebuilt from its typed events alone, has the state the store holds.
impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let engine = self.engine();
        for account in self.store.accounts().unwrap() {
            for run in self.store.runs(&account.id).unwrap() {
                assert_eq!(
                    engine::reconstruct(&engine.journal(&run.id).unwrap()),
                    engine.stored_state(&run.id).unwrap(),
                    "run {} rebuilt from its events",
                    run.id
                );
            }
        }
    }
}

pub fn cli(user: &str) -> storage::Actor {
    storage::Actor::Cli {
        os_user: user.into(),
    }
}

/// A file a step wrote at `path`, as an executor hands it back.
pub fn file(path: &str, contents: impl Into<Vec<u8>>) -> engine::FileChange {
    engine::FileChange::write(workspace::RelPath::parse(path).unwrap(), contents.into())
}
