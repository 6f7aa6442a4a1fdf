//! One global bound on password hashing: argon2id takes 19 MiB and a core's worth of time for
//! each check, so the server runs at most as many at once as it has cores.
//!
//! A check that finds every permit taken waits in a short queue (a few per permit, for a
//! bounded time); beyond that, or after the wait, it is answered at once with
//! [`Error::PasswordWorkBusy`] (503 with `Retry-After`), never queued without end: memory and
//! threads stay bounded whatever arrives, and a flood costs the flooder a quick refusal.
//!
//! The checks run on threads of their own, as many as there are permits, never on the shared
//! blocking pool, and each thread hashes in one [`PasswordMemory`] it keeps: memory for
//! password work is then allocated once per thread and never grows. (Fresh 19 MiB buffers per
//! hash are kept by the allocator per thread arena after they are freed: a first version of
//! this bound, with fresh buffers, still grew by 274 MiB under the flood test.)

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use auth::PasswordMemory;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::Error;

/// How many password checks run at once, and how many may wait for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswordHashing {
    /// Checks that run at once (each holds 19 MiB while it runs). The default is the number
    /// of cores; 0 runs none (every check is answered busy).
    pub concurrent: usize,
    /// Checks that may wait for a turn; more are answered busy at once.
    pub waiting: usize,
    /// How long a check waits for a turn before it is answered busy, in milliseconds.
    pub wait_millis: u64,
}

impl PasswordHashing {
    /// As many checks at once as this machine has cores, four waiting per core for at most a
    /// second.
    pub fn for_this_machine() -> PasswordHashing {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        PasswordHashing {
            concurrent: cores,
            waiting: cores * 4,
            wait_millis: 1_000,
        }
    }
}

type Job = Box<dyn FnOnce(&mut PasswordMemory) + Send + 'static>;

/// The permits, the queue and the threads, shared by every request. The threads end when this
/// is dropped (their channel closes).
pub(crate) struct PasswordWork {
    settings: PasswordHashing,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    jobs: Sender<Job>,
}

/// One password thread: runs jobs until the channel closes. A job that panics is contained
/// (its caller sees the answer channel close), so the thread stays.
fn work_loop(jobs: &Mutex<Receiver<Job>>) {
    let mut memory = PasswordMemory::new();
    loop {
        let next = jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recv();
        let Ok(job) = next else { return };
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut memory)));
    }
}

/// A place in the queue, given back however the wait ends (also when the request is dropped).
struct InQueue<'a>(&'a AtomicUsize);

impl Drop for InQueue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordWork {
    pub(crate) fn new(settings: PasswordHashing) -> PasswordWork {
        let (jobs, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut started = 0;
        for index in 0..settings.concurrent {
            let receiver = receiver.clone();
            match std::thread::Builder::new()
                .name(format!("password-{index}"))
                .spawn(move || work_loop(&receiver))
            {
                Ok(_) => started += 1,
                Err(error) => {
                    tracing::error!(%error, "cannot start a password thread; running with fewer");
                }
            }
        }
        PasswordWork {
            settings,
            // One permit per thread that runs: a permit always finds a thread.
            permits: Arc::new(Semaphore::new(started)),
            waiting: AtomicUsize::new(0),
            jobs,
        }
    }

    fn busy(operation: &'static str) -> Error {
        Error::PasswordWorkBusy {
            operation,
            retry_after_millis: 1_000,
        }
    }

    async fn permit(&self, operation: &'static str) -> Result<OwnedSemaphorePermit, Error> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let queued = self.waiting.fetch_add(1, Ordering::AcqRel);
        let _place = InQueue(&self.waiting);
        if queued >= self.settings.waiting {
            return Err(PasswordWork::busy(operation));
        }
        let wait = Duration::from_millis(self.settings.wait_millis);
        match tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(PasswordWork::busy(operation)),
        }
    }

    /// Runs `work` (a password hash or check) on a password thread once a permit is free; the
    /// permit is held until `work` has returned, also when the request is gone by then.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        operation: &'static str,
        work: impl FnOnce(&mut PasswordMemory) -> T + Send + 'static,
    ) -> Result<T, Error> {
        let permit = self.permit(operation).await?;
        let (answer, result) = oneshot::channel();
        let job: Job = Box::new(move |memory| {
            let outcome = work(memory);
            drop(permit);
            let _ = answer.send(outcome);
        });
        self.jobs
            .send(job)
            .map_err(|_| PasswordWork::busy(operation))?;
        result
            .await
            .map_err(|_| Error::PasswordWorkFailed { operation })
    }
}
