//! A slow reader never blocks the others (issue 11, finding 2): reads run on read connections
//! beside the one writer (WAL), so while one reader holds a read transaction open, a write
//! commits and another read goes on, and the open transaction keeps the snapshot it began
//! with.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use storage::{AccountId, Actor, AuditFilter, AuditLog, AuditPosition};

use crate::support::{account_entry, temp_store};

const PATIENCE: Duration = Duration::from_secs(10);

fn count(connection: &rusqlite::Connection) -> i64 {
    connection
        .query_row("SELECT COUNT(*) FROM audit_log", [], |row| row.get(0))
        .unwrap()
}

fn entry(index: i64) -> storage::NewAuditEntry {
    account_entry(
        "a",
        storage::AuditAction::RoleChange,
        Actor::Engine,
        json!({"index": index}),
        1_000 + index,
    )
}

#[test]
fn a_reader_holding_a_read_transaction_blocks_neither_a_write_nor_another_read() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    store.append_audit(&entry(0)).unwrap();

    let (began, began_seen) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let slow = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            store
                .read_snapshot(|connection| {
                    let before = count(connection);
                    began.send(before).unwrap();
                    released.recv_timeout(PATIENCE).unwrap();
                    (before, count(connection))
                })
                .unwrap()
        })
    };
    assert_eq!(began_seen.recv_timeout(PATIENCE).unwrap(), 1);

    // A write commits while the read transaction is open.
    let (written, write_done) = mpsc::channel();
    {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            written
                .send(store.append_audit(&entry(1)).map(|e| e.seq))
                .unwrap();
        });
    }
    let seq = write_done
        .recv_timeout(PATIENCE)
        .expect("the write waited for the open read transaction")
        .unwrap();
    assert_eq!(seq, 2);

    // Another read goes on, and sees the write.
    let (read, read_done) = mpsc::channel();
    {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let page = store.audit_page(
                &AccountId::parse("a").unwrap(),
                &AuditFilter::default(),
                AuditPosition::Newest,
                10,
            );
            read.send(page.map(|page| page.entries.len())).unwrap();
        });
    }
    let seen = read_done
        .recv_timeout(PATIENCE)
        .expect("a read waited for the open read transaction")
        .unwrap();
    assert_eq!(seen, 2);

    // The slow reader's transaction still sees the log as it began.
    release.send(()).unwrap();
    assert_eq!(slow.join().unwrap(), (1, 1));
}

#[test]
fn as_many_slow_readers_as_the_pool_holds_leave_the_writer_free() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let mut releases = Vec::new();
    let mut readers = Vec::new();
    let (began, began_seen) = mpsc::channel();
    for _ in 0..storage_sqlite::MAX_READERS {
        let (release, released) = mpsc::channel::<()>();
        releases.push(release);
        let store = Arc::clone(&store);
        let began = began.clone();
        readers.push(std::thread::spawn(move || {
            store
                .read_snapshot(|connection| {
                    began.send(count(connection)).unwrap();
                    released.recv_timeout(PATIENCE).unwrap();
                })
                .unwrap();
        }));
    }
    for _ in 0..storage_sqlite::MAX_READERS {
        began_seen.recv_timeout(PATIENCE).unwrap();
    }
    let (written, write_done) = mpsc::channel();
    {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            written.send(store.append_audit(&entry(1)).is_ok()).unwrap();
        });
    }
    assert!(write_done.recv_timeout(PATIENCE).unwrap());
    for release in releases {
        release.send(()).unwrap();
    }
    for reader in readers {
        reader.join().unwrap();
    }
}
