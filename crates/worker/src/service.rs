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
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storage::queue::{Fence, Holder, Lease, Release, SlotKind, Slots, Stranded, WorkQueue};

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

/// The most jobs of one slot kind a worker runs at once (a thread each).
pub const MAX_SLOTS: u32 = 1024;

/// The shortest wait between two claims of an idle worker: each claim is a write.
pub const MIN_POLL: Duration = Duration::from_millis(10);

/// The longest interval a worker waits for anything.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

impl Options {
    /// One sandboxed step per core (a step is bounded by its own cgroup; more would only queue
    /// on the CPU), and [`DEFAULT_MODEL_SLOTS`] agent steps.
    pub fn for_this_machine() -> Options {
        let cores = std::thread::available_parallelism()
            .map(|cores| u32::try_from(cores.get()).unwrap_or(MAX_SLOTS))
            .unwrap_or(1)
            .min(MAX_SLOTS);
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

    /// Why these options cannot work, naming the setting; `Ok` when they can.
    pub fn check(&self) -> Result<(), BadOptions> {
        let bad = |setting: &'static str, why: String| Err(BadOptions { setting, why });
        if self.slots.sandbox > MAX_SLOTS || self.slots.model > MAX_SLOTS {
            return bad("slots", format!("at most {MAX_SLOTS} of each kind"));
        }
        if self.lease < storage::queue::MIN_LEASE || self.lease > storage::queue::MAX_LEASE {
            return bad(
                "lease",
                format!(
                    "between {:?} and {:?}",
                    storage::queue::MIN_LEASE,
                    storage::queue::MAX_LEASE
                ),
            );
        }
        if self.renew_every.is_zero() || self.renew_every * 2 > self.lease {
            return bad(
                "renew_every",
                "above zero and at most half the lease, so that a late renewal still comes in \
                 time"
                    .to_owned(),
            );
        }
        for (setting, interval) in [("poll", self.poll), ("reap_every", self.reap_every)] {
            if interval < MIN_POLL || interval > MAX_INTERVAL {
                return bad(
                    setting,
                    format!("between {MIN_POLL:?} and {MAX_INTERVAL:?}"),
                );
            }
        }
        Ok(())
    }
}

/// A worker's options that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the worker's {setting} must be {why}")]
pub struct BadOptions {
    pub setting: &'static str,
    pub why: String,
}

/// Why a worker did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Options(#[from] BadOptions),
    #[error("the worker's thread could not start")]
    Thread(#[source] std::io::Error),
}

/// What the worker's jobs do (the engine's step attempts).
pub trait Jobs: Send + Sync {
    /// Runs the claimed job. It calls [`Claimed::start`] just before the step's code or agent
    /// starts (from then on the job is never re-run by itself), stops writing for the job once
    /// [`Claimed::held`] is false, gives an unstarted job back ([`Release::Unstarted`]) when
    /// [`Claimed::stopping`], and says how the job is given back.
    fn run(&self, claimed: &Claimed) -> Release;

    /// A started job whose lease ended without an outcome (its worker died or stalled): the
    /// engine's rules decide what becomes of its run; `true` once they were applied (the job
    /// is then settled), `false` to be handed it again at the next reaping. Handed on at least
    /// once: applying the rules twice must be applying them once.
    fn stranded(&self, stranded: &Stranded) -> bool;
}

/// A job this worker holds, as its [`Jobs::run`] sees it.
pub struct Claimed {
    lease: Lease,
    queue: Arc<dyn WorkQueue>,
    /// False once the store said the lease is gone.
    held: AtomicBool,
    /// By this process's clock, when the lease may have ended unless a renewal comes in: a
    /// renewal that keeps failing (the store unreachable) ends the hold here.
    held_until: Mutex<Instant>,
    stopping: Shutdown,
    /// Set before the job is given back: a renewal that then finds it gone lost nothing.
    finished: AtomicBool,
    /// How long a renewal holds the lease.
    lease_for: Duration,
}

impl Claimed {
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Marks the job started in the queue; [`Fence::Lost`] when the lease was taken from this
    /// worker or has ended (then nothing of the job may run).
    pub fn start(&self) -> Result<Fence, storage::Error> {
        if !self.held() {
            return Ok(Fence::Lost);
        }
        let fence = self.queue.start(&self.lease)?;
        if fence == Fence::Lost {
            self.held.store(false, Ordering::SeqCst);
        }
        Ok(fence)
    }

    /// Whether this worker still holds the lease, as far as it can know: the store has not
    /// said otherwise, and the last renewal's hold has not run out by this process's clock.
    pub fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst) && Instant::now() < *lock(&self.held_until)
    }

    /// Whether this worker holds the lease now, as the store says: renewed, or lost (then
    /// nothing more of the job is written). A store that cannot answer leaves
    /// [`Claimed::held`]'s answer.
    pub fn still_held(&self) -> bool {
        if !self.held() {
            return false;
        }
        let asked_at = Instant::now();
        match self.queue.renew(&self.lease, self.lease_for) {
            Ok(Some(_)) => {
                let margin = self.lease_for.saturating_sub(self.lease_for / 3);
                *lock(&self.held_until) = later(asked_at, margin);
                true
            }
            Ok(None) => {
                self.held.store(false, Ordering::SeqCst);
                false
            }
            Err(_) => self.held(),
        }
    }

    /// Whether the worker is stopping: a job not yet started gives itself back.
    pub fn stopping(&self) -> bool {
        self.stopping.is_triggered()
    }

    /// A renewal came in: held for `lease` less one renewal interval from `renewed_at`.
    fn renewed(&self, renewed_at: Instant, options: &Options) {
        let margin = options.lease.saturating_sub(options.renew_every);
        *lock(&self.held_until) = later(renewed_at, margin);
    }
}

