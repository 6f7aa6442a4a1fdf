//! G14 with a real `kill -9`: a child process (this same test binary) runs a networked step
//! whose executor never returns; the parent kills it with SIGKILL, then recovers on the same
//! SQLite file. The step is `unknown` and never runs again.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::{Engine, EngineOptions, PersonSupervisor};
use redact::testing::MemorySource;
use serde_json::json;
use storage::{Account, AccountStore, AttemptStatus, RunId, RunStatus, RunStore, Timestamp};
use storage_sqlite::SqliteStore;

use crate::support::{
    ACCOUNT, CountingClock, CountingIds, FETCH, Harness, SECRET, ScriptedExecutor, account, cli,
    workflow,
};

const CHILD_DIR: &str = "STEPWARD_ENGINE_KILL_CHILD_DIR";
const TEST_NAME: &str = "kill::g14_networked_step_killed_with_sigkill_is_unknown_after_restart";

/// The child: starts the run; the networked step signals that it runs, then hangs.
fn child(dir: &Path) {
    let store = Arc::new(SqliteStore::open(&dir.join("stepward.db")).unwrap());
    store
        .ensure_account(&Account {
            id: account(),
            name: "local".into(),
            created_at: Timestamp(0),
        })
        .unwrap();
    let source = Arc::new(MemorySource::new());
    source.set_connection_field(ACCOUNT, "payments", "api_key", SECRET);
    let executor = Arc::new(ScriptedExecutor::default());
    let marker = dir.join("started");
    executor.then("fetch", move |_| {
        std::fs::write(&marker, b"running").unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let engine = Engine::new(
        EngineOptions::new(workspace::Workspaces::new(dir.join("accounts"))),
        store,
        executor,
        redact::ScrubSets::new(source),
        Arc::new(PersonSupervisor),
        Arc::new(CountingClock::default()),
        Arc::new(CountingIds::default()),
    );
    let _ = engine.start_run(&account(), &workflow(FETCH), json!({}), cli("alice"));
}

#[test]
fn g14_networked_step_killed_with_sigkill_is_unknown_after_restart() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        child(Path::new(&dir));
        return;
    }
    let harness = Harness::new();
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, harness.dir.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !harness.dir.path().join("started").exists() {
        assert!(
            Instant::now() < deadline,
            "the child never started its step"
        );
        assert!(
            process.try_wait().unwrap().is_none(),
            "the child exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // `Child::kill` is SIGKILL on Unix: no destructor, no flush, no goodbye.
    process.kill().unwrap();
    process.wait().unwrap();

    let run = RunId::parse("run-1").unwrap();
    let report = harness.engine().recover().unwrap();
    assert_eq!(
        report.marked_unknown,
        vec![(run.clone(), "fetch".to_owned(), 1)]
    );
    assert!(
        harness.executor.calls_of("fetch").is_empty(),
        "the restarted engine never ran it"
    );
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::NeedsAttention
    );
    assert_eq!(
        harness.store.attempts(&run).unwrap()[0].status,
        AttemptStatus::Unknown
    );
}
