//! The run queue's conformance suite (issue 38; written once in
//! `test_support::queue_suite`) against SQLite, and what only SQLite can show: workers with
//! connections of their own (as processes have) never hold a job twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use storage::queue::{Fence, Holder, NewJob, SlotKind, Slots, WorkQueue};
use storage::{Account, AccountId, AccountStore as _, RunId, Timestamp};
use storage_sqlite::SqliteStore;
use test_support::queue_suite::{ACCOUNT, QueueUnderTest};

use crate::support::temp_store;

const LONG: Duration = Duration::from_secs(60);
const BOTH: Slots = Slots {
    sandbox: 1,
    model: 1,
};

/// A fresh store in a temporary folder, with the suite's account.
struct Sqlite {
    _dir: tempfile::TempDir,
    store: SqliteStore,
}

fn sqlite() -> Sqlite {
    let (dir, store) = temp_store();
    store
        .ensure_account(&Account {
            id: account(),
            name: "local".into(),
            created_at: Timestamp(0),
        })
        .unwrap();
    Sqlite { _dir: dir, store }
}

impl QueueUnderTest for Sqlite {
    fn queue(&self) -> &dyn WorkQueue {
        &self.store
    }

    fn run(&self, id: &str) -> RunId {
        test_support::runs::create_run(&self.store, &account(), id)
    }
}

test_support::queue_conformance!(sqlite);

fn account() -> AccountId {
    AccountId::parse(ACCOUNT).unwrap()
}

fn holder(pid: u32) -> Holder {
    Holder {
        host: "host-a".into(),
        boot: "boot-1".into(),
        pid,
        process_start: 1000 + u64::from(pid),
    }
}

fn job(run: &RunId, step: &str) -> NewJob {
    NewJob {
        account: account(),
        run: run.clone(),
        step: step.into(),
        attempt: 1,
        slot: SlotKind::Sandbox,
        at: Timestamp(2),
    }
}

/// Workers with connections of their own (as processes have) claim at once: every job is
/// held by exactly one of them.
#[test]
fn concurrent_claims_over_separate_connections_never_hold_a_job_twice() {
    let Sqlite { _dir: dir, store } = sqlite();
    let run = test_support::runs::create_run(&store, &account(), "run-1");
    const JOBS: u32 = 60;
    for step in 0..JOBS {
        store.enqueue(&job(&run, &format!("s{step}"))).unwrap();
    }
    drop(store);
    let path = Arc::new(dir.path().join("stepward.db"));
    let workers: Vec<_> = (0..4u32)
        .map(|worker| {
            let path = Arc::clone(&path);
            std::thread::spawn(move || {
                let store = SqliteStore::open(&path).unwrap();
                let mut held = Vec::new();
                while let Some(lease) = store.claim(&holder(worker + 1), BOTH, LONG).unwrap() {
                    assert_eq!(store.start(&lease).unwrap(), Fence::Held);
                    held.push(lease.job);
                }
                held
            })
        })
        .collect();
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.join().unwrap());
    }
    let distinct: HashSet<_> = all.iter().copied().collect();
    assert_eq!(all.len(), JOBS as usize, "every job claimed");
    assert_eq!(distinct.len(), all.len(), "no job claimed twice");
}
