//! Runs as jobs of the run queue (issue 38): a door records and queues, only a holder of a
//! job's lease runs its attempt, a job that is no longer the run's next or whose lease was
//! taken writes nothing, and a step whose workers die twice sends its run to a person.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use engine::{Driving, Engine, JobClaim, STOPPED_TWICE};
use serde_json::json;
use storage::queue::{Fence, Holder, JobState, Lease, NewJob, Release, SlotKind, Slots, WorkQueue};
use storage::{AttemptStatus, EventLog, RunId, RunStatus, RunStore, Store};

use crate::support::{Harness, account, cli, workflow};
use test_support::workflows::{GATED, OFFLINE, REFUND};

const BOTH: Slots = Slots {
    sandbox: 4,
    model: 4,
};

/// A worker's hold on a job, as the worker crate's `Claimed` is.
struct Held<'a> {
    lease: Lease,
    store: &'a dyn Store,
}

impl JobClaim for Held<'_> {
    fn lease(&self) -> &Lease {
        &self.lease
    }
    fn start(&self) -> Result<Fence, storage::Error> {
        self.store.start(&self.lease)
    }
    fn held(&self) -> bool {
        true
    }
}

fn worker_holder() -> Holder {
    Holder {
        host: "test-host".into(),
        boot: "boot".into(),
        pid: 4242,
        process_start: 7,
    }
}

/// The next queued job, claimed by the test's worker (there must be one).
fn claim_next(store: &dyn Store) -> Lease {
    store
        .claim(&worker_holder(), BOTH, Duration::from_secs(30))
        .unwrap()
        .unwrap()
}

/// A worker's turn: claims one job and runs it; whether there was one.
fn work_one(engine: &Engine, store: &dyn Store) -> bool {
    let Some(lease) = store
        .claim(&worker_holder(), BOTH, Duration::from_secs(30))
        .unwrap()
    else {
        return false;
    };
    let held = Held { lease, store };
    engine.run_job(&held).unwrap();
    store.release(&held.lease, Release::Done).unwrap();
    true
}

/// Starts a run of the two offline steps on `engine`.
fn start_offline(engine: &Engine) -> engine::RunSummary {
    engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 3}),
            cli("alice"),
        )
        .unwrap()
}

fn queue_engine(harness: &Harness) -> Engine {
    let mut options = harness.options.clone();
    options.driving = Driving::Queue;
    Engine::new(
        options,
        harness.store.clone(),
        harness.executor.clone(),
        redact::ScrubSets::new(harness.source.clone()),
        std::sync::Arc::new(engine::PersonSupervisor),
        harness.clock.clone(),
        harness.ids.clone(),
    )
}

#[test]
fn a_door_answers_at_once_and_each_attempt_is_run_by_the_holder_of_its_job() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    assert_eq!(
        summary.status,
        RunStatus::Running,
        "answered before any step ran"
    );
    assert!(summary.steps.is_empty());
    assert!(harness.executor.calls_of("compute").is_empty());
    let jobs = harness.store.jobs_of_run(&summary.run).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        (
            jobs[0].step.as_str(),
            jobs[0].attempt,
            jobs[0].slot,
            jobs[0].state
        ),
        ("compute", 1, SlotKind::Sandbox, JobState::Queued)
    );
    let mut turns = 0;
    while work_one(&engine, harness.store.as_ref()) {
        turns += 1;
        assert!(turns <= 2, "one job per step");
    }
    assert_eq!(turns, 2);
    let done = engine.summary(&summary.run).unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(harness.executor.calls_of("compute").len(), 1);
    assert_eq!(harness.executor.calls_of("report").len(), 1);
    assert!(
        harness
            .store
            .jobs_of_run(&summary.run)
            .unwrap()
            .iter()
            .all(|job| job.state == JobState::Done)
    );
}

#[test]
fn a_decision_queues_the_gated_step_and_a_door_parks_without_a_job() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let started = engine
        .start_run(&account(), &workflow(GATED), json!({}), cli("alice"))
        .unwrap();
    while work_one(&engine, harness.store.as_ref()) {}
    let parked = engine.summary(&started.run).unwrap();
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    let gate = parked.waiting_at.clone().unwrap();
    let jobs_before = harness.store.jobs_of_run(&started.run).unwrap().len();
    let decided = engine
        .decide(
            &started.run,
            &gate,
            engine::Decision {
                kind: engine::GateDecision::Approve,
                who: cli("bob"),
                door: storage::Door::Cli,
                note: "looks right".into(),
            },
        )
        .unwrap();
    assert_eq!(decided.status, RunStatus::Running);
    let jobs = harness.store.jobs_of_run(&started.run).unwrap();
    assert_eq!(jobs.len(), jobs_before + 1);
    assert_eq!(jobs.last().unwrap().step, gate.trim_end_matches('!'));
    while work_one(&engine, harness.store.as_ref()) {}
    assert_eq!(
        engine.summary(&started.run).unwrap().status,
        RunStatus::Succeeded
    );
}

