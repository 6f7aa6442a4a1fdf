//! Work off the request's path, on one background thread per backend. Teardown: once every
//! process of a sandbox is dead and its copy-back is collected, the observation goes back to
//! the caller at once; what is left (the exiting helper, the empty cgroups, the scratch
//! folder, the slot) is handed to this thread, which drops it in the order the guards are
//! declared. Teardown still always happens: the backend's drop waits for the reaper to
//! finish, and the start-up sweep covers a platform that crashed in between. Other small
//! jobs (spawning the next spare helper) run here too.

use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Whatever a sandbox left behind; its drop is the teardown.
pub(crate) type Leftovers = Box<dyn Send>;

/// A job for the reaper's thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The background thread and the channel to it.
pub(crate) struct Reaper {
    sender: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in a teardown leaves an Option behind, which is still consistent.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Reaper {
    /// Starts the reaper's thread. Where no thread can be started, teardown stays on the
    /// caller's path (see [`Reaper::dispose`]).
    pub(crate) fn start() -> Self {
        let (sender, receiver) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(String::from("stepward-reaper"))
            .spawn(move || {
                // Ends when every sender is gone and the queue is drained.
                for job in receiver {
                    job();
                }
            })
            .ok();
        let sender = thread.as_ref().map(|_| sender);
        Self {
            sender: Mutex::new(sender),
            thread: Mutex::new(thread),
        }
    }

    /// Tears `leftovers` down in the background, or right here when the reaper is closed.
    pub(crate) fn dispose(&self, leftovers: Leftovers) {
        if let Some(refused) = self.later(Box::new(move || drop(leftovers))) {
            refused();
        }
    }

    /// Runs `job` in the background; hands it back when the reaper is closed.
    pub(crate) fn later(&self, job: Job) -> Option<Job> {
        match lock(&self.sender).as_ref() {
            Some(sender) => sender.send(job).err().map(|error| error.0),
            None => Some(job),
        }
    }

    /// Waits until everything handed over so far is done; later leftovers are torn down on
    /// the caller's path, later jobs are handed back.
    pub(crate) fn close(&self) {
        drop(lock(&self.sender).take());
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.close();
    }
}
