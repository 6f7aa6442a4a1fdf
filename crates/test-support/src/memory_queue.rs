//! A run queue held in memory (issue 38): the second implementation of [`WorkQueue`], so the
//! conformance suite ([`crate::queue_suite`]) is proven to run against two, and a queue for
//! tests and benchmarks whose store is not SQLite. Its clock is this process's: the store's
//! clock of a store that lives in this process.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use storage::queue::{
    Fence, Holder, JobId, JobRecord, JobState, Lease, NewJob, Reaped, Release, Slots, Stranded,
    WorkQueue, lease_millis,
};
use storage::{Error, RunId, Timestamp};

use crate::time::now_millis;

/// The queue. Every call holds one lock, as a transaction.
#[derive(Default)]
pub struct MemoryQueue {
    jobs: Mutex<Vec<JobRecord>>,
}

impl MemoryQueue {
    pub fn new() -> MemoryQueue {
        MemoryQueue::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<JobRecord>> {
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The job `lease` holds, if this claim of it still holds it (not reaped, not released).
fn held<'a>(jobs: &'a mut [JobRecord], lease: &Lease) -> Option<&'a mut JobRecord> {
    jobs.iter_mut().find(|job| {
        job.id == lease.job
            && job.claims == lease.claim
            && job.holder.as_ref() == Some(&lease.holder)
            && job.state.is_held()
    })
}

fn unexpired(job: &JobRecord) -> bool {
    job.lease_until.is_some_and(|until| until.0 > now_millis())
}

fn free(job: &mut JobRecord, state: JobState) {
    job.state = state;
    job.holder = None;
    job.lease_until = None;
}

/// Claims the queued `job` for `holder`.
fn take(job: &mut JobRecord, holder: &Holder, lease_for: Duration) -> Lease {
    job.state = JobState::Claimed;
    job.claims += 1;
    job.holder = Some(holder.clone());
    let until = Timestamp(now_millis().saturating_add(lease_millis(lease_for)));
    job.lease_until = Some(until);
    Lease {
        job: job.id,
        account: job.account.clone(),
        run: job.run.clone(),
        step: job.step.clone(),
        attempt: job.attempt,
        claim: job.claims,
        slot: job.slot,
        holder: holder.clone(),
        until,
    }
}

impl WorkQueue for MemoryQueue {
    fn enqueue(&self, new: &NewJob) -> Result<JobId, Error> {
        let mut jobs = self.lock();
        if let Some(job) = jobs
            .iter_mut()
            .find(|job| job.run == new.run && job.step == new.step && job.attempt == new.attempt)
        {
            if job.state == JobState::Done {
                job.slot = new.slot;
                free(job, JobState::Queued);
            }
            return Ok(job.id);
        }
        let id = JobId(i64::try_from(jobs.len()).unwrap_or(i64::MAX) + 1);
        jobs.push(JobRecord {
            id,
            account: new.account.clone(),
            run: new.run.clone(),
            step: new.step.clone(),
            attempt: new.attempt,
            slot: new.slot,
            state: JobState::Queued,
            claims: 0,
            holder: None,
            lease_until: None,
            enqueued_at: new.at,
        });
        Ok(id)
    }

