//! Interviews in the store (server review 3, findings 2 and 3): one account's interviews are
//! bounded by its own quota, never by ending another account's (a global 512-slot LRU let one
//! tenant wipe every other's in seconds); a person's count, an interview's bytes and an
//! account's bytes are held by the store too, and an idle interview ends.

use std::sync::Arc;

use redact::ScrubSets;
use serde_json::json;
use storage::interviews::{InterviewQuota, InterviewRefusal, InterviewStore, InterviewWrite};
use storage::{Account, AccountId, AccountStore, Timestamp};
use storage_sqlite::SqliteStore;

use crate::support::FixedSource;

fn store(dir: &tempfile::TempDir) -> SqliteStore {
    let store = SqliteStore::open(&dir.path().join("interviews.db")).unwrap();
    for id in ["local", "acme"] {
        store
            .create_account(&Account {
                id: AccountId::parse(id).unwrap(),
                name: id.to_owned(),
                created_at: Timestamp(1),
            })
            .unwrap();
    }
    store
}

fn write(account: &str, person: &str, id: &str, text: &str, at: i64) -> InterviewWrite {
    let account = AccountId::parse(account).unwrap();
    let sets = ScrubSets::new(Arc::new(FixedSource::with_connection_field(
        "x",
        "y",
        "sk-value-never-0000",
    )));
    let redactor = sets.for_account(&account).unwrap();
    InterviewWrite {
        id: id.to_owned(),
        account,
        person: person.to_owned(),
        state: redactor.scrub_json(&json!({ "text": text })),
        at: Timestamp(at),
    }
}

#[test]
fn g26_one_accounts_interviews_never_end_anothers() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let quota = InterviewQuota::default();
    let local = AccountId::parse("local").unwrap();
    store
        .start_interview(&write("local", "member", "iv-local", "hello", 10), &quota)
        .unwrap()
        .unwrap();
    // Another account fills its own quota, person by person, and then some.
    let mut refused = 0;
    for person in 0..(quota.per_account / quota.per_person + 4) {
        for index in 0..quota.per_person {
            let id = format!("iv-acme-{person}-{index}");
            let started = store
                .start_interview(
                    &write("acme", &format!("p{person}"), &id, "flood", 20),
                    &quota,
                )
                .unwrap();
            if let Err(refusal) = started {
                assert!(
                    matches!(refusal, InterviewRefusal::AccountFull { .. }),
                    "{refusal:?}"
                );
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "the account's quota never held");
    let kept = store
        .interview(&local, "iv-local", &quota, Timestamp(30))
        .unwrap();
    assert!(
        kept.is_some(),
        "another account's interviews ended this one"
    );
    // A person's own count, an interview's bytes, and an account's bytes.
    for index in 1..quota.per_person {
        store
            .start_interview(
                &write("local", "member", &format!("iv-{index}"), "x", 40),
                &quota,
            )
            .unwrap()
            .unwrap();
    }
    let fifth = store
        .start_interview(&write("local", "member", "iv-fifth", "x", 50), &quota)
        .unwrap();
    assert!(
        matches!(fifth, Err(InterviewRefusal::PersonFull { .. })),
        "{fifth:?}"
    );
    let big = "b".repeat(quota.bytes_per_interview);
    let too_large = store
        .update_interview(&write("local", "member", "iv-local", &big, 60), &quota)
        .unwrap();
    assert!(
        matches!(too_large, Err(InterviewRefusal::TooLarge { .. })),
        "{too_large:?}"
    );
    let small_quota = InterviewQuota {
        bytes_per_account: 64,
        ..quota
    };
    let account_bytes = store
        .update_interview(
            &write("local", "member", "iv-local", &"c".repeat(60), 70),
            &small_quota,
        )
        .unwrap();
    assert!(
        matches!(account_bytes, Err(InterviewRefusal::AccountBytes { .. })),
        "{account_bytes:?}"
    );
    // Idle past the quota's time: gone.
    let later = Timestamp(70 + quota.idle_millis + 1);
    assert!(
        store
            .interview(&local, "iv-local", &quota, later)
            .unwrap()
            .is_none()
    );
}
