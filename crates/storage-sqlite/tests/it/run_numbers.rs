//! Each run's short number within its workflow (issue 42, point 3: "ledger #12"): given by the
//! store in the run's own transaction, one after the other per account and workflow, unique
//! under concurrent starts from several processes' handles on one database file, never given
//! twice (a run that could not be created gives its number back), and existing runs numbered
//! by the migration in the order they started (the order they were written breaks a tie).

use std::sync::{Arc, Barrier};

use storage::{Account, AccountId, AccountStore, RunId, RunStore, Timestamp};
use storage_sqlite::SqliteStore;
use storage_sqlite::migrations::MIGRATIONS;
use test_support::runs::{create_run_of, try_create_run_of};

use crate::support::temp_store;

fn account(store: &SqliteStore, id: &str) -> AccountId {
    let account = AccountId::parse(id).unwrap();
    store
        .create_account(&Account {
            id: account.clone(),
            name: id.into(),
            created_at: Timestamp(1),
        })
        .unwrap();
    account
}

fn number_of(store: &SqliteStore, run: &RunId) -> u64 {
    store.run(run).unwrap().unwrap().number
}

#[test]
fn runs_are_numbered_per_account_and_workflow_one_after_the_other() {
    let (_dir, store) = temp_store();
    let acct = account(&store, "acct");
    let other = account(&store, "other");
    let first = create_run_of(&store, &acct, "run-a1", "ledger");
    let second = create_run_of(&store, &acct, "run-a2", "ledger");
    let elsewhere = create_run_of(&store, &acct, "run-b1", "payroll");
    let other_account = create_run_of(&store, &other, "run-o1", "ledger");
    assert_eq!(number_of(&store, &first), 1);
    assert_eq!(number_of(&store, &second), 2);
    assert_eq!(
        number_of(&store, &elsewhere),
        1,
        "each workflow counts its own"
    );
    assert_eq!(
        number_of(&store, &other_account),
        1,
        "each account counts its own"
    );
    // A run that cannot be created (its id is taken) gives no number away.
    assert!(
        try_create_run_of(&store, &acct, "run-a2", "ledger").is_err(),
        "a run id is created once"
    );
    let third = create_run_of(&store, &acct, "run-a3", "ledger");
    assert_eq!(number_of(&store, &third), 3);
}

/// Eight handles on one file (as eight processes would hold), each starting runs of the same
/// workflow at the same moment: every number from 1 to the count, each once.
#[test]
fn numbers_stay_unique_under_concurrent_starts_from_several_handles() {
    let (dir, store) = temp_store();
    let acct = account(&store, "acct");
    let path = dir.path().join("stepward.db");
    const HANDLES: usize = 8;
    const EACH: usize = 12;
    let barrier = Arc::new(Barrier::new(HANDLES));
    let threads: Vec<_> = (0..HANDLES)
        .map(|handle| {
            let path = path.clone();
            let acct = acct.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = SqliteStore::open(&path).unwrap();
                barrier.wait();
                (0..EACH)
                    .map(|n| {
                        let id = format!("run-{handle}-{n}");
                        create_run_of(&store, &acct, &id, "ledger")
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let runs: Vec<RunId> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let mut numbers: Vec<u64> = runs.iter().map(|run| number_of(&store, run)).collect();
    numbers.sort_unstable();
    let expected: Vec<u64> = (1..=(HANDLES * EACH) as u64).collect();
    assert_eq!(numbers, expected);
}

#[test]
fn the_migration_numbers_existing_runs_in_the_order_they_started() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let numbered_before = MIGRATIONS
        .iter()
        .rev()
        .find(|migration| migration.name == "run_numbers")
        .map(|migration| migration.version - 1)
        .expect("a migration numbers the runs");
    {
        let old = SqliteStore::open_at_version(&path, numbered_before).unwrap();
        account(&old, "acct");
        account(&old, "other");
        drop(old);
        let connection = rusqlite::Connection::open(&path).unwrap();
        // Written out of order, two at the same moment (the order they were written breaks
        // the tie, as in the runs list).
        for (id, account, workflow, at) in [
            ("run-c", "acct", "ledger", 30),
            ("run-a", "acct", "ledger", 10),
            ("run-b2", "acct", "ledger", 20),
            ("run-b1", "acct", "ledger", 20),
            ("run-p", "acct", "payroll", 15),
            ("run-o", "other", "ledger", 5),
        ] {
            connection
                .execute(
                    "INSERT INTO runs (id, account_id, status, workflow_name, workflow_file_name,
                         workflow_source, workflow_hash, inputs, created_at, updated_at,
                         started_by_kind, started_by_id, started_by_name)
                     VALUES (?1, ?2, 'succeeded', ?3, 'x.yaml', 'name: x', ?4, '{}', ?5, ?5,
                         'cli', 'root', '')",
                    rusqlite::params![
                        id,
                        account,
                        workflow,
                        storage::Sha256Hex::of(b"name: x").as_str(),
                        at
                    ],
                )
                .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    let numbers: Vec<(&str, u64)> = ["run-a", "run-b1", "run-b2", "run-c", "run-p", "run-o"]
        .into_iter()
        .map(|id| (id, number_of(&store, &RunId::parse(id).unwrap())))
        .collect();
    assert_eq!(
        numbers,
        vec![
            ("run-a", 1),
            ("run-b1", 3),
            ("run-b2", 2),
            ("run-c", 4),
            ("run-p", 1),
            ("run-o", 1)
        ]
    );
    // The next run follows the numbered ones.
    let next = create_run_of(
        &store,
        &AccountId::parse("acct").unwrap(),
        "run-d",
        "ledger",
    );
    assert_eq!(number_of(&store, &next), 5);
}

/// The migration numbers a large table in one pass (a numbering per row would take minutes
/// here and keep the server from starting).
#[test]
fn the_migration_numbers_many_runs_in_one_pass() {
    const RUNS: usize = 30_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let numbered_before = MIGRATIONS
        .iter()
        .find(|migration| migration.name == "run_numbers")
        .map(|migration| migration.version - 1)
        .unwrap();
    {
        let old = SqliteStore::open_at_version(&path, numbered_before).unwrap();
        account(&old, "acct");
        drop(old);
        let mut connection = rusqlite::Connection::open(&path).unwrap();
        let transaction = connection.transaction().unwrap();
        {
            let mut insert = transaction
                .prepare(
                    "INSERT INTO runs (id, account_id, status, workflow_name, workflow_file_name,
                         workflow_source, workflow_hash, inputs, created_at, updated_at,
                         started_by_kind, started_by_id, started_by_name)
                     VALUES (?1, 'acct', 'succeeded', ?2, 'x.yaml', '', '', '{}', ?3, ?3,
                         'cli', 'root', '')",
                )
                .unwrap();
            for index in 0..RUNS {
                insert
                    .execute(rusqlite::params![
                        format!("run-{index:06}"),
                        format!("workflow_{}", index % 7),
                        i64::try_from(index).unwrap()
                    ])
                    .unwrap();
            }
        }
        transaction.commit().unwrap();
    }
    let started = std::time::Instant::now();
    let store = SqliteStore::open(&path).unwrap();
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(20),
        "the migrations took {took:?} for {RUNS} runs"
    );
    // The last run of workflow_0 is its (RUNS / 7 + 1)th.
    let last = (0..RUNS).rev().find(|index| index % 7 == 0).unwrap();
    assert_eq!(
        number_of(&store, &RunId::parse(&format!("run-{last:06}")).unwrap()),
        u64::try_from(last / 7 + 1).unwrap()
    );
}
