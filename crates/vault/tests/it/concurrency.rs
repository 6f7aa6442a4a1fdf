//! Concurrent writers lose nothing: threads setting secrets of one account at once (the first
//! of them racing to create the account's key), on one store and on separate connections.

use std::sync::{Arc, Barrier};
use std::thread;

use vault::Vault;

use crate::support::{Dirs, resolve_secret, secret};

const THREADS: usize = 6;
const PER_THREAD: usize = 8;

fn set_in_parallel(vaults: Vec<Arc<Vault>>) {
    let barrier = Arc::new(Barrier::new(vaults.len()));
    let handles: Vec<_> = vaults
        .into_iter()
        .enumerate()
        .map(|(thread_index, vault)| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                for index in 0..PER_THREAD {
                    vault
                        .secrets()
                        .set(
                            &ids::AccountId::parse("shared-account").unwrap(),
                            &format!("SECRET_{thread_index}_{index}"),
                            secret(&format!("value-{thread_index}-{index}")),
                        )
                        .unwrap();
                    // Everyone also changes one common secret.
                    vault
                        .secrets()
                        .set(
                            &ids::AccountId::parse("shared-account").unwrap(),
                            "COMMON",
                            secret(&format!("common-{thread_index}-{index}")),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

fn assert_nothing_lost(vault: &Vault) {
    let listed = vault
        .secrets()
        .list(&ids::AccountId::parse("shared-account").unwrap())
        .unwrap();
    assert_eq!(listed.len(), THREADS * PER_THREAD + 1);
    for thread_index in 0..THREADS {
        for index in 0..PER_THREAD {
            assert_eq!(
                resolve_secret(
                    vault,
                    "shared-account",
                    &format!("SECRET_{thread_index}_{index}")
                ),
                format!("value-{thread_index}-{index}")
            );
        }
    }
    // Every change of the common secret got its own version.
    let common = listed.iter().find(|info| info.name == "COMMON").unwrap();
    assert_eq!(common.version, (THREADS * PER_THREAD) as u64);
    assert!(resolve_secret(vault, "shared-account", "COMMON").starts_with("common-"));
}

#[test]
fn g20_concurrent_writers_on_one_vault_lose_nothing() {
    let dirs = Dirs::new();
    let vault = Arc::new(dirs.open(&dirs.default_options()));
    set_in_parallel(vec![Arc::clone(&vault); THREADS]);
    assert_nothing_lost(&vault);
}

#[test]
fn g20_concurrent_writers_on_separate_connections_lose_nothing() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    // Create the key check first so every vault opens the same root key.
    drop(dirs.open(&options));
    let vaults: Vec<Arc<Vault>> = (0..THREADS)
        .map(|_| Arc::new(dirs.open(&options)))
        .collect();
    set_in_parallel(vaults);
    assert_nothing_lost(&dirs.open(&options));
}

#[test]
fn g20_processes_starting_at_once_share_one_generated_root_key() {
    let dirs = Arc::new(Dirs::new());
    // The database exists (migrated) before the race, as it would after `SqliteStore::open`.
    drop(dirs.store());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|index| {
            let dirs = Arc::clone(&dirs);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let store = dirs.store();
                barrier.wait();
                let (vault, notice) = Vault::open(&dirs.default_options(), store).unwrap();
                vault
                    .secrets()
                    .set(
                        &ids::AccountId::parse("acct").unwrap(),
                        &format!("FROM_{index}"),
                        secret(&format!("value-of-{index}")),
                    )
                    .unwrap();
                notice.is_some()
            })
        })
        .collect();
    let generated: usize = handles
        .into_iter()
        .map(|handle| usize::from(handle.join().unwrap()))
        .sum();
    assert_eq!(generated, 1, "exactly one process generates the key");
    let vault = dirs.open(&dirs.default_options());
    for index in 0..THREADS {
        assert_eq!(
            resolve_secret(&vault, "acct", &format!("FROM_{index}")),
            format!("value-of-{index}")
        );
    }
}

#[test]
fn g20_writes_during_account_key_rotations_lose_nothing() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let vault = Arc::new(dirs.open(&options));
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("shared-account").unwrap(),
            "SEED",
            secret("seed-value"),
        )
        .unwrap();
    let rotator = {
        let vault = Arc::new(dirs.open(&options));
        thread::spawn(move || {
            let mut last = 0;
            for _ in 0..10 {
                last = vault
                    .rotate_account_key(&ids::AccountId::parse("shared-account").unwrap())
                    .unwrap();
            }
            last
        })
    };
    set_in_parallel(vec![Arc::clone(&vault); 3]);
    assert_eq!(rotator.join().unwrap(), 11);
    let listed = vault
        .secrets()
        .list(&ids::AccountId::parse("shared-account").unwrap())
        .unwrap();
    assert_eq!(listed.len(), 3 * PER_THREAD + 2);
    for thread_index in 0..3 {
        for index in 0..PER_THREAD {
            assert_eq!(
                resolve_secret(
                    &vault,
                    "shared-account",
                    &format!("SECRET_{thread_index}_{index}")
                ),
                format!("value-{thread_index}-{index}")
            );
        }
    }
    assert_eq!(
        resolve_secret(&vault, "shared-account", "SEED"),
        "seed-value"
    );
}