#[test]
fn a_job_that_is_not_the_runs_next_attempt_writes_nothing() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    // A job for an attempt the run is not at (a door's duplicate, a bug): claimed first.
    harness
        .store
        .enqueue(&NewJob {
            account: account(),
            run: summary.run.clone(),
            step: "report".into(),
            attempt: 4,
            slot: SlotKind::Sandbox,
            at: storage::Timestamp(1),
        })
        .unwrap();
    let events = harness.events_kinds(&summary.run).len();
    let lease = harness
        .store
        .claim_job(
            harness.store.jobs_of_run(&summary.run).unwrap()[1].id,
            &worker_holder(),
            Duration::from_secs(30),
        )
        .unwrap()
        .unwrap();
    let held = Held {
        lease,
        store: harness.store.as_ref(),
    };
    assert_eq!(engine.run_job(&held).unwrap(), engine::JobEnd::NotNext);
    assert_eq!(harness.events_kinds(&summary.run).len(), events);
    assert!(harness.store.attempts(&summary.run).unwrap().is_empty());
    assert_eq!(
        harness.store.job(held.lease.job).unwrap().unwrap().state,
        JobState::Claimed,
        "never marked started"
    );
}

#[test]
fn a_job_whose_lease_ended_before_its_step_started_runs_nothing() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    let lease = harness
        .store
        .claim(&worker_holder(), BOTH, Duration::from_millis(100))
        .unwrap()
        .unwrap();
    std::thread::sleep(Duration::from_millis(250));
    let held = Held {
        lease,
        store: harness.store.as_ref(),
    };
    assert_eq!(engine.run_job(&held).unwrap(), engine::JobEnd::LeaseLost);
    assert!(harness.executor.calls_of("compute").is_empty());
    assert!(harness.store.attempts(&summary.run).unwrap().is_empty());
}

#[test]
fn a_step_whose_workers_die_twice_sends_its_run_to_a_person_and_is_not_claimed_again() {
    let harness = Harness::new();
    harness
        .executor
        .then("report", |_| panic!("the worker process died mid-step"));
    harness
        .executor
        .then("report", |_| panic!("the worker process died mid-step"));
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    assert!(work_one(&engine, harness.store.as_ref()), "compute");
    for death in 1..=2 {
        let died = std::panic::catch_unwind(AssertUnwindSafe(|| {
            work_one(&engine, harness.store.as_ref())
        }));
        assert!(died.is_err(), "death {death}");
        // The next process to start finds the dead worker's lease (its holder proven dead).
        let report = engine.recover().unwrap();
        if death == 1 {
            assert_eq!(
                report.interrupted_offline,
                vec![(summary.run.clone(), "report".to_owned(), 1)]
            );
            assert_eq!(
                harness.store.run(&summary.run).unwrap().unwrap().status,
                RunStatus::Running,
                "an offline step runs again once"
            );
        } else {
            assert_eq!(
                report.stopped_twice,
                vec![(summary.run.clone(), "report".to_owned(), 2)]
            );
        }
    }
    let run = harness.store.run(&summary.run).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::NeedsAttention);
    let reason = engine.summary(&summary.run).unwrap().reason.unwrap();
    assert!(reason.contains(STOPPED_TWICE), "{reason}");
    let attempts = harness.store.attempts(&summary.run).unwrap();
    assert_eq!(attempts.last().unwrap().status, AttemptStatus::Failed);
    assert!(
        !work_one(&engine, harness.store.as_ref()),
        "no worker claims it again"
    );
    assert_eq!(harness.executor.calls_of("report").len(), 2);
}

#[test]
fn a_job_stranded_before_its_step_began_is_queued_again() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let summary = engine
        .start_run(
            &account(),
            &workflow(REFUND),
            json!({"ticket_id": "T-1"}),
            cli("alice"),
        )
        .unwrap();
    let lease = claim_next(harness.store.as_ref());
    // Started, then the worker died before the attempt's first record.
    assert_eq!(harness.store.start(&lease).unwrap(), Fence::Held);
    engine.recover().unwrap();
    assert_eq!(
        harness.store.job(lease.job).unwrap().unwrap().state,
        JobState::Queued
    );
    assert!(work_one(&engine, harness.store.as_ref()));
    assert_eq!(harness.executor.calls_of("build_request").len(), 1);
    let _: RunId = summary.run;
}

