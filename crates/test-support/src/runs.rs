//! A run as a store holds it, made without an engine: for the store's own suites (the queue's
//! jobs belong to a run).

use std::sync::Arc;

use redact::testing::MemorySource;
use redact::{RunSecrets, ScrubSets, SecretRequest};
use serde_json::json;
use storage::{AccountId, Actor, NewEvent, NewRun, RunId, RunStatus, Store, Timestamp};

/// Creates the run `id` of `account` (which must exist), `running`, of a one-line workflow
/// `queued`, started from the CLI at time 1.
pub fn create_run(store: &dyn Store, account: &AccountId, id: &str) -> RunId {
    create_run_of(store, account, id, "queued")
}

/// [`create_run`] of the workflow `workflow`.
pub fn create_run_of(store: &dyn Store, account: &AccountId, id: &str, workflow: &str) -> RunId {
    try_create_run_of(store, account, id, workflow).unwrap()
}

/// [`create_run_of`], answering the store's refusal.
pub fn try_create_run_of(
    store: &dyn Store,
    account: &AccountId,
    id: &str,
    workflow: &str,
) -> Result<RunId, storage::Error> {
    let run = RunId::parse(id).unwrap();
    let redactor = RunSecrets::collect(
        &run,
        account,
        &ScrubSets::new(Arc::new(MemorySource::new())),
        &SecretRequest::default(),
    )
    .unwrap()
    .redactor();
    let source = format!("name: {workflow}\n");
    store.create_run(
        &NewRun {
            id: run.clone(),
            account: account.clone(),
            status: RunStatus::Running,
            workflow_name: redactor.scrub(workflow),
            workflow_file_name: redactor.scrub(&format!("{workflow}.yaml")),
            workflow_source: redactor.scrub(&source),
            workflow_hash: storage::Sha256Hex::of(source.as_bytes()),
            inputs: redactor.scrub_json(&json!({})),
            started_by: redactor.scrub_fields(Actor::Cli {
                os_user: "tester".into(),
            }),
            created_at: Timestamp(1),
        },
        &NewEvent {
            kind: "run_started",
            version: 1,
            payload: redactor.scrub_json(&json!({})),
            at: Timestamp(1),
        },
    )?;
    Ok(run)
}
