//! newcomer 3, workload 4: `GET /api/runs/{id}/events` gives every event with the journal
//! version it was stored in, so a reader of the export knows which shape each payload has.

use auth::Role;

use crate::support::{Caller, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn g25_every_exported_event_carries_the_version_it_was_stored_in() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let answer = harness
        .call(
            "GET",
            &format!("/api/runs/{}/events", run.as_str()),
            &member,
            None,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let events = answer.json();
    let events = events.as_array().expect("a list of events");
    let stored = storage::EventLog::events(&*harness.store, &run).unwrap();
    assert_eq!(events.len(), stored.len());
    for (event, record) in events.iter().zip(&stored) {
        assert_eq!(event["seq"].as_u64(), Some(record.seq), "{event}");
        assert_eq!(
            event["version"].as_u64(),
            Some(u64::from(record.version)),
            "{event}"
        );
    }
}
