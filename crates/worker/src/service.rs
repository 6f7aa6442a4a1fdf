//! A worker's long-running shape (issue 37; STYLE 13): [`Options`] → [`run`]`(queue, jobs,
//! options, shutdown)` → a cheap [`Handle`]. It claims jobs of the run queue (issue 38) for the
//! slots it has free, gives each to [`Jobs::run`] on a thread of its own, renews every lease it
//! holds well before it ends, reaps the leases that ended (their holder's stranded work goes to
//! [`Jobs::stranded`]), and stops claiming at shutdown, waiting for the jobs it holds.
//!
//! What a job *does* is the caller's ([`Jobs`]: the engine's step attempt): this loop knows
//! only leases, slots and time, so the same loop runs inside `serve`, a `stepward worker`, or
//! inline for one CLI command.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storage::queue::{Fence, Holder, JobId, Lease, Release, SlotKind, Slots, Stranded, WorkQueue};

/// How a worker works. The defaults are the documented ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Jobs it runs at once, per slot kind.
    pub slots: Slots,
    /// How long each lease lasts unless renewed.
    pub lease: Duration,
    /// How often a held lease is renewed: well inside [`Options::lease`].
    pub renew_every: Duration,
    /// How long an idle worker waits before it asks the queue again.
    pub poll: Duration,
    /// How often it reaps the leases that ended.
    pub reap_every: Duration,
}

/// A lease lasts 30 s; it is renewed every 10 s, so two renewals can fail before it ends.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// Turns waiting on a model per worker, beside its sandboxed steps: an agent's step mostly
/// waits on the network, so it is bounded apart from the cores.
pub const DEFAULT_MODEL_SLOTS: u32 = 8;

impl Options {
    /// One sandboxed step per core (a step is bounded by its own cgroup; more would only queue
    /// on the CPU), and [`DEFAULT_MODEL_SLOTS`] agent steps.
    pub fn for_this_machine() -> Options {
        let cores = std::thread::available_parallelism()
            .map(|cores| u32::try_from(cores.get()).unwrap_or(u32::MAX))
            .unwrap_or(1);
        Options {
            slots: Slots {
                sandbox: cores,
                model: DEFAULT_MODEL_SLOTS,
            },
            lease: DEFAULT_LEASE,
            renew_every: DEFAULT_LEASE / 3,
            poll: Duration::from_millis(250),
            reap_every: Duration::from_secs(5),
        }
    }
}

/// What the worker's jobs do (the engine's step attempts).
pub trait Jobs: Send + Sync {
    /// Runs the claimed job. It calls [`Claimed::start`] just before the step's code or agent
    /// starts (from then on the job is never re-run by itself), stops writing for the job once
    /// [`Claimed::held`] is false, and says how the job is given back.
    fn run(&self, claimed: &Claimed) -> Release;

    /// A started job whose lease ended without an outcome (its worker died or stalled): the
    /// engine's rules decide what becomes of its run.
    fn stranded(&self, stranded: &Stranded);
}

/// A job this worker holds, as its [`Jobs::run`] sees it.
pub struct Claimed {
    lease: Lease,
    queue: Arc<dyn WorkQueue>,
    held: AtomicBool,
}

impl Claimed {
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Marks the job started in the queue; [`Fence::Lost`] when the lease was taken from this
    /// worker (then nothing of the job may run).
    pub fn start(&self) -> Result<Fence, storage::Error> {
        let fence = self.queue.start(&self.lease)?;
        if fence == Fence::Lost {
            self.held.store(false, Ordering::SeqCst);
        }
        Ok(fence)
    }

    /// Whether this worker still holds the lease, as far as its last renewal knows.
    pub fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}

/// Asks a worker to stop: it claims nothing more and ends once its jobs are given back.
#[derive(Clone, Default)]
pub struct Shutdown {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    pub fn trigger(&self) {
        let (stopped, wake) = &*self.inner;
        *lock(stopped) = true;
        wake.notify_all();
    }

    pub fn is_triggered(&self) -> bool {
        *lock(&self.inner.0)
    }

