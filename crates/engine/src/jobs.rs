//! Runs as jobs of the run queue (issue 38): a door records a person's or a key's decision
//! and queues the run's next step attempt; only a worker holding that job's lease runs it.
//!
//! A job is one step attempt: the run, the step and the attempt number it will make, which is
//! also its fencing token. The walk over a run's steps (`crate::drive`) is the same for a door
//! and for a worker; a door's walk parks, stops or ends the run where no step must run, and
//! queues the attempt where one must; a worker's walk checks that its job is still the run's
//! next attempt, marks the job started ([`JobClaim::start`]) before anything of the attempt is
//! written, runs it, and then walks on as a door does: the next attempt is queued, never run by
//! the same job.
//!
//! How the caller of a door waits ([`Driving`]): a command with no worker beside it runs the
//! run's jobs on its own thread, holding their leases as a worker does (inline); a command
//! beside a live worker follows the run in the store; the server returns at once.

use std::sync::mpsc;
use std::time::Duration;

use spec::{Step, StepBody};
use storage::queue::{Fence, Holder, JobId, Lease, NewJob, Release, SlotKind, Stranded};
use storage::{AttemptStatus, NetworkMode, RunId, RunStatus};

use crate::Error;
use crate::context::RunContext;
use crate::drive::{Resume, Walk};
use crate::engine::Engine;

/// How a door's caller waits for the run it acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driving {
    /// The caller's thread runs the run's jobs, holding their leases, until the run parks,
    /// ends or waits for a person: a command when no worker holds the data directory, and the
    /// tests.
    Inline,
    /// The caller's thread follows the run in the store while other processes' workers run
    /// its jobs: a command beside a live worker.
    Follow,
    /// The door answers at once; workers run the jobs (the server).
    Queue,
}

/// How a worker's job ended, for how it is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// Its attempt ran (and the run walked on), or its run needed nothing of it.
    Ran,
    /// It was no longer the run's next attempt (its run moved on): nothing was written.
    NotNext,
    /// Its lease ended before its step started: nothing was written; it goes back to the
    /// queue as never started.
    LeaseLost,
}

/// A job as its runner holds it: its lease, and the start that fences it.
pub trait JobClaim {
    fn lease(&self) -> &Lease;
    /// Marks the job started in the queue just before its attempt is first recorded;
    /// [`Fence::Lost`] when the lease was taken from this runner (then nothing is written).
    fn start(&self) -> Result<Fence, storage::Error>;
    /// Whether the runner still holds the lease, as far as it knows: once it does not, the
    /// engine walks no further after the attempt.
    fn held(&self) -> bool;
    /// Whether the runner holds the lease now, as the store says (a renewal): what a step's
    /// revision is fenced on (issue 39). By default, [`JobClaim::held`].
    fn still_held(&self) -> bool {
        self.held()
    }
}

/// How long an inline job's lease lasts, and how often it is renewed while the step runs.
pub const INLINE_LEASE: Duration = Duration::from_secs(30);
const INLINE_RENEW_EVERY: Duration = Duration::from_secs(10);
/// How often an inline command claims again a job whose lease ran out before its step began.
const MAX_INLINE_RECLAIMS: u32 = 3;
/// How often a follower reads the run it follows.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// The reason a run gets when the workers of two attempts of one step died running them.
pub const STOPPED_TWICE: &str = "its worker stopped twice while running this step";

/// The slot a step's attempt takes: an agent's turn waits on a model, code on a sandbox.
pub fn slot_of(step: &Step) -> SlotKind {
    match step.body() {
        StepBody::Agent { .. } => SlotKind::Model,
        StepBody::Code { .. } => SlotKind::Sandbox,
    }
}

/// An inline job: claimed by the command itself, renewed on a thread of its own while the
/// attempt runs.
struct InlineClaim<'a> {
    lease: Lease,
    queue: &'a dyn storage::queue::WorkQueue,
}

impl JobClaim for InlineClaim<'_> {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn start(&self) -> Result<Fence, storage::Error> {
        self.queue.start(&self.lease)
    }

    /// Always: nothing reaps beside a command that drives inline (it holds the engine lock),
    /// so its lease is never taken from it while it lives.
    fn held(&self) -> bool {
        true
    }

    /// As the store says: a renewal (one that fails leaves the answer `true`, as `held`).
    fn still_held(&self) -> bool {
        !matches!(self.queue.renew(&self.lease, INLINE_LEASE), Ok(None))
    }
}

