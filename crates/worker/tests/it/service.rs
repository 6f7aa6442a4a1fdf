//! The worker's loop over a real run queue (issue 38; its shape is issue 37's): every queued
//! job runs once across workers, a worker holds no more jobs than its slots, a lease is kept
//! while its job runs longer than the lease, a dead holder's started work is handed to the
//! engine's rules at once, and a stopping worker claims nothing more and gives its jobs back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use storage::queue::{
    Fence, Holder, JobId, JobState, NewJob, Release, SlotKind, Slots, Stranded, WorkQueue,
};
use storage::{RunId, Timestamp};
use test_support::store::TempStore;
use worker::{Claimed, Jobs, Options, Shutdown};

use crate::support::{ACCOUNT, account};

/// Jobs that sleep, counting how many run at once and how often each ran.
#[derive(Default)]
struct Sleepy {
    takes: Duration,
    now: AtomicUsize,
    most: AtomicUsize,
    ran: Mutex<HashMap<JobId, u32>>,
    fences: Mutex<Vec<Fence>>,
    /// Jobs that found their lease gone while they ran (asserted on the test's thread: a
    /// panic in a job's thread is the worker's to catch).
    lost_while_running: Mutex<Vec<JobId>>,
    stranded: Mutex<Vec<Stranded>>,
    /// Whether applying the engine's rules fails (the job is then handed on again).
    rules_fail: std::sync::atomic::AtomicBool,
    /// Whether a job panics after it started.
    panics: std::sync::atomic::AtomicBool,
}

impl Jobs for Sleepy {
    fn run(&self, claimed: &Claimed) -> Release {
        let fence = claimed.start().unwrap();
        self.fences.lock().unwrap().push(fence);
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(self.takes);
        *self
            .ran
            .lock()
            .unwrap()
            .entry(claimed.lease().job)
            .or_default() += 1;
        self.now.fetch_sub(1, Ordering::SeqCst);
        if !claimed.held() {
            self.lost_while_running
                .lock()
                .unwrap()
                .push(claimed.lease().job);
        }
        if self.panics.load(Ordering::SeqCst) {
            panic!("the step's runtime broke");
        }
        Release::Done
    }

    fn stranded(&self, stranded: &Stranded) -> bool {
        self.stranded.lock().unwrap().push(stranded.clone());
        !self.rules_fail.load(Ordering::SeqCst)
    }
}

fn options(sandbox: u32, model: u32) -> Options {
    Options {
        slots: Slots { sandbox, model },
        lease: Duration::from_millis(300),
        renew_every: Duration::from_millis(100),
        poll: Duration::from_millis(20),
        reap_every: Duration::from_millis(50),
    }
}

/// This process: several workers of one process share their holder (as `serve --workers N`
/// does); each claim still fences its own lease.
fn holder() -> Holder {
    worker::holder::this_process().unwrap()
}

/// A store with one run and `count` queued jobs of `slot`.
fn queued(count: u32, slot: SlotKind) -> (TempStore, RunId, Vec<JobId>) {
    let temp = TempStore::with_account(ACCOUNT, "local");
    let run = test_support::runs::create_run(temp.store.as_ref(), &account(), "run-1");
    let jobs = (0..count)
        .map(|step| {
            temp.store
                .enqueue(&NewJob {
                    account: account(),
                    run: run.clone(),
                    step: format!("s{step}"),
                    attempt: 1,
                    slot,
                    at: Timestamp(2),
                })
                .unwrap()
        })
        .collect();
    (temp, run, jobs)
}

fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_queued_job_runs_once_across_two_workers_within_their_slots() {
    let (temp, run, ids) = queued(12, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs = Arc::new(Sleepy {
        takes: Duration::from_millis(40),
        ..Sleepy::default()
    });
    let workers: Vec<_> = (1..=2)
        .map(|_| {
            worker::run(
                queue.clone(),
                jobs.clone(),
                holder(),
                options(2, 0),
                Shutdown::new(),
            )
            .unwrap()
        })
        .collect();
    wait_until("every job ran", Duration::from_secs(20), || {
        jobs.ran.lock().unwrap().len() == ids.len()
    });
    let reports: Vec<_> = workers.into_iter().map(worker::Handle::stop).collect();
    assert_eq!(reports.iter().map(|report| report.jobs).sum::<u64>(), 12);
    assert!(jobs.ran.lock().unwrap().values().all(|runs| *runs == 1));
    assert!(
        jobs.most.load(Ordering::SeqCst) <= 4,
        "two workers of two slots each"
    );
    assert!(
        jobs.fences
            .lock()
            .unwrap()
            .iter()
            .all(|fence| *fence == Fence::Held)
    );
    assert!(jobs.lost_while_running.lock().unwrap().is_empty());
    let stored = temp.store.jobs_of_run(&run).unwrap();
    assert!(stored.iter().all(|job| job.state == JobState::Done));
}

#[test]
fn a_worker_takes_only_the_slot_kinds_it_has_room_for() {
    let (temp, _run, _ids) = queued(3, SlotKind::Model);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs = Arc::new(Sleepy::default());
    let sandbox_only = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(2, 0),
        Shutdown::new(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        jobs.ran.lock().unwrap().is_empty(),
        "agent work waits for a model slot"
    );
    sandbox_only.stop();
    let model = worker::run(
        queue,
        jobs.clone(),
        holder(),
        options(0, 1),
        Shutdown::new(),
    )
    .unwrap();
    wait_until("the agent jobs ran", Duration::from_secs(10), || {
        jobs.ran.lock().unwrap().len() == 3
    });
    model.stop();
    assert_eq!(jobs.most.load(Ordering::SeqCst), 1, "one model slot");
}

#[test]
fn a_job_longer_than_its_lease_keeps_it_and_no_other_worker_takes_it() {
    let (temp, _run, ids) = queued(1, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs = Arc::new(Sleepy {
        takes: Duration::from_millis(1200),
        ..Sleepy::default()
    });
    let first = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(1, 0),
        Shutdown::new(),
    )
    .unwrap();
    wait_until("the job started", Duration::from_secs(5), || {
        jobs.now.load(Ordering::SeqCst) == 1
    });
    let second = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(1, 0),
        Shutdown::new(),
    )
    .unwrap();
    wait_until("the job ran", Duration::from_secs(10), || {
        jobs.ran.lock().unwrap().len() == 1
    });
    let report = first.stop();
    second.stop();
    assert_eq!(report.leases_lost, 0);
    assert!(
        jobs.lost_while_running.lock().unwrap().is_empty(),
        "the lease was kept while the job ran past it"
    );
    assert_eq!(jobs.ran.lock().unwrap().get(&ids[0]), Some(&1), "run once");
    assert!(jobs.stranded.lock().unwrap().is_empty());
    assert_eq!(
        temp.store.job(ids[0]).unwrap().unwrap().state,
        JobState::Done
    );
}

#[test]
fn a_started_job_of_a_dead_holder_on_this_host_is_handed_on_at_once() {
    let (temp, _run, ids) = queued(1, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let mut ended = std::process::Command::new("/bin/true").spawn().unwrap();
    let dead = Holder {
        pid: ended.id(),
        ..holder()
    };
    ended.wait().unwrap();
    let lease = queue
        .claim(&dead, options(1, 0).slots, Duration::from_secs(3600))
        .unwrap()
        .unwrap();
    assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
    let jobs = Arc::new(Sleepy::default());
    jobs.rules_fail.store(true, Ordering::SeqCst);
    let live = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(1, 0),
        Shutdown::new(),
    )
    .unwrap();
    wait_until(
        "the stranded job was handed on",
        Duration::from_secs(5),
        || !jobs.stranded.lock().unwrap().is_empty(),
    );
    // Within seconds, not after its hour-long lease; while the rules fail it is handed on
    // again at every reaping, and settled once they apply.
    wait_until("handed on again", Duration::from_secs(5), || {
        jobs.stranded.lock().unwrap().len() >= 2
    });
    assert_eq!(
        queue.job(ids[0]).unwrap().unwrap().state,
        JobState::Stranded
    );
    jobs.rules_fail.store(false, Ordering::SeqCst);
    wait_until("settled", Duration::from_secs(5), || {
        queue.job(ids[0]).unwrap().unwrap().state == JobState::Settled
    });
    let report = live.stop();
    assert_eq!(report.settled, 1);
    let stranded = jobs.stranded.lock().unwrap();
    assert_eq!(stranded[0].job.id, ids[0]);
    assert!(
        jobs.ran.lock().unwrap().is_empty(),
        "a started job is never run again"
    );
}

