//! A record that cannot resume never stops the platform (agents review, finding 2: an agent
//! file whose limit overflowed panicked `serve`'s start-up recovery, every start, for every
//! account). Recovery takes each stored run on its own: a run whose stored state does not load
//! or whose resumption panics goes to `needs_attention` with the reason, and the others go on.

use std::panic::AssertUnwindSafe;

use serde_json::json;
use storage::{EventLog, RunId, RunStatus, RunStore};

use crate::support::{Harness, OFFLINE, account, cli, workflow};

/// Starts a run of [`OFFLINE`] whose step "crashes the platform" mid-step (the executor
/// panics): the run is left `running` with its attempt running, as after a crash.
fn run_left_mid_step(harness: &Harness) -> RunId {
    harness
        .executor
        .then("compute", |_| panic!("the platform died mid-step"));
    let engine = harness.engine();
    let before: Vec<RunId> = harness
        .store
        .runs(&account())
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect();
    let crashed = std::panic::catch_unwind(AssertUnwindSafe(|| {
        engine.start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
    }));
    assert!(crashed.is_err(), "the step was to crash the platform");
    let run = harness
        .store
        .runs(&account())
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .find(|run| !before.contains(run))
        .unwrap();
    assert_eq!(
        harness.store.running_attempts().unwrap().len(),
        before.len() + 1
    );
    run
}

fn status(harness: &Harness, run: &RunId) -> (RunStatus, String) {
    let record = harness.store.run(run).unwrap().unwrap();
    let reason = harness
        .store
        .events(run)
        .unwrap()
        .iter()
        .rev()
        .find(|event| event.kind == "run.status")
        .and_then(|event| event.payload["reason"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (record.status, reason)
}

#[test]
fn g14_a_stored_run_that_does_not_load_goes_to_a_person_and_the_others_resume() {
    let harness = Harness::new();
    let broken = run_left_mid_step(&harness);
    let intact = run_left_mid_step(&harness);
    // The broken run's stored workflow no longer matches what was checked when it started.
    let database = rusqlite::Connection::open(harness.db_path()).unwrap();
    database
        .execute(
            "UPDATE runs SET workflow_source = workflow_source || '# edited' WHERE id = ?1",
            [broken.as_str()],
        )
        .unwrap();
    drop(database);
    let report = harness.engine().recover().unwrap();
    let (broken_status, reason) = status(&harness, &broken);
    assert_eq!(broken_status, RunStatus::NeedsAttention, "{report:?}");
    assert!(reason.contains("cannot be resumed"), "{reason}");
    assert_eq!(
        status(&harness, &intact).0,
        RunStatus::Succeeded,
        "{report:?}"
    );
    assert!(harness.store.running_attempts().unwrap().is_empty());
    // A second start finds nothing more to do with it.
    let again = harness.engine().recover().unwrap();
    assert!(again.skipped.is_empty(), "{again:?}");
}

#[test]
fn g14_a_run_whose_resumption_panics_goes_to_a_person_and_the_others_resume() {
    let harness = Harness::new();
    let panicking = run_left_mid_step(&harness);
    let intact = run_left_mid_step(&harness);
    // Recovery runs the interrupted offline steps again: the first panics once more.
    harness.executor.then("compute", |_| {
        panic!("this run's state panics the platform")
    });
    let report = harness.engine().recover().unwrap();
    let (first, first_reason) = status(&harness, &panicking);
    let (second, _) = status(&harness, &intact);
    // Which of the two recovery takes first is the store's order: one went to a person, the
    // other finished.
    let mut outcomes = [first, second];
    outcomes.sort_by_key(|status| status.as_str());
    assert_eq!(
        outcomes,
        [RunStatus::NeedsAttention, RunStatus::Succeeded],
        "{report:?}"
    );
    let reason = if first == RunStatus::NeedsAttention {
        first_reason
    } else {
        status(&harness, &intact).1
    };
    assert!(
        reason.contains("this run's state panics the platform"),
        "{reason}"
    );
    assert!(harness.store.running_attempts().unwrap().is_empty());
}
