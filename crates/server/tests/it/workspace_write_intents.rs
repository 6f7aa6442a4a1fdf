//! Issue 11, finding 4 for the workspace (files and a revision log, outside the database): an
//! intent entry is written, and must be, before the commit; an outcome entry after. Start-up
//! recovery finds intents without an outcome and records what the revision log shows happened.

use auth::Role;
use serde_json::json;
use storage::AuditLog;

use crate::support::{Caller, Harness};

fn fail_audit_action(harness: &Harness, action: &str) {
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    connection
        .execute_batch(&format!(
            "CREATE TRIGGER test_audit_fails BEFORE INSERT ON audit_log
             WHEN NEW.action = '{action}'
             BEGIN SELECT RAISE(ABORT, 'simulated audit failure'); END;"
        ))
        .unwrap();
}

fn allow_audit_again(harness: &Harness) {
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    connection
        .execute_batch("DROP TRIGGER test_audit_fails;")
        .unwrap();
}

fn write_body(path: &str) -> Option<(&'static str, String)> {
    Some((
        "application/json",
        json!({"message": "intent test", "changes": [{"path": path, "action": "write", "content": "hello"}]})
            .to_string(),
    ))
}

fn entries(harness: &Harness, action: &str) -> Vec<serde_json::Value> {
    harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == action)
        .map(|entry| entry.detail)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_workspace_write_whose_intent_cannot_be_written_is_refused() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    fail_audit_action(&harness, "workspace.write_intent");
    let refused = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body("unaudited.txt"),
        )
        .await;
    assert_eq!(refused.status, 500, "{}", refused.text());
    let file = harness
        .call(
            "GET",
            "/api/workspace/file?path=unaudited.txt",
            &member,
            None,
        )
        .await;
    assert_eq!(file.status, 404, "the file was written: {}", file.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_each_workspace_write_has_an_intent_and_an_outcome() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let written = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body("notes.txt"),
        )
        .await;
    assert_eq!(written.status, 201, "{}", written.text());
    let intents = entries(&harness, "workspace.write_intent");
    let outcomes = entries(&harness, "workspace.write");
    assert_eq!(intents.len(), 1);
    assert_eq!(outcomes.len(), 1);
    assert_eq!(intents[0]["intent"], outcomes[0]["intent"]);
    assert_eq!(outcomes[0]["revision"], written.json()["id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_recovery_records_the_outcome_of_a_write_stopped_after_its_commit() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    // The process "stops" between the commit and the outcome entry: the outcome cannot be
    // written, so nothing records that the revision exists.
    fail_audit_action(&harness, "workspace.write");
    let stopped = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body("committed.txt"),
        )
        .await;
    assert_eq!(stopped.status, 500, "{}", stopped.text());
    allow_audit_again(&harness);
    // An intent that never reached its commit (its revision is not in the log).
    fail_audit_action(&harness, "workspace.write_refused");
    harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            Some((
                "application/json",
                json!({"message": "m", "changes": [{"path": "gone.txt", "action": "delete"}]})
                    .to_string(),
            )),
        )
        .await;
    allow_audit_again(&harness);
    assert_eq!(entries(&harness, "workspace.write_intent").len(), 2);
    assert!(entries(&harness, "workspace.write").is_empty());

    // The restart: recovery reads the revision log and records what happened.
    let recovered = server::recover_workspace_writes(&harness.state).unwrap();
    assert_eq!(recovered.recorded, 2);
    let outcomes = entries(&harness, "workspace.write_recovered");
    let intents = entries(&harness, "workspace.write_intent");
    let history = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .history()
        .unwrap();
    let revision = history.last().unwrap();
    let committed = outcomes
        .iter()
        .find(|outcome| outcome["intent"] == intents[0]["intent"])
        .unwrap();
    assert_eq!(committed["outcome"], "committed");
    assert_eq!(committed["revision"], revision.id.as_str());
    let not_committed = outcomes
        .iter()
        .find(|outcome| outcome["intent"] == intents[1]["intent"])
        .unwrap();
    assert_eq!(not_committed["outcome"], "not_committed");
    // A second start finds nothing left to recover.
    assert_eq!(
        server::recover_workspace_writes(&harness.state)
            .unwrap()
            .recorded,
        0
    );
}