#[test]
fn a_stopping_worker_claims_nothing_more_and_finishes_what_it_holds() {
    let (temp, _run, ids) = queued(3, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs = Arc::new(Sleepy {
        takes: Duration::from_millis(300),
        ..Sleepy::default()
    });
    let shutdown = Shutdown::new();
    let handle = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(1, 0),
        shutdown.clone(),
    )
    .unwrap();
    wait_until("the first job started", Duration::from_secs(5), || {
        jobs.now.load(Ordering::SeqCst) == 1
    });
    shutdown.trigger();
    let report = handle.join();
    assert_eq!(report.jobs, 1, "only the job it held");
    assert_eq!(jobs.ran.lock().unwrap().len(), 1);
    let waiting = ids
        .iter()
        .filter(|id| queue.job(**id).unwrap().unwrap().state == JobState::Queued)
        .count();
    assert_eq!(waiting, 2, "the others wait for the next worker");
}

#[test]
fn a_job_that_panics_after_it_started_is_handed_to_the_engines_rules_when_its_lease_ends() {
    let (temp, _run, ids) = queued(1, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs = Arc::new(Sleepy::default());
    jobs.panics.store(true, Ordering::SeqCst);
    let handle = worker::run(
        queue.clone(),
        jobs.clone(),
        holder(),
        options(1, 0),
        Shutdown::new(),
    )
    .unwrap();
    wait_until("handed to the rules", Duration::from_secs(10), || {
        !jobs.stranded.lock().unwrap().is_empty()
    });
    let report = handle.stop();
    assert_eq!(report.panicked, 1, "{report:?}");
    assert_eq!(report.jobs, 0);
    assert_eq!(
        jobs.ran.lock().unwrap().get(&ids[0]),
        Some(&1),
        "never run again"
    );
    assert_eq!(queue.job(ids[0]).unwrap().unwrap().state, JobState::Settled);
}

#[test]
fn options_that_cannot_work_are_refused_naming_the_setting() {
    let (temp, _run, _ids) = queued(0, SlotKind::Sandbox);
    let queue: Arc<dyn WorkQueue> = temp.store.clone();
    let jobs: Arc<dyn Jobs> = Arc::new(Sleepy::default());
    let cases = [
        (
            "renew_every",
            Options {
                renew_every: Duration::from_millis(200),
                ..options(1, 0)
            },
        ),
        (
            "poll",
            Options {
                poll: Duration::ZERO,
                ..options(1, 0)
            },
        ),
        (
            "slots",
            Options {
                slots: Slots {
                    sandbox: worker::MAX_SLOTS + 1,
                    model: 0,
                },
                ..options(1, 0)
            },
        ),
        (
            "lease",
            Options {
                lease: Duration::from_secs(7200),
                renew_every: Duration::from_secs(60),
                ..options(1, 0)
            },
        ),
    ];
    for (setting, bad) in cases {
        let refused = worker::run(queue.clone(), jobs.clone(), holder(), bad, Shutdown::new())
            .err()
            .unwrap_or_else(|| panic!("{setting} was taken"));
        assert!(refused.to_string().contains(setting), "{refused}");
    }
    assert!(
        Options::for_this_machine().check().is_ok(),
        "the defaults work"
    );
}