/// Asks a worker to stop: it claims nothing more and ends once its jobs are given back.
#[derive(Clone, Default)]
pub struct Shutdown {
    inner: Arc<(Mutex<Signals>, Condvar)>,
}

/// What the worker's loop is woken by: a stop, or a job that ended (its slot is free, and the
/// job may have queued the next attempt of its run).
#[derive(Default)]
struct Signals {
    stopped: bool,
    nudged: bool,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    pub fn trigger(&self) {
        let (signals, wake) = &*self.inner;
        lock(signals).stopped = true;
        wake.notify_all();
    }

    pub fn is_triggered(&self) -> bool {
        lock(&self.inner.0).stopped
    }

    /// Wakes the loop before its poll ends: a job ended.
    fn nudge(&self) {
        let (signals, wake) = &*self.inner;
        lock(signals).nudged = true;
        wake.notify_all();
    }

    /// Waits up to `limit`, returning early when shutdown is asked or a job ended.
    fn wait(&self, limit: Duration) {
        let (signals, wake) = &*self.inner;
        let guard = lock(signals);
        let mut guard = wake
            .wait_timeout_while(guard, limit, |signals| !signals.stopped && !signals.nudged)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
        guard.nudged = false;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters, flags and instants stay consistent whatever panicked while the lock was held.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `interval` (at most [`MAX_INTERVAL`]) after `now`. An hour after any instant a process
/// reads cannot overflow; if it ever did, the time would only come early (at `now`).
fn later(now: Instant, interval: Duration) -> Instant {
    now.checked_add(interval.min(MAX_INTERVAL)).unwrap_or(now)
}

/// What a worker did, when it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Jobs it claimed and gave back.
    pub jobs: u64,
    /// Jobs whose work panicked: not given back, so their leases end and the reaper hands
    /// them on.
    pub panicked: u64,
    /// Leases it lost while working (a renewal found them taken or ended).
    pub leases_lost: u64,
    /// Queue calls that failed (each tried again at the next tick).
    pub queue_errors: u64,
    /// Stranded jobs it handed to the engine's rules and settled.
    pub settled: u64,
    /// Whether its loop itself panicked (its jobs then ended with their leases).
    pub loop_panicked: bool,
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
        self.thread.join().unwrap_or_else(|_| Report {
            loop_panicked: true,
            ..Report::default()
        })
    }
}

/// Starts a worker over `queue` as `holder`, running `jobs`, until `shutdown` is triggered.
pub fn run(
    queue: Arc<dyn WorkQueue>,
    jobs: Arc<dyn Jobs>,
    holder: Holder,
    options: Options,
    shutdown: Shutdown,
) -> Result<Handle, StartError> {
    options.check()?;
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
                next_key: 0,
                report: Report::default(),
            }
            .work()
        })
        .map_err(StartError::Thread)?;
    Ok(Handle { thread, shutdown })
}

/// A job being worked on: its slot kind, its lease as the worker shares it, its thread, and
/// whether its thread gave it back.
struct Running {
    slot: SlotKind,
    claimed: Arc<Claimed>,
    thread: Option<JoinHandle<()>>,
    done: bool,
}

/// The jobs being worked on, each under a key of this worker's own (a job claimed again by
/// this worker is another entry: its earlier thread may still be ending), and the signal a
/// job's thread gives when it ends.
#[derive(Default)]
struct Held {
    running: Mutex<HashMap<u64, Running>>,
    changed: Condvar,
}

struct Worker {
    queue: Arc<dyn WorkQueue>,
    jobs: Arc<dyn Jobs>,
    holder: Holder,
    options: Options,
    shutdown: Shutdown,
    held: Arc<Held>,
    next_key: u64,
    report: Report,
}

