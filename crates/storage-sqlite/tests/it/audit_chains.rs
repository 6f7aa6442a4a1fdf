//! One audit chain per account (issue 11, finding 7): its own sequence numbers and hashes, so
//! no account sees another's activity through gaps; a changed or removed entry is found and
//! named (account, sequence number); entries written before the chains were split stay
//! verifiable; tallied entries count uses without growing the log (findings 2 and 6).

use serde_json::json;
use storage::{AccountId, Actor, AuditLog, Tallied, audit_entry_hash};
use storage_sqlite::SqliteStore;

use crate::support::{account_entry, tamper, temp_store};

fn person(id: &str) -> Actor {
    Actor::Person {
        id: id.into(),
        name: format!("Person {id}"),
    }
}

fn append(store: &SqliteStore, account: &str, index: i64) -> storage::AuditEntry {
    store
        .append_audit(&account_entry(
            account,
            storage::AuditAction::RoleChange,
            person("p1"),
            json!({"index": index}),
            1_000 + index,
        ))
        .unwrap()
}

#[test]
fn g25_each_accounts_sequence_numbers_have_no_gaps_caused_by_other_accounts() {
    let (_dir, store) = temp_store();
    for index in 0..30 {
        // Account b is busy: five of its entries between two of a's.
        append(&store, "a", index);
        for other in 0..5 {
            append(&store, "b", index * 5 + other);
        }
    }
    let entries = store.audit_entries().unwrap();
    let seqs = |account: &str| -> Vec<u64> {
        entries
            .iter()
            .filter(|entry| entry.account.as_str() == account)
            .map(|entry| entry.seq)
            .collect()
    };
    assert_eq!(seqs("a"), (1..=30).collect::<Vec<_>>());
    assert_eq!(seqs("b"), (1..=150).collect::<Vec<_>>());
    // Each chain links only its own entries.
    let a: Vec<_> = entries
        .iter()
        .filter(|entry| entry.account.as_str() == "a")
        .collect();
    for pair in a.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("a").unwrap())
            .unwrap(),
        Ok(30)
    );
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("b").unwrap())
            .unwrap(),
        Ok(150)
    );
    let all = store.verify_audit().unwrap();
    assert_eq!(all.first_break(), None);
    assert_eq!(all.chains.len(), 2);
}

#[test]
fn g25_a_changed_entry_is_found_and_named_by_account_and_sequence() {
    let (dir, store) = temp_store();
    for index in 0..6 {
        append(&store, "a", index);
        append(&store, "b", index);
    }
    tamper(
        &dir.path().join("stepward.db"),
        "UPDATE audit_log SET detail = '{\"index\":99}' WHERE account_id = 'a' AND seq = 4",
    );
    let broken = store
        .verify_account_audit(&AccountId::parse("a").unwrap())
        .unwrap()
        .unwrap_err();
    assert_eq!((broken.account.as_str(), broken.seq), ("a", 4));
    assert_eq!(broken.reason, "its content does not match its hash");
    assert!(
        broken
            .to_string()
            .starts_with("entry 4 of account a is broken"),
        "{broken}"
    );
    // The other account's chain is untouched, and the operator's check names the same link.
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("b").unwrap())
            .unwrap(),
        Ok(6)
    );
    let all = store.verify_audit().unwrap();
    let first = all.first_break().unwrap();
    assert_eq!((first.account.as_str(), first.seq), ("a", 4));
}

#[test]
fn g25_a_removed_entry_breaks_its_accounts_chain() {
    let (dir, store) = temp_store();
    for index in 0..5 {
        append(&store, "a", index);
    }
    tamper(
        &dir.path().join("stepward.db"),
        "DELETE FROM audit_log WHERE account_id = 'a' AND seq = 2",
    );
    let broken = store
        .verify_account_audit(&AccountId::parse("a").unwrap())
        .unwrap()
        .unwrap_err();
    assert_eq!(broken.seq, 3);
    assert!(broken.reason.contains("an entry before it is missing"));
}

/// Writes `entries` (account, index) into the one shared chain as a binary of migration 9
/// did: one sequence for all accounts, each entry's hash over the one before it.
fn write_shared_chain(path: &std::path::Path, entries: &[(&str, i64)]) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut previous = storage::GENESIS_HASH.to_owned();
    let mut hashes = Vec::new();
    for (position, (account, index)) in entries.iter().enumerate() {
        let seq = position as u64 + 1;
        let actor = person("p1");
        let detail = json!({"index": index});
        let hash = audit_entry_hash(
            &previous,
            seq,
            &AccountId::parse(account).unwrap(),
            None,
            &actor,
            storage::AuditAction::RoleChange.as_str(),
            &detail,
            storage::Timestamp(*index),
        );
        connection
            .execute(
                "INSERT INTO audit_log (seq, account_id, run_id, actor_kind, actor_id,
                     actor_name, action, detail, at, prev_hash, hash)
                 VALUES (?1, ?2, NULL, 'person', 'p1', 'Person p1', 'role.change', ?3, ?4, ?5,
                     ?6)",
                rusqlite::params![
                    seq as i64,
                    account,
                    detail.to_string(),
                    index,
                    previous,
                    hash
                ],
            )
            .unwrap();
        hashes.push(hash.clone());
        previous = hash;
    }
    hashes
}