/// A job its worker gave back done before its step began (its run could not be loaded, say)
/// leaves its key free: the person's retry that asks for the same attempt again gets it run,
/// never a run left running with no job anyone can claim.
#[test]
fn a_job_given_back_before_its_step_began_is_queued_again_by_the_next_decision() {
    let harness = Harness::new();
    harness.executor.then("compute", |_| {
        test_support::steps::failed_after_code_started("factor too small")
    });
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    assert!(work_one(&engine, harness.store.as_ref()));
    assert_eq!(
        engine.summary(&summary.run).unwrap().status,
        RunStatus::NeedsAttention
    );
    let retry = || {
        engine
            .retry_attempt(
                &summary.run,
                "compute",
                1,
                None,
                engine::PersonDecision {
                    who: cli("bob"),
                    door: storage::Door::Cli,
                    note: "try again".into(),
                },
            )
            .unwrap()
    };
    retry();
    // The worker fails before the attempt begins, gives the job back done, and sets the run
    // aside for a person.
    let lease = claim_next(harness.store.as_ref());
    assert_eq!((lease.step.as_str(), lease.attempt), ("compute", 2));
    harness.store.release(&lease, Release::Done).unwrap();
    engine
        .set_run_aside(&summary.run, "the secret source did not answer")
        .unwrap();
    retry();
    assert!(
        work_one(&engine, harness.store.as_ref()),
        "attempt 2 is claimable"
    );
    assert!(
        work_one(&engine, harness.store.as_ref()),
        "then the next step"
    );
    let done = engine.summary(&summary.run).unwrap();
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
}

/// An attempt left running whose job was given back without its outcome (its runner failed
/// after the step began) is judged by recovery as after a crash, never skipped as the
/// queue's: offline, it failed and runs again.
#[test]
fn an_attempt_left_running_under_a_job_given_back_is_judged_by_recovery() {
    let harness = Harness::new();
    harness
        .executor
        .then("compute", |_| panic!("the runner failed mid-step"));
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    let lease = claim_next(harness.store.as_ref());
    let held = Held {
        lease,
        store: harness.store.as_ref(),
    };
    let failed = std::panic::catch_unwind(AssertUnwindSafe(|| engine.run_job(&held)));
    assert!(failed.is_err());
    harness.store.release(&held.lease, Release::Done).unwrap();
    let report = engine.recover().unwrap();
    assert_eq!(
        report.interrupted_offline,
        vec![(summary.run.clone(), "compute".to_owned(), 1)]
    );
    assert!(harness.store.running_attempts().unwrap().is_empty());
    while work_one(&engine, harness.store.as_ref()) {}
    assert_eq!(
        engine.summary(&summary.run).unwrap().status,
        RunStatus::Succeeded
    );
}

/// A worker's hold that the store takes from it while its step runs (the worker stalled past
/// its lease): from then on it holds nothing, as the store says.
struct Losing<'a> {
    lease: Lease,
    store: &'a dyn Store,
    lost: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl JobClaim for Losing<'_> {
    fn lease(&self) -> &Lease {
        &self.lease
    }
    fn start(&self) -> Result<Fence, storage::Error> {
        self.store.start(&self.lease)
    }
    fn held(&self) -> bool {
        !self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn still_held(&self) -> bool {
        self.held()
    }
}

/// What the run's record and the workspace hold of `run`'s copy-backs.
fn revisions_of(harness: &Harness, run: &RunId) -> (usize, usize) {
    use workspace::RevisionStore as _;
    let recorded = harness
        .store
        .events(run)
        .unwrap()
        .iter()
        .filter(|event| event.kind == "workspace.revision")
        .count();
    let stored = workspace::FolderRevisions::open(&harness.revisions_dir())
        .unwrap()
        .history()
        .unwrap()
        .len();
    (recorded, stored)
}

/// Issue 39: a step's revision carries its attempt's token and lands only while the attempt
/// is current. A worker that lost its lease while its step ran copies nothing back.
#[test]
fn a_late_copy_back_of_a_worker_that_lost_its_lease_changes_nothing() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let lost = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let lost = lost.clone();
        harness.executor.then("compute", move |_| {
            // The lease is taken while the step runs.
            lost.store(true, std::sync::atomic::Ordering::SeqCst);
            let mut report = crate::support::succeeded(json!(2));
            report.file_changes = vec![crate::support::file("late.txt", "written late")];
            report
        });
    }
    let summary = start_offline(&engine);
    let lease = claim_next(harness.store.as_ref());
    let claim = Losing {
        lease,
        store: harness.store.as_ref(),
        lost,
    };
    assert_eq!(engine.run_job(&claim).unwrap(), engine::JobEnd::LeaseLost);
    assert!(!harness.work_dir().join("late.txt").exists());
    assert_eq!(revisions_of(&harness, &summary.run), (0, 0));
}