impl InlineClaim<'_> {
    /// `work`, with the lease renewed every [`INLINE_RENEW_EVERY`] until it returns.
    fn renewing<R>(&self, work: impl FnOnce() -> R) -> R {
        std::thread::scope(|scope| {
            let (done, wait) = mpsc::channel::<()>();
            scope.spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    wait.recv_timeout(INLINE_RENEW_EVERY)
                {
                    // Refused: the lease ended, and recovery judges the attempt. A failed
                    // renewal (the store busy) is tried again at the next tick.
                    if let Ok(None) = self.queue.renew(&self.lease, INLINE_LEASE) {
                        break;
                    }
                }
            });
            let result = work();
            drop(done);
            result
        })
    }
}

impl Engine {
    /// Queues `step`'s attempt `attempt` of the run; the job's id (the same one when it was
    /// queued already).
    pub(crate) fn enqueue_attempt(
        &self,
        context: &RunContext,
        step: &Step,
        attempt: u32,
    ) -> Result<JobId, Error> {
        Ok(self.store.enqueue(&NewJob {
            account: context.run.account.clone(),
            run: context.run.id.clone(),
            step: step.id().to_owned(),
            attempt,
            slot: slot_of(step),
            at: self.clock.now(),
        })?)
    }

    /// Walks a run a door just acted on (queueing its next attempt if one must run), waits
    /// as [`Driving`] says, and returns where the run stands.
    pub(crate) fn drive(
        &self,
        mut context: RunContext,
        resume: Resume,
    ) -> Result<crate::RunSummary, Error> {
        let run = context.run.id.clone();
        if let Walk::Queued(job, resume) = self.walk(&mut context, resume, None)? {
            self.follow(context, job, resume)?;
        }
        self.summary(&run)
    }

    /// Waits for the run after its job `first` was queued, as [`Driving`] says.
    fn follow(&self, mut context: RunContext, first: JobId, resume: Resume) -> Result<(), Error> {
        match self.options.driving {
            Driving::Queue => return Ok(()),
            Driving::Follow => return self.watch(&context.run.id),
            Driving::Inline => {}
        }
        let mut next = Some((first, resume));
        let mut lost: u32 = 0;
        while let Some((job, resume)) = next.take() {
            let claimed = self
                .store
                .claim_job(job, &self.options.holder, INLINE_LEASE)?;
            let Some(lease) = claimed else {
                // A worker took it: follow the run as it does.
                return self.watch(&context.run.id);
            };
            let claim = InlineClaim {
                lease,
                queue: self.store.as_ref(),
            };
            let walked = claim.renewing(|| self.walk(&mut context, resume, Some(&claim)));
            // Given back whatever the walk did (a lease lost meanwhile changes nothing here):
            // one lost before its step started goes back to the queue, for a worker.
            let release = match walked {
                Ok(Walk::Lost) => Release::Unstarted,
                _ => Release::Done,
            };
            let _ = self.store.release(&claim.lease, release);
            match walked? {
                Walk::Queued(job, resume) => next = Some((job, resume)),
                // Its lease ran out before its step started (this process stalled): claimed
                // again, since no worker runs beside a command that drives inline.
                Walk::Lost => {
                    lost = lost.saturating_add(1);
                    if lost > MAX_INLINE_RECLAIMS {
                        return self.watch(&context.run.id);
                    }
                    next = Some((claim.lease.job, self.resume_from_record(&context.run.id)?));
                }
                Walk::Ended | Walk::Stale => {}
            }
        }
        Ok(())
    }

    /// Reads the run until it parks, ends or waits for a person; [`Error::NoWorker`] once
    /// the worker that runs it is gone (see [`Engine::with_worker_check`]).
    fn watch(&self, run: &RunId) -> Result<(), Error> {
        while self.goes_on(run)? {
            if let Some(alive) = &self.worker_alive
                && !alive()
            {
                // Read once more: the worker may have ended the run as it stopped.
                return match self.goes_on(run)? {
                    true => Err(Error::NoWorker { run: run.clone() }),
                    false => Ok(()),
                };
            }
            std::thread::sleep(FOLLOW_POLL);
        }
        Ok(())
    }

