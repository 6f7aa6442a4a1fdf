//! The run queue (issue 38): work is claimed, not called. Whoever starts, decides or retries a
//! run records it and enqueues a job; a worker claims the job under a lease, says when its
//! step starts, renews the lease while it works, and releases it with the outcome.
//!
//! Designed for workers on many hosts that share only the store (DESIGN §5):
//! - every expiry is computed from the store's clock, never the worker's;
//! - a lease carries its fencing token (for a step, the attempt number) and its claim number:
//!   a worker whose lease was taken from it (expired and reaped, then claimed again) is told
//!   [`Fence::Lost`] by every later call, and its writes change nothing;
//! - a holder names its host, the host's boot and its process (pid and start time), so a
//!   process on the same host can prove a holder dead at once instead of waiting out the lease;
//! - a job claimed and never started goes back to the queue when its lease ends; a job started
//!   and never finished is handed to the caller ([`Reaped::stranded`]), which applies the
//!   engine's rules (a networked step's outcome is unknown; an offline one follows its failure
//!   policy): nothing re-runs a started step by itself.
//!
//! SQLite implements it across the processes of one host (`BEGIN IMMEDIATE`); a Postgres store
//! implements the same trait (`FOR UPDATE SKIP LOCKED`) and passes the same conformance suite.

use std::time::Duration;

use crate::error::Error;
use crate::types::{AccountId, RunId, Timestamp, UnknownName};

/// The longest lease a caller may ask for: a worker renews well before its lease ends, so a
/// long lease only delays the recovery of a dead worker's work.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// The shortest: under it, a renewal could not arrive in time on a loaded machine.
pub const MIN_LEASE: Duration = Duration::from_millis(100);

/// A worker process that holds leases.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Holder {
    /// The machine (its machine id, or its name where it has none).
    pub host: String,
    /// The machine's boot: a pid of another boot is another process.
    pub boot: String,
    pub pid: u32,
    /// The process's start time (clock ticks after boot): a reused pid has another.
    pub process_start: u64,
}

/// The slots a job takes in its worker: a sandboxed step (bounded by cores and memory), or an
/// agent's step, which mostly waits on a model (bounded separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotKind {
    Sandbox,
    Model,
}

impl SlotKind {
    pub const ALL: [SlotKind; 2] = [SlotKind::Sandbox, SlotKind::Model];

    /// The stored name: stable across versions.
    pub fn as_str(self) -> &'static str {
        match self {
            SlotKind::Sandbox => "sandbox",
            SlotKind::Model => "model",
        }
    }

    pub fn parse(name: &str) -> Result<SlotKind, UnknownName> {
        SlotKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownName {
                vocabulary: "slot kind",
                name: name.to_owned(),
            })
    }
}

impl std::str::FromStr for SlotKind {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        SlotKind::parse(name)
    }
}

/// How many jobs of each slot kind a worker can take now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slots {
    pub sandbox: u32,
    pub model: u32,
}

impl Slots {
    pub fn free(&self, kind: SlotKind) -> u32 {
        match kind {
            SlotKind::Sandbox => self.sandbox,
            SlotKind::Model => self.model,
        }
    }
}

/// A job's place in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting for a worker.
    Queued,
    /// Held by a worker that has not started its step.
    Claimed,
    /// Its step started under the lease.
    Started,
    /// Released with an outcome.
    Done,
    /// Started, and its lease ended without an outcome: handed to the engine's rules at every
    /// reaping until the engine says it applied them ([`WorkQueue::settle`]).
    Stranded,
    /// Stranded, and the engine applied its rules.
    Settled,
}

impl JobState {
    pub const ALL: [JobState; 6] = [
        JobState::Queued,
        JobState::Claimed,
        JobState::Started,
        JobState::Done,
        JobState::Stranded,
        JobState::Settled,
    ];

    /// Whether a worker holds the job under a lease (claimed or started).
    pub fn is_held(self) -> bool {
        matches!(self, JobState::Claimed | JobState::Started)
    }

    /// Whether the job is still to run or running: queued, or held.
    pub fn is_open(self) -> bool {
        self == JobState::Queued || self.is_held()
    }

    /// The stored name: stable across versions.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Claimed => "claimed",
            JobState::Started => "started",
            JobState::Done => "done",
            JobState::Stranded => "stranded",
            JobState::Settled => "settled",
        }
    }

    pub fn parse(name: &str) -> Result<JobState, UnknownName> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == name)
            .ok_or_else(|| UnknownName {
                vocabulary: "job state",
                name: name.to_owned(),
            })
    }
}

impl std::str::FromStr for JobState {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        JobState::parse(name)
    }
}

/// A job's id, given by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub i64);

/// A step attempt to run: the only kind of job today (later an index build, a mail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub account: AccountId,
    pub run: RunId,
    /// The step's id (without its gate mark).
    pub step: String,
    /// The attempt it runs: the fencing token every write of its worker carries.
    pub attempt: u32,
    pub slot: SlotKind,
    pub at: Timestamp,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub id: JobId,
    pub account: AccountId,
    pub run: RunId,
    pub step: String,
    pub attempt: u32,
    pub slot: SlotKind,
    pub state: JobState,
    /// How many times it was claimed.
    pub claims: u32,
    /// Its holder while claimed or started.
    pub holder: Option<Holder>,
    /// When its lease ends, by the store's clock (milliseconds since the epoch).
    pub lease_until: Option<Timestamp>,
    pub enqueued_at: Timestamp,
}