#[test]
fn g25_entries_written_before_the_chains_were_split_stay_verifiable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stepward.db");
    drop(SqliteStore::open_at_version(&path, 9).unwrap());
    let old: Vec<(&str, i64)> = (0..12)
        .map(|index| (if index % 3 == 0 { "a" } else { "b" }, index))
        .collect();
    write_shared_chain(&path, &old);
    let store = SqliteStore::open(&path).unwrap();
    let all = store.verify_audit().unwrap();
    assert_eq!(all.first_break(), None, "{all:?}");
    assert_eq!(all.legacy, Ok(12));
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("a").unwrap())
            .unwrap(),
        Ok(4)
    );
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("b").unwrap())
            .unwrap(),
        Ok(8)
    );
    // Each old entry got its number in its account's chain, in the old order.
    let a: Vec<_> = store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.account.as_str() == "a")
        .collect();
    assert_eq!(
        a.iter()
            .map(|entry| (entry.seq, entry.legacy_seq))
            .collect::<Vec<_>>(),
        vec![(1, Some(1)), (2, Some(4)), (3, Some(7)), (4, Some(10))]
    );
    // The first entry written after the split continues the account's chain from its last old
    // entry.
    let next = append(&store, "a", 100);
    assert_eq!(next.seq, 5);
    assert_eq!(next.prev_hash, a[3].hash);
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("a").unwrap())
            .unwrap(),
        Ok(5)
    );

    // An old entry changed is found in its account's chain...
    tamper(
        &path,
        "UPDATE audit_log SET detail = '{\"index\":55}' WHERE account_id = 'b' AND seq = 3",
    );
    let broken = store
        .verify_account_audit(&AccountId::parse("b").unwrap())
        .unwrap()
        .unwrap_err();
    assert_eq!((broken.account.as_str(), broken.seq), ("b", 3));
}

#[test]
fn g25_an_old_entry_removed_from_the_shared_chain_is_found_by_the_operators_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stepward.db");
    drop(SqliteStore::open_at_version(&path, 9).unwrap());
    let old: Vec<(&str, i64)> = (0..9)
        .map(|index| (if index % 2 == 0 { "a" } else { "b" }, index))
        .collect();
    write_shared_chain(&path, &old);
    let store = SqliteStore::open(&path).unwrap();
    // The last old entry of b (old number 8): removing it leaves b's own numbers without a
    // gap, but the shared chain misses a link, and so does a's entry that followed it.
    tamper(&path, "DELETE FROM audit_log WHERE legacy_seq = 8");
    let all = store.verify_audit().unwrap();
    let first = all.first_break().unwrap();
    assert!(first.legacy, "{first}");
    assert_eq!(first.seq, 9);
    assert!(
        first
            .to_string()
            .contains("before each account had its own chain")
    );
    let a = store
        .verify_account_audit(&AccountId::parse("a").unwrap())
        .unwrap()
        .unwrap_err();
    assert_eq!(
        a.reason,
        "the entry before it in the old shared chain is missing"
    );
}

#[test]
fn g25_uses_in_one_window_make_one_entry_whose_count_says_how_many() {
    let (dir, store) = temp_store();
    let key = Actor::ApiKey { id: "k_1".into() };
    let entry = |at: i64| {
        account_entry(
            "a",
            storage::AuditAction::ApiKeyUse,
            key.clone(),
            json!({"key": "k_1", "route_class": "read /api/runs", "window_start": 60_000}),
            at,
        )
    };
    let first = store
        .tally_audit(&entry(60_001), "k_1|read /api/runs|1")
        .unwrap();
    assert_eq!(first, Tallied::Appended { seq: 1 });
    for use_number in 2..=40 {
        assert_eq!(
            store
                .tally_audit(&entry(60_000 + use_number), "k_1|read /api/runs|1")
                .unwrap(),
            Tallied::Counted {
                seq: 1,
                count: use_number as u64
            }
        );
    }
    // Another window is another entry.
    assert_eq!(
        store
            .tally_audit(&entry(120_001), "k_1|read /api/runs|2")
            .unwrap(),
        Tallied::Appended { seq: 2 }
    );
    let entries = store.audit_entries().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].count, 40);
    assert_eq!(entries[0].last_at.0, 60_040);
    assert_eq!(entries[0].at.0, 60_001);
    assert_eq!(
        store
            .verify_account_audit(&AccountId::parse("a").unwrap())
            .unwrap(),
        Ok(2)
    );
    // The count only goes up, nothing else of a tallied entry moves, and an entry that is not
    // tallied has no count to move.
    append(&store, "a", 3);
    let connection = rusqlite::Connection::open(dir.path().join("stepward.db")).unwrap();
    for refused in [
        "UPDATE audit_log SET count = 1 WHERE account_id = 'a' AND seq = 1",
        "UPDATE audit_log SET detail = '{}' WHERE account_id = 'a' AND seq = 1",
        "UPDATE audit_log SET count = 2 WHERE account_id = 'a' AND seq = 3",
    ] {
        assert!(
            connection.execute(refused, []).is_err(),
            "{refused} was allowed"
        );
    }
    assert_eq!(store.audit_entries().unwrap()[0].count, 40);
}