/// The same, for an attempt judged from outside while its worker still believed it held the
/// lease (its holder was reaped and recovery judged the attempt, and the worker's last word
/// from the store said it held it): the record no longer says the attempt runs, so its files do
/// not land, and the attempt that runs next is the only one whose files do.
#[test]
fn a_copy_back_of_an_attempt_recovery_already_judged_changes_nothing() {
    let harness = Harness::new();
    let engine = queue_engine(&harness);
    let judge = std::sync::Arc::new(queue_engine(&harness));
    {
        let store = harness.store.clone();
        harness.executor.then("compute", move |_| {
            // Another process reaps the holder and judges this attempt while it runs.
            let reaped = store.reap(&|_| true).unwrap();
            assert_eq!(reaped.stranded.len(), 1, "{reaped:?}");
            judge.strand(&reaped.stranded[0]).unwrap();
            let mut report = crate::support::succeeded(json!(2));
            report.file_changes = vec![crate::support::file("late.txt", "judged already")];
            report
        });
    }
    harness.executor.then("compute", |_| {
        let mut report = crate::support::succeeded(json!(2));
        report.file_changes = vec![crate::support::file("late.txt", "the next attempt")];
        report
    });
    let summary = start_offline(&engine);
    let lease = claim_next(harness.store.as_ref());
    let held = Held {
        lease,
        store: harness.store.as_ref(),
    };
    // The worker's outcome finds the attempt ended by recovery; its worker, whose lease is
    // gone, gives the job back as done (`worker::EngineJobs`).
    let late = engine.run_job(&held);
    assert!(
        matches!(
            late,
            Err(engine::Error::Storage(
                storage::Error::AttemptNotRunning { .. }
            ))
        ),
        "{late:?}"
    );
    assert!(!harness.work_dir().join("late.txt").exists());
    assert_eq!(revisions_of(&harness, &summary.run), (0, 0));
    while work_one(&engine, harness.store.as_ref()) {}
    let compute: Vec<_> = harness
        .store
        .attempts(&summary.run)
        .unwrap()
        .iter()
        .filter(|attempt| attempt.step_id == "compute")
        .map(|attempt| (attempt.attempt, attempt.status))
        .collect();
    assert_eq!(
        compute,
        [(1, AttemptStatus::Failed), (2, AttemptStatus::Succeeded)]
    );
    assert_eq!(
        std::fs::read(harness.work_dir().join("late.txt")).unwrap(),
        b"the next attempt"
    );
    assert_eq!(revisions_of(&harness, &summary.run), (1, 1));
}

/// A worker that died after its attempt's outcome was recorded (before it gave its job back)
/// did not stop while running the step: its stranded job does not count toward "stopped
/// twice", and the next worker that dies mid-step is the step's first interruption.
#[test]
fn a_worker_that_died_after_its_attempt_ended_does_not_count_as_stopping_the_step() {
    let harness = Harness::new();
    harness.executor.then("report", |_| {
        test_support::steps::failed_after_code_started("the report is late")
    });
    harness
        .executor
        .then("report", |_| panic!("the worker process died mid-step"));
    let engine = queue_engine(&harness);
    let summary = start_offline(&engine);
    assert!(work_one(&engine, harness.store.as_ref()), "compute");
    // The report's first attempt fails and is recorded; its worker dies before it gives the
    // job back.
    let lease = claim_next(harness.store.as_ref());
    let held = Held {
        lease,
        store: harness.store.as_ref(),
    };
    engine.run_job(&held).unwrap();
    let report = engine.recover().unwrap();
    assert!(report.stopped_twice.is_empty(), "{report:?}");
    assert_eq!(
        harness.store.run(&summary.run).unwrap().unwrap().status,
        RunStatus::NeedsAttention,
        "the failure waits for a person"
    );
    engine
        .retry_attempt(
            &summary.run,
            "report",
            1,
            None,
            engine::PersonDecision {
                who: cli("bob"),
                door: storage::Door::Cli,
                note: "once more".into(),
            },
        )
        .unwrap();
    // Attempt 2's worker dies mid-step: the step's first interruption, so it runs again.
    let died = std::panic::catch_unwind(AssertUnwindSafe(|| {
        work_one(&engine, harness.store.as_ref())
    }));
    assert!(died.is_err());
    let report = engine.recover().unwrap();
    assert!(report.stopped_twice.is_empty(), "{report:?}");
    assert_eq!(
        report.interrupted_offline,
        vec![(summary.run.clone(), "report".to_owned(), 2)]
    );
    assert_eq!(
        harness.store.run(&summary.run).unwrap().unwrap().status,
        RunStatus::Running
    );
}