    fn claim(
        &self,
        holder: &Holder,
        slots: Slots,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error> {
        let mut jobs = self.lock();
        let job = jobs
            .iter_mut()
            .find(|job| job.state == JobState::Queued && slots.free(job.slot) > 0);
        Ok(job.map(|job| take(job, holder, lease_for)))
    }

    fn claim_job(
        &self,
        id: JobId,
        holder: &Holder,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error> {
        let mut jobs = self.lock();
        let job = jobs
            .iter_mut()
            .find(|job| job.id == id && job.state == JobState::Queued);
        Ok(job.map(|job| take(job, holder, lease_for)))
    }

    fn start(&self, lease: &Lease) -> Result<Fence, Error> {
        let mut jobs = self.lock();
        Ok(match held(&mut jobs, lease) {
            Some(job) if job.state == JobState::Claimed && unexpired(job) => {
                job.state = JobState::Started;
                Fence::Held
            }
            _ => Fence::Lost,
        })
    }

    fn renew(&self, lease: &Lease, lease_for: Duration) -> Result<Option<Timestamp>, Error> {
        let mut jobs = self.lock();
        Ok(match held(&mut jobs, lease) {
            Some(job) if unexpired(job) => {
                let until = Timestamp(now_millis().saturating_add(lease_millis(lease_for)));
                job.lease_until = Some(until);
                Some(until)
            }
            _ => None,
        })
    }

    fn release(&self, lease: &Lease, release: Release) -> Result<Fence, Error> {
        let mut jobs = self.lock();
        Ok(match (held(&mut jobs, lease), release) {
            (Some(job), Release::Done) => {
                free(job, JobState::Done);
                Fence::Held
            }
            (Some(job), Release::Unstarted) if job.state == JobState::Claimed => {
                free(job, JobState::Queued);
                Fence::Held
            }
            _ => Fence::Lost,
        })
    }

    fn reap(&self, dead: &dyn Fn(&Holder) -> bool) -> Result<Reaped, Error> {
        let mut jobs = self.lock();
        let mut reaped = Reaped::default();
        for job in jobs.iter_mut() {
            if !job.state.is_held() {
                continue;
            }
            let ended = !unexpired(job) || job.holder.as_ref().is_some_and(dead);
            if !ended {
                continue;
            }
            if job.state == JobState::Claimed {
                free(job, JobState::Queued);
                reaped.requeued.push(job.id);
            } else {
                job.state = JobState::Stranded;
                job.lease_until = None;
            }
        }
        for job in jobs.iter().filter(|job| job.state == JobState::Stranded) {
            let before = jobs
                .iter()
                .filter(|other| {
                    other.id != job.id
                        && other.run == job.run
                        && other.step == job.step
                        && matches!(other.state, JobState::Stranded | JobState::Settled)
                })
                .count();
            reaped.stranded.push(Stranded {
                job: job.clone(),
                stranded_before: u32::try_from(before).unwrap_or(u32::MAX),
            });
        }
        Ok(reaped)
    }

    fn settle(&self, id: JobId) -> Result<(), Error> {
        let mut jobs = self.lock();
        if let Some(job) = jobs
            .iter_mut()
            .find(|job| job.id == id && job.state == JobState::Stranded)
        {
            job.state = JobState::Settled;
        }
        Ok(())
    }

    fn finish_stranded(&self, id: JobId) -> Result<bool, Error> {
        let mut jobs = self.lock();
        let job = jobs
            .iter_mut()
            .find(|job| job.id == id && job.state == JobState::Stranded);
        Ok(job.map(|job| free(job, JobState::Done)).is_some())
    }

    fn requeue_stranded(&self, id: JobId) -> Result<bool, Error> {
        let mut jobs = self.lock();
        let job = jobs
            .iter_mut()
            .find(|job| job.id == id && job.state == JobState::Stranded);
        Ok(job.map(|job| free(job, JobState::Queued)).is_some())
    }

    fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        Ok(self.lock().iter().find(|job| job.id == id).cloned())
    }

    fn jobs_of_run(&self, run: &RunId) -> Result<Vec<JobRecord>, Error> {
        Ok(self
            .lock()
            .iter()
            .filter(|job| &job.run == run)
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod conformance {
    use storage::RunId;
    use storage::queue::WorkQueue;

    use crate::memory_queue::MemoryQueue;
    use crate::queue_suite::QueueUnderTest;

    impl QueueUnderTest for MemoryQueue {
        fn queue(&self) -> &dyn WorkQueue {
            self
        }

        fn run(&self, id: &str) -> RunId {
            RunId::parse(id).unwrap()
        }
    }

    crate::queue_conformance!(MemoryQueue::new);
}