    /// Whether the run is still to go on by itself (running, or queued): not parked, ended
    /// or waiting for a person.
    fn goes_on(&self, run: &RunId) -> Result<bool, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        Ok(matches!(
            record.status,
            RunStatus::Running | RunStatus::Queued
        ))
    }

    /// Runs a job a worker claimed: its attempt when it is still the run's next, then the
    /// walk on (the next attempt queued, or the run parked or ended). A job whose run moved
    /// on meanwhile (decided, stopped, or its attempt made) does nothing.
    pub fn run_job(&self, claim: &dyn JobClaim) -> Result<JobEnd, Error> {
        let run = &claim.lease().run;
        if !self.goes_on(run)? {
            return Ok(JobEnd::NotNext);
        }
        let mut context = self.load_context(run)?;
        let resume = self.resume_from_record(run)?;
        Ok(match self.walk(&mut context, resume, Some(claim))? {
            Walk::Queued(..) | Walk::Ended => JobEnd::Ran,
            Walk::Stale => JobEnd::NotNext,
            Walk::Lost => JobEnd::LeaseLost,
        })
    }

    /// The engine's rules for a started job whose lease ended without its outcome (its
    /// worker died or stalled), applied once: a step that never began is queued again; a
    /// networked attempt left running is `unknown` and its run waits for a person; an
    /// offline one is `failed` and runs again, unless an earlier attempt of the step was
    /// stranded too: then the run needs attention ([`STOPPED_TWICE`]) and nothing claims it
    /// again. An attempt that ended before its worker died: the run goes on.
    pub fn strand(&self, stranded: &Stranded) -> Result<(), Error> {
        let mut to_drive = Vec::new();
        self.strand_into(
            stranded,
            &mut crate::RecoveryReport::default(),
            &mut to_drive,
        )?;
        for run in to_drive {
            self.resume_run(&run)?;
        }
        Ok(())
    }

    /// [`Engine::strand`], saying what it did in `report`; the runs to walk on are added to
    /// `to_drive`.
    pub(crate) fn strand_into(
        &self,
        stranded: &Stranded,
        report: &mut crate::RecoveryReport,
        to_drive: &mut Vec<RunId>,
    ) -> Result<(), Error> {
        let job = &stranded.job;
        let attempt = self
            .store
            .attempts(&job.run)?
            .into_iter()
            .find(|attempt| attempt.step_id == job.step && attempt.attempt == job.attempt);
        let Some(attempt) = attempt else {
            self.store.requeue_stranded(job.id)?;
            return Ok(());
        };
        if attempt.status != AttemptStatus::Running {
            // Its outcome was recorded before its worker died: it stopped nothing, and does
            // not count toward the step's strandings.
            self.store.finish_stranded(job.id)?;
            if !to_drive.contains(&job.run) {
                to_drive.push(job.run.clone());
            }
            return Ok(());
        }
        if stranded.stranded_before == 0 {
            let context = self.load_context(&job.run)?;
            return self.recover_attempt(context, &attempt, report, to_drive);
        }
        let mut context = self.load_context(&job.run)?;
        let now = match attempt.network {
            NetworkMode::PublicEgress => AttemptStatus::Unknown,
            NetworkMode::None => AttemptStatus::Failed,
        };
        let reason = format!(
            "step `{}` attempt {} did not end: {STOPPED_TWICE}; no worker runs it again until a \
             person decides",
            attempt.step_id, attempt.attempt
        );
        self.finish_from_outside(&context, &attempt, now, &reason)?;
        if !context.run.status.is_terminal() {
            self.set_status(&mut context, RunStatus::NeedsAttention, Some(&reason))?;
        }
        report
            .stopped_twice
            .push((job.run.clone(), attempt.step_id.clone(), attempt.attempt));
        Ok(())
    }

    /// How a run goes on as its record says: with the new inputs a retry put in force.
    pub(crate) fn resume_from_record(&self, run: &RunId) -> Result<Resume, Error> {
        Ok(match self.retry_inputs_in_force(run)? {
            Some((step, inputs)) => Resume::Retry {
                step,
                inputs: Some(inputs),
            },
            None => Resume::Continue,
        })
    }

    /// Sends a run whose job could not go on to a person with `why` (its running attempts
    /// finished as after a crash: `unknown` with network, `failed` without).
    pub fn set_run_aside(&self, run: &RunId, why: &str) -> Result<(), Error> {
        self.set_aside(run, why, &mut crate::RecoveryReport::default())
    }

    /// Queues the next attempt of a run that is running but has no job queued or held (a
    /// crash between two steps, an interrupted offline attempt): its walk from its record.
    pub(crate) fn resume_run(&self, run: &RunId) -> Result<(), Error> {
        let open = self
            .store
            .jobs_of_run(run)?
            .iter()
            .any(|job| job.state.is_open());
        if open {
            return Ok(());
        }
        let mut context = self.load_context(run)?;
        if !matches!(context.run.status, RunStatus::Running | RunStatus::Queued) {
            return Ok(());
        }
        let resume = self.resume_from_record(run)?;
        if let Walk::Queued(job, resume) = self.walk(&mut context, resume, None)?
            && self.options.driving == Driving::Inline
        {
            self.follow(context, job, resume)?;
        }
        Ok(())
    }
}

/// The holder an engine's inline jobs are held as when the binary names none: this process,
/// on no host anyone can judge (its leases end only by the store's clock).
pub fn unnamed_holder() -> Holder {
    Holder {
        host: String::new(),
        boot: String::new(),
        pid: std::process::id(),
        process_start: 0,
    }
}