impl Worker {
    fn work(mut self) -> Report {
        let mut next_renewal = later(Instant::now(), self.options.renew_every);
        let mut next_reaping = Instant::now();
        while !self.shutdown.is_triggered() {
            self.collect_finished();
            let now = Instant::now();
            // Renewed before reaping: after a stall, this worker's own leases are kept, not
            // stranded by its own reaper.
            if now >= next_renewal {
                self.renew();
                next_renewal = later(now, self.options.renew_every);
            }
            if now >= next_reaping {
                self.reap();
                next_reaping = later(now, self.options.reap_every);
            }
            if self.claim_one() {
                continue;
            }
            let until_renewal = next_renewal.saturating_duration_since(Instant::now());
            self.shutdown.wait(self.options.poll.min(until_renewal));
        }
        // Shutdown: nothing more is claimed; the jobs held are finished (an unstarted one
        // gives itself back) and given back, their leases renewed meanwhile.
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
        let claimed_at = Instant::now();
        let lease = match self.queue.claim(&self.holder, free, self.options.lease) {
            Ok(Some(lease)) => lease,
            Ok(None) => return false,
            Err(_) => {
                self.report.queue_errors += 1;
                return false;
            }
        };
        let slot = lease.slot;
        let claimed = Arc::new(Claimed {
            lease,
            queue: Arc::clone(&self.queue),
            held: AtomicBool::new(true),
            held_until: Mutex::new(claimed_at),
            stopping: self.shutdown.clone(),
            finished: AtomicBool::new(false),
            lease_for: self.options.lease,
        });
        claimed.renewed(claimed_at, &self.options);
        let key = self.next_key;
        self.next_key = self.next_key.wrapping_add(1);
        // Registered before the thread starts, so that a fast job is never collected before
        // it was counted.
        lock(&self.held.running).insert(
            key,
            Running {
                slot,
                claimed: Arc::clone(&claimed),
                thread: None,
                done: false,
            },
        );
        let jobs = Arc::clone(&self.jobs);
        let queue = Arc::clone(&self.queue);
        let held = Arc::clone(&self.held);
        let thread_claimed = Arc::clone(&claimed);
        let spawned = std::thread::Builder::new()
            .name(String::from("stepward-job"))
            .spawn(move || {
                let ran = std::panic::catch_unwind(AssertUnwindSafe(|| jobs.run(&thread_claimed)));
                // A panic gives nothing back: the lease ends and the reaper hands the job on
                // (started: to the engine's rules; not started: to the queue).
                if let Ok(release) = ran {
                    thread_claimed.finished.store(true, Ordering::SeqCst);
                    // A lease lost meanwhile changes nothing here: the fence says so.
                    let _ = queue.release(thread_claimed.lease(), release);
                }
                if let Some(entry) = lock(&held.running).get_mut(&key) {
                    entry.done = ran.is_ok();
                }
                held.changed.notify_all();
                // Its slot is free, and it may have queued its run's next attempt: claim now.
                thread_claimed.stopping.nudge();
            });
        match spawned {
            Ok(handle) => {
                if let Some(entry) = lock(&self.held.running).get_mut(&key) {
                    entry.thread = Some(handle);
                }
                true
            }
            Err(_) => {
                // No thread for it: given back as never started, for another worker.
                lock(&self.held.running).remove(&key);
                let _ = self.queue.release(claimed.lease(), Release::Unstarted);
                false
            }
        }
    }

    /// Joins the jobs whose threads ended: given back, or ended by a panic.
    fn collect_finished(&mut self) {
        let finished: Vec<Running> = {
            let mut running = lock(&self.held.running);
            let ended: Vec<u64> = running
                .iter()
                .filter(|(_, job)| job.thread.as_ref().is_some_and(JoinHandle::is_finished))
                .map(|(key, _)| *key)
                .collect();
            ended
                .into_iter()
                .filter_map(|key| running.remove(&key))
                .collect()
        };
        for mut job in finished {
            if let Some(thread) = job.thread.take() {
                let _ = thread.join();
            }
            if job.done {
                self.report.jobs += 1;
            } else {
                self.report.panicked += 1;
            }
        }
    }

    /// Renews every lease held and not yet given back; one found taken or ended is marked
    /// lost for its job.
    fn renew(&mut self) {
        let held: Vec<Arc<Claimed>> = lock(&self.held.running)
            .values()
            .filter(|job| !job.done)
            .map(|job| Arc::clone(&job.claimed))
            .collect();
        for claimed in held {
            if !claimed.held.load(Ordering::SeqCst) {
                continue;
            }
            let asked_at = Instant::now();
            match self.queue.renew(claimed.lease(), self.options.lease) {
                Ok(Some(_)) => claimed.renewed(asked_at, &self.options),
                Ok(None) => {
                    claimed.held.store(false, Ordering::SeqCst);
                    // Given back meanwhile by its own thread: nothing was lost.
                    if !claimed.finished.load(Ordering::SeqCst) {
                        self.report.leases_lost += 1;
                    }
                }
                // Held until its last hold runs out (`Claimed::held`); tried again next tick.
                Err(_) => self.report.queue_errors += 1,
            }
        }
    }

    /// Ends the leases that ended (or whose holder on this host is dead) and hands stranded
    /// work to the engine's rules, settling each once they were applied.
    fn reap(&mut self) {
        let reaped = match self.queue.reap(&crate::holder::dead_here) {
            Ok(reaped) => reaped,
            Err(_) => {
                self.report.queue_errors += 1;
                return;
            }
        };
        for stranded in &reaped.stranded {
            let applied =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.jobs.stranded(stranded)))
                    .unwrap_or(false);
            if !applied {
                continue;
            }
            match self.queue.settle(stranded.job.id) {
                Ok(()) => self.report.settled += 1,
                Err(_) => self.report.queue_errors += 1,
            }
        }
    }
}