    /// Waits up to `limit`, returning early (true) when shutdown is asked.
    fn wait(&self, limit: Duration) -> bool {
        let (stopped, wake) = &*self.inner;
        let guard = lock(stopped);
        let (guard, _) = wake
            .wait_timeout_while(guard, limit, |stopped| !*stopped)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *guard
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters and flags stay consistent whatever panicked while the lock was held.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a worker did, when it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Jobs it claimed and gave back.
    pub jobs: u64,
    /// Leases it lost while working (renewal found them taken).
    pub leases_lost: u64,
    /// Queue calls that failed (each retried at the next tick).
    pub queue_errors: u64,
}

/// A running worker. Cheap: a thread handle and the shutdown it listens to.
pub struct Handle {
    thread: JoinHandle<Report>,
    shutdown: Shutdown,
}

impl Handle {
    /// Asks the worker to stop and waits until its jobs are given back.
    pub fn stop(self) -> Report {
        self.shutdown.trigger();
        self.join()
    }

    /// Waits until the worker ends (after its shutdown was triggered elsewhere).
    pub fn join(self) -> Report {
        self.thread.join().unwrap_or_default()
    }
}

/// Starts a worker over `queue` as `holder`, running `jobs`, until `shutdown` is triggered.
pub fn run(
    queue: Arc<dyn WorkQueue>,
    jobs: Arc<dyn Jobs>,
    holder: Holder,
    options: Options,
    shutdown: Shutdown,
) -> std::io::Result<Handle> {
    let loop_shutdown = shutdown.clone();
    let thread = std::thread::Builder::new()
        .name(String::from("stepward-worker"))
        .spawn(move || {
            Worker {
                queue,
                jobs,
                holder,
                options,
                shutdown: loop_shutdown,
                held: Arc::new(Held::default()),
                report: Report::default(),
            }
            .work()
        })?;
    Ok(Handle { thread, shutdown })
}

/// A job being worked on: its slot kind, its lease as the worker shares it, its thread, and
/// whether it was given back.
struct Running {
    slot: SlotKind,
    claimed: Arc<Claimed>,
    thread: Option<JoinHandle<()>>,
    done: bool,
}

/// The jobs being worked on, and the signal a job gives when it is given back.
#[derive(Default)]
struct Held {
    running: Mutex<HashMap<JobId, Running>>,
    changed: Condvar,
}

struct Worker {
    queue: Arc<dyn WorkQueue>,
    jobs: Arc<dyn Jobs>,
    holder: Holder,
    options: Options,
    shutdown: Shutdown,
    held: Arc<Held>,
    report: Report,
}

/// The longest interval a worker waits for anything: a longer setting is held to it.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// `interval` (at most [`MAX_INTERVAL`]) after `now`. An hour after any instant a process
/// reads cannot overflow; if it ever did, the tick would only come early (at `now`).
fn later(now: Instant, interval: Duration) -> Instant {
    now.checked_add(interval.min(MAX_INTERVAL)).unwrap_or(now)
}

impl Worker {
    fn work(mut self) -> Report {
        let mut next_renewal = later(Instant::now(), self.options.renew_every);
        let mut next_reaping = Instant::now();
        while !self.shutdown.is_triggered() {
            self.collect_finished();
            let now = Instant::now();
            if now >= next_reaping {
                self.reap();
                next_reaping = later(now, self.options.reap_every);
            }
            if now >= next_renewal {
                self.renew();
                next_renewal = later(now, self.options.renew_every);
            }
            if self.claim_one() {
                continue;
            }
            let until_renewal = next_renewal.saturating_duration_since(Instant::now());
            self.shutdown.wait(self.options.poll.min(until_renewal));
        }
        // Shutdown: nothing more is claimed; the jobs held are finished and given back, their
        // leases renewed meanwhile.
        loop {
            self.collect_finished();
            {
                let running = lock(&self.held.running);
                if running.is_empty() {
                    break;
                }
                if !running.values().any(|job| job.done) {
                    let _ = self
                        .held
                        .changed
                        .wait_timeout(running, self.options.renew_every);
                }
            }
            self.renew();
        }
        self.report
    }