/// A worker's hold on one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job: JobId,
    pub account: AccountId,
    pub run: RunId,
    pub step: String,
    /// The fencing token: the attempt number.
    pub attempt: u32,
    /// Which claim of the job this is: a lease of an earlier claim is fenced off.
    pub claim: u32,
    pub slot: SlotKind,
    pub holder: Holder,
    /// When it ends unless renewed, by the store's clock.
    pub until: Timestamp,
}

/// Whether a call under a lease still held it: a lost lease changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    Held,
    Lost,
}

/// How a worker gives a job back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// The job is over (its step ended, parked, or was refused).
    Done,
    /// Not started after all (the worker is stopping): back to the queue, as if never claimed.
    Unstarted,
}

/// What a reaping found: leases that ended (expired, or their holder is dead).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaped {
    /// Claimed and never started: queued again.
    pub requeued: Vec<JobId>,
    /// Started and never finished, now or at an earlier reaping, and not yet settled: the
    /// caller applies the engine's rules to each (with how often this step was stranded
    /// before), then [`WorkQueue::settle`]s it. Handed on at least once: two reapers may both
    /// see one, so the rules are applied so that twice is once.
    pub stranded: Vec<Stranded>,
}

/// A started job whose lease ended without an outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranded {
    pub job: JobRecord,
    /// Other jobs of the same run and step that were stranded too: a step whose workers keep
    /// dying is not claimed a third time.
    pub stranded_before: u32,
}

/// The run queue. All synchronous, `&self`, `Send + Sync`, like every storage trait.
pub trait WorkQueue: Send + Sync {
    /// Queues a step attempt. The same run, step and attempt queued twice is one job (the
    /// second call returns the first's id): a door that retries its own request queues nothing
    /// more. A job of that key that is done is queued again: the engine asks for an attempt
    /// only while the attempt has no record, so that job ended without making it (its run had
    /// moved on, or its worker failed before the step began).
    fn enqueue(&self, job: &NewJob) -> Result<JobId, Error>;

    /// The oldest queued job whose slot kind `slots` has room for, now held by `holder` for
    /// `lease_for` (clamped to [`MIN_LEASE`]..=[`MAX_LEASE`]) from the store's clock; `None`
    /// when there is none. Two callers never hold the same job.
    fn claim(
        &self,
        holder: &Holder,
        slots: Slots,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error>;

    /// [`WorkQueue::claim`] of the one job `job`, whatever its slot kind: `None` unless it is
    /// queued. What a command driving its own run inline claims (the job it just queued).
    fn claim_job(
        &self,
        job: JobId,
        holder: &Holder,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error>;

    /// Marks the lease's step as started: from now on its end is the engine's to judge, never
    /// a re-run. [`Fence::Lost`] when the lease is no longer held or has ended by the store's
    /// clock (then the job, never started, goes back to the queue at the next reaping).
    fn start(&self, lease: &Lease) -> Result<Fence, Error>;

    /// Extends the lease by `lease_for` from the store's clock; the new end, or `None` when
    /// it is no longer held or has already ended (the worker must stop writing for this job).
    fn renew(&self, lease: &Lease, lease_for: Duration) -> Result<Option<Timestamp>, Error>;

    /// Gives the job back. [`Fence::Lost`] when the lease was no longer held: nothing changed.
    fn release(&self, lease: &Lease, release: Release) -> Result<Fence, Error>;

    /// Ends every lease that expired by the store's clock, or whose holder `dead` proves dead
    /// (a process of this host that no longer runs): claimed jobs are queued again, started
    /// ones become [`JobState::Stranded`]; every stranded job not yet settled is returned.
    fn reap(&self, dead: &dyn Fn(&Holder) -> bool) -> Result<Reaped, Error>;

    /// The engine applied its rules to a stranded job: it is not handed on again.
    fn settle(&self, job: JobId) -> Result<(), Error>;

    /// A stranded job whose step never began (its worker died between the start and the
    /// step's first record) goes back to the queue, as if never started; whether it did (it
    /// was stranded).
    fn requeue_stranded(&self, job: JobId) -> Result<bool, Error>;

    /// A stranded job whose attempt had ended before its worker died (its outcome recorded,
    /// the job not given back) is done: it stopped nothing, and never counts toward a step's
    /// strandings. Whether it was stranded.
    fn finish_stranded(&self, job: JobId) -> Result<bool, Error>;

    /// One job, as stored.
    fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error>;

    /// The jobs of a run, oldest first.
    fn jobs_of_run(&self, run: &RunId) -> Result<Vec<JobRecord>, Error>;
}

/// `lease_for` within [`MIN_LEASE`]..=[`MAX_LEASE`], in whole milliseconds.
pub fn lease_millis(lease_for: Duration) -> i64 {
    let clamped = lease_for.clamp(MIN_LEASE, MAX_LEASE);
    i64::try_from(clamped.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_read_back_and_are_stable() {
        for kind in SlotKind::ALL {
            assert_eq!(SlotKind::parse(kind.as_str()).unwrap(), kind);
        }
        for state in JobState::ALL {
            assert_eq!(JobState::parse(state.as_str()).unwrap(), state);
        }
        let names: Vec<&str> = JobState::ALL.iter().map(|state| state.as_str()).collect();
        assert_eq!(
            names,
            [
                "queued", "claimed", "started", "done", "stranded", "settled"
            ],
            "stored names never change"
        );
        assert!(JobState::parse("running").is_err());
    }

    #[test]
    fn a_lease_is_held_between_its_bounds() {
        assert_eq!(lease_millis(Duration::ZERO), 100);
        assert_eq!(lease_millis(Duration::from_secs(30)), 30_000);
        assert_eq!(lease_millis(Duration::from_secs(86_400)), 3_600_000);
    }
}
