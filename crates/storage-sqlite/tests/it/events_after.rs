//! A run page's live stream reads only the events it has not sent yet (issue 14): one range
//! of the events' primary key after the last sequence number it saw, never the whole log.

use serde_json::json;
use storage::{
    Account, AccountId, AccountStore, Actor, EventLog, NewEvent, NewRun, RunId, RunStatus,
    RunStore, Sha256Hex, Timestamp,
};

use crate::support::{run_secrets, temp_store};

const EVENTS: u64 = 300;

#[test]
fn g25_events_after_a_sequence_number_are_one_search_of_the_primary_key() {
    let (_dir, store) = temp_store();
    store
        .create_account(&Account {
            id: AccountId::parse("acct").unwrap(),
            name: "acct".into(),
            created_at: Timestamp(1),
        })
        .unwrap();
    let run = RunId::parse("run-live").unwrap();
    let redactor = run_secrets(run.as_str(), "sk_live_events_after_0123456789").redactor();
    let event = |index: u64| NewEvent {
        kind: "step.printed",
        version: 1,
        payload: redactor.scrub_json(&json!({"index": index})),
        at: Timestamp(10),
    };
    store
        .create_run(
            &NewRun {
                id: run.clone(),
                account: AccountId::parse("acct").unwrap(),
                status: RunStatus::Running,
                workflow_name: redactor.scrub("live"),
                workflow_file_name: redactor.scrub("live.yaml"),
                workflow_source: redactor.scrub("name: live\n"),
                workflow_hash: Sha256Hex::of(b"name: live\n"),
                inputs: redactor.scrub_json(&json!({})),
                started_by: redactor.scrub_fields(Actor::Cli {
                    os_user: "live".into(),
                }),
                created_at: Timestamp(10),
            },
            &event(0),
        )
        .unwrap();
    for index in 1..EVENTS {
        store.append(&run, &event(index)).unwrap();
    }

    let after = store.events_after(&run, 290, 4).unwrap();
    let seqs: Vec<u64> = after.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, [291, 292, 293, 294], "in order, after 290, at most 4");
    assert_eq!(after[0].payload, json!({"index": 290}));
    assert_eq!(
        store.events_after(&run, EVENTS, 10).unwrap(),
        [],
        "nothing after the last"
    );
    assert_eq!(
        store.events_after(&run, 0, 1000).unwrap(),
        store.events(&run).unwrap(),
        "the same records as the whole log"
    );
    assert_eq!(
        store
            .events_after(&RunId::parse("run-other").unwrap(), 0, 10)
            .unwrap(),
        []
    );

    // The statement is one search of the key (run, seq > after): it reads the rows it
    // returns, however long the log is.
    let plan = store.events_after_plan(&run, 290, 4).unwrap();
    assert!(
        plan.starts_with("SEARCH events USING PRIMARY KEY (run_id=? AND seq>?)")
            && !plan.contains(';'),
        "{plan}"
    );
    assert_eq!(store.last_event_seq(&run).unwrap(), EVENTS);
    assert_eq!(
        store
            .last_event_seq(&RunId::parse("run-other").unwrap())
            .unwrap(),
        0
    );
    let plan = store.last_event_seq_plan(&run).unwrap();
    assert!(
        plan.starts_with("SEARCH events USING PRIMARY KEY (run_id=?)") && !plan.contains(';'),
        "{plan}"
    );
}
