//! The gvisor backend's warm pool (issue 13, part 5): per class (Python version, limits), up
//! to `pool_size` runsc sandboxes started ahead of time, each its own freshly started gVisor
//! kernel and interpreter waiting on the harness for its request. The folder's copy, code,
//! inputs and environment go in only after a sandbox is claimed; it serves exactly one
//! invocation and is destroyed; a used sandbox is never returned. Refills run on their own
//! threads, off the request's path. Size 0 means always cold.
//!
//! Unlike the local backend's, the class includes the limits: gVisor's kernel takes the
//! rlimits from the runtime spec when it starts, and cannot be changed from outside, so a
//! step with declared limits gets a sandbox started with exactly them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::gvisor::Shared;
use crate::gvisor::run::{Started, start};
use crate::{Limits, NetworkMode, PythonPin};

/// How long a pooled sandbox may take to load its runtime.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What makes two warm sandboxes interchangeable before they are claimed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Class {
    pub python: PythonPin,
    /// A public_egress sandbox waits with its own pre-built, never-used network.
    pub network: NetworkMode,
    pub limits: Limits,
}

#[derive(Default)]
struct State {
    idle: HashMap<Class, Vec<Started>>,
    pending: HashMap<Class, usize>,
    refills: Vec<JoinHandle<()>>,
    closed: bool,
}

pub(crate) struct Pool {
    size: usize,
    state: Mutex<State>,
}

impl Pool {
    pub(crate) fn new(size: usize) -> Pool {
        Pool {
            size,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Vectors and counters stay consistent whatever panicked while the lock was held.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a warm sandbox of this class, if one is ready.
    pub(crate) fn claim(&self, class: &Class) -> Option<Started> {
        if self.size == 0 {
            return None;
        }
        self.lock().idle.get_mut(class).and_then(Vec::pop)
    }

    /// Starts sandboxes of this class on background threads until it has `size` idle or
    /// pending.
    pub(crate) fn refill(&self, shared: &Arc<Shared>, class: &Class) {
        if self.size == 0 {
            return;
        }
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.refills.retain(|handle| !handle.is_finished());
        let idle = state.idle.get(class).map_or(0, Vec::len);
        let pending = state.pending.get(class).copied().unwrap_or(0);
        for _ in idle + pending..self.size {
            *state.pending.entry(class.clone()).or_default() += 1;
            let shared = Arc::clone(shared);
            let class = class.clone();
            state.refills.push(std::thread::spawn(move || {
                // A failed refill leaves the class one short; the next request runs cold and
                // reports its own error.
                let started = shared
                    .runtimes
                    .get(class.python)
                    .and_then(|runtime| start(&shared, &class.limits, class.network, runtime))
                    .and_then(|started| started.wait_ready(READY_TIMEOUT).map(|()| started))
                    .ok();
                let mut state = shared.pool.lock();
                if let Some(count) = state.pending.get_mut(&class) {
                    *count = count.saturating_sub(1);
                }
                if let Some(started) = started
                    && !state.closed
                {
                    state.idle.entry(class).or_default().push(started);
                }
            }));
        }
    }

    pub(crate) fn idle_count(&self) -> usize {
        self.lock().idle.values().map(Vec::len).sum()
    }

    /// Stops refilling, waits for refills under way, and destroys every idle sandbox.
    pub(crate) fn close(&self) {
        let refills = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.refills)
        };
        for handle in refills {
            let _ = handle.join();
        }
        let idle = std::mem::take(&mut self.lock().idle);
        drop(idle);
    }
}