    /// The slots free now.
    fn free(&self) -> Slots {
        let running = lock(&self.held.running);
        let busy = |kind: SlotKind| {
            u32::try_from(running.values().filter(|job| job.slot == kind).count())
                .unwrap_or(u32::MAX)
        };
        Slots {
            sandbox: self
                .options
                .slots
                .sandbox
                .saturating_sub(busy(SlotKind::Sandbox)),
            model: self
                .options
                .slots
                .model
                .saturating_sub(busy(SlotKind::Model)),
        }
    }

    /// Claims one job if a slot is free and one waits; whether it did.
    fn claim_one(&mut self) -> bool {
        let free = self.free();
        if free == Slots::default() {
            return false;
        }
        let lease = match self.queue.claim(&self.holder, free, self.options.lease) {
            Ok(Some(lease)) => lease,
            Ok(None) => return false,
            Err(_) => {
                self.report.queue_errors += 1;
                return false;
            }
        };
        let job = lease.job;
        let slot = lease.slot;
        let claimed = Arc::new(Claimed {
            lease,
            queue: Arc::clone(&self.queue),
            held: AtomicBool::new(true),
        });
        let thread_claimed = Arc::clone(&claimed);
        let jobs = Arc::clone(&self.jobs);
        let queue = Arc::clone(&self.queue);
        // Registered before the thread starts, so that a fast job is never collected before
        // it was counted.
        lock(&self.held.running).insert(
            job,
            Running {
                slot,
                claimed,
                thread: None,
                done: false,
            },
        );
        let held = Arc::clone(&self.held);
        let spawned = std::thread::Builder::new()
            .name(String::from("stepward-job"))
            .spawn(move || {
                let release = jobs.run(&thread_claimed);
                // A lease lost meanwhile changes nothing here: the fence says so.
                let _ = queue.release(thread_claimed.lease(), release);
                if let Some(entry) = lock(&held.running).get_mut(&job) {
                    entry.done = true;
                }
                held.changed.notify_all();
            });
        match spawned {
            Ok(handle) => {
                if let Some(entry) = lock(&self.held.running).get_mut(&job) {
                    entry.thread = Some(handle);
                }
                true
            }
            Err(_) => {
                // No thread for it: given back as never started, for another worker.
                if let Some(entry) = lock(&self.held.running).remove(&job) {
                    let _ = self
                        .queue
                        .release(entry.claimed.lease(), Release::Unstarted);
                }
                false
            }
        }
    }

    /// Joins the jobs whose threads ended.
    fn collect_finished(&mut self) {
        let finished: Vec<Running> = {
            let mut running = lock(&self.held.running);
            // Given back, or its thread ended without giving it back (a panic: its lease ends
            // and the reaper hands it on).
            let done: Vec<JobId> = running
                .iter()
                .filter(|(_, job)| {
                    job.done || job.thread.as_ref().is_some_and(JoinHandle::is_finished)
                })
                .map(|(id, _)| *id)
                .collect();
            done.into_iter()
                .filter_map(|id| running.remove(&id))
                .collect()
        };
        for mut job in finished {
            if let Some(thread) = job.thread.take() {
                let _ = thread.join();
            }
            self.report.jobs += 1;
        }
    }

    /// Renews every lease held; one found taken is marked lost for its job.
    fn renew(&mut self) {
        let held: Vec<Arc<Claimed>> = lock(&self.held.running)
            .values()
            .filter(|job| !job.done)
            .map(|job| Arc::clone(&job.claimed))
            .collect();
        for claimed in held {
            if !claimed.held() {
                continue;
            }
            match self.queue.renew(claimed.lease(), self.options.lease) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    claimed.held.store(false, Ordering::SeqCst);
                    self.report.leases_lost += 1;
                }
                Err(_) => self.report.queue_errors += 1,
            }
        }
    }

    /// Ends the leases that ended (or whose holder on this host is dead) and hands stranded
    /// work to the engine's rules.
    fn reap(&mut self) {
        match self.queue.reap(&crate::holder::dead_here) {
            Ok(reaped) => {
                for stranded in &reaped.stranded {
                    self.jobs.stranded(stranded);
                }
            }
            Err(_) => self.report.queue_errors += 1,
        }
    }
}
