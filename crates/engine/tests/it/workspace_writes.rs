//! The audited workspace write's bracket (issue 11 finding 4, issue 37): an intent whose
//! writer is still at work is never settled by a recovery (the writer holds the workspace's
//! writes lock from its intent to its outcome), a stopped writer's intent is settled once, and
//! a revision an outcome already names is never credited to another intent.

use storage::AuditLog as _;
use workspace::Author;

use crate::support::{Harness, account, cli};

fn commit(harness: &Harness, author: &Author, path: &str, text: &str) {
    test_support::workflows::commit_files(
        &harness.options.workspaces,
        &account(),
        author,
        &[(path, text)],
    );
}

fn recovered_entries(harness: &Harness) -> Vec<serde_json::Value> {
    harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == "workspace.write_recovered")
        .map(|entry| entry.detail)
        .collect()
}

#[test]
fn g25_an_intent_whose_writer_is_at_work_is_left_alone_and_settled_once_it_stopped() {
    let harness = Harness::new();
    let engine = harness.engine();
    let author = Author::Person { id: "p-1".into() };
    let announced = engine
        .announce_workspace_write(&account(), cli("alice"), &author, &["notes.txt".to_owned()])
        .unwrap();
    // The writer committed and is about to write its outcome when another process opens
    // the data.
    commit(&harness, &author, "notes.txt", "notes\n");
    let meanwhile = engine.recover_workspace_writes().unwrap();
    assert_eq!((meanwhile.recorded, meanwhile.busy), (0, 1));
    assert!(recovered_entries(&harness).is_empty());

    // The writer stopped before its outcome: the next recovery settles its intent, once.
    drop(announced);
    let settled = engine.recover_workspace_writes().unwrap();
    assert_eq!((settled.recorded, settled.busy), (1, 0));
    let again = engine.recover_workspace_writes().unwrap();
    assert_eq!(again.recorded, 0);
    let entries = recovered_entries(&harness);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["outcome"], "committed");
}

#[test]
fn g25_a_revision_an_outcome_names_without_an_intent_is_credited_to_no_open_intent() {
    let harness = Harness::new();
    let engine = harness.engine();
    let author = Author::Person { id: "p-1".into() };
    // An intent whose writer stopped before it committed anything.
    drop(
        engine
            .announce_workspace_write(&account(), cli("alice"), &author, &["notes.txt".to_owned()])
            .unwrap(),
    );
    // A later write of the same path by the same author, recorded without an intent.
    commit(&harness, &author, "notes.txt", "notes\n");
    let revision = harness
        .options
        .workspaces
        .for_account(&account())
        .unwrap()
        .latest(1)
        .unwrap()[0]
        .id
        .as_str()
        .to_owned();
    let redactor = redact::ScrubSets::new(harness.source.clone())
        .for_account(&account())
        .unwrap();
    harness
        .store
        .append_audit(&storage::NewAuditEntry {
            account: account(),
            run: None,
            actor: redactor.scrub_fields(cli("alice")),
            action: storage::AuditAction::WorkflowSave,
            detail: redactor.scrub_json(&serde_json::json!({"revision": revision})),
            at: storage::Timestamp(1),
        })
        .unwrap();
    let settled = engine.recover_workspace_writes().unwrap();
    assert_eq!(settled.recorded, 1);
    let entries = recovered_entries(&harness);
    assert_eq!(entries[0]["outcome"], "not_committed", "{entries:?}");
}
