//! The warm pool (issue 3, item 9): per class (Python version, network mode, fixed limits), up to
//! `pool_size` sandboxes built ahead of time, each its own freshly exec'd interpreter waiting
//! on the harness with the runtime loaded (never forked from a shared one: tenants must not
//! share memory layout or random state). Code, inputs, environment and the folder's copy go in
//! only after a sandbox is claimed; it serves exactly one invocation and is destroyed; a used
//! sandbox is never returned. Refills run on their own threads, off the request's path. Size 0
//! means always cold, unless the caller announces a request ahead of it
//! ([`Pool::prepare_ahead`]: one sandbox built for that request alone, nothing refilled).
//!
//! A class is first seen on a request, which runs cold and starts the refill; the next request
//! of the same class finds a warm sandbox.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::local::Shared;
use crate::local::helper::Helper;
use crate::local::run::{Prepared, Priority, SeccompMode, prepare_at, prepare_with};
use crate::{Limits, NetworkMode, PythonPin};

/// What makes two sandboxes interchangeable before they are claimed. Declared limits (memory,
/// wall and CPU time, output, `/work`) are not part of it: they are applied at the claim (see
/// [`crate::local::claim`]), so they never split the pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Class {
    pub python: PythonPin,
    pub network: NetworkMode,
    /// The limits a step cannot declare (processes, file size, `/tmp`, open files).
    pub fixed: FixedLimits,
}

/// The limits no step declares: the same for every invocation of a backend in practice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FixedLimits {
    pub pids: u32,
    pub file_size_bytes: u64,
    pub tmp_bytes: u64,
    pub open_files: u64,
}

impl Class {
    pub(crate) fn of(python: PythonPin, network: NetworkMode, limits: &Limits) -> Class {
        Class {
            python,
            network,
            fixed: FixedLimits {
                pids: limits.pids,
                file_size_bytes: limits.file_size_bytes,
                tmp_bytes: limits.tmp_bytes,
                open_files: limits.open_files,
            },
        }
    }

    /// The limits a sandbox of this class is built with: its fixed ones, and the defaults for
    /// what a step may declare.
    pub(crate) fn prepared_limits(&self) -> Limits {
        Limits {
            pids: self.fixed.pids,
            file_size_bytes: self.fixed.file_size_bytes,
            tmp_bytes: self.fixed.tmp_bytes,
            open_files: self.fixed.open_files,
            ..Limits::default()
        }
    }
}

#[derive(Default)]
struct State {
    idle: HashMap<Class, Vec<Prepared>>,
    /// Refills under way per class, so concurrent claims do not overfill.
    pending: HashMap<Class, usize>,
    /// Sandboxes built ahead of a request announced by the caller ([`Pool::prepare_ahead`]),
    /// still being built, per class: a claim of that class waits for them instead of
    /// building a second sandbox beside them.
    ahead: HashMap<Class, usize>,
    refills: Vec<JoinHandle<()>>,
    closed: bool,
}

/// The pool. Dropping it (through [`Pool::close`]) destroys every idle sandbox.
pub(crate) struct Pool {
    size: usize,
    state: Mutex<State>,
    /// Signalled whenever a sandbox built ahead is pooled or given up.
    ahead_done: Condvar,
}

/// How long a claim waits for a sandbox being built ahead of it before it builds its own:
/// far longer than a build takes, so only a build that hangs makes the request cold.
const AHEAD_WAIT: Duration = Duration::from_secs(30);

/// A sandbox announced as built ahead for `class`: given back when its building thread ends,
/// however it ends.
struct AheadDone {
    shared: Arc<Shared>,
    class: Class,
}

impl Drop for AheadDone {
    fn drop(&mut self) {
        let pool = &self.shared.pool;
        let mut state = pool.lock();
        if let Some(count) = state.ahead.get_mut(&self.class) {
            *count = count.saturating_sub(1);
        }
        drop(state);
        pool.ahead_done.notify_all();
    }
}

/// Where [`Pool::prepare_ahead`] builds its sandbox up to the helper's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanAt {
    /// On the caller's thread: when the call returns, the interpreter is loading.
    Here,
    /// On the thread that then waits for the interpreter.
    Thread,
}

impl Pool {
    pub(crate) fn new(size: usize) -> Self {
        Self {
            size,
            state: Mutex::new(State::default()),
            ahead_done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (vectors and counters), so a
        // poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a warm sandbox of this class, if one is ready, or, when one is being built
    /// ahead for this request ([`Pool::prepare_ahead`]), once it is.
    pub(crate) fn claim(&self, class: &Class) -> Option<Prepared> {
        let mut state = self.lock();
        let deadline = Instant::now()
            .checked_add(AHEAD_WAIT)
            .unwrap_or_else(Instant::now);
        loop {
            if let Some(prepared) = state.idle.get_mut(class).and_then(Vec::pop) {
                return Some(prepared);
            }
            let building = state.ahead.get(class).copied().unwrap_or(0);
            let now = Instant::now();
            if building == 0 || state.closed || now >= deadline {
                return None;
            }
            state = self
                .ahead_done
                .wait_timeout(state, deadline - now)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// Builds one sandbox of `class` now, at a request's priority, for a request the caller
    /// knows is coming (the CLI's first code step, while the engine writes the run's record):
    /// the request claims it as a warm one (or waits for it), and nothing is refilled after it
    /// unless the pool has a size. Like every pooled sandbox it holds nothing of any tenant
    /// until it is claimed, and serves one invocation. `plan_at` says where the build runs up
    /// to the helper's plan: on the caller's thread or on the thread that then waits for the
    /// interpreter.
    pub(crate) fn prepare_ahead(
        &self,
        shared: &Arc<Shared>,
        class: &Class,
        early: Option<Helper>,
        plan_at: PlanAt,
    ) {
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            *state.ahead.entry(class.clone()).or_default() += 1;
        }
        // Gives the count back and wakes the waiting claims however the build ends, also by
        // a panic or a thread that cannot start, so that no claim waits the full
        // `AHEAD_WAIT` for a build that will never come.
        let announced = AheadDone {
            shared: Arc::clone(shared),
            class: class.clone(),
        };
        // Up to its plan here when asked (the caller's thread), else all on the thread below.
        let build = |shared: &Shared, class: &Class, early: Option<Helper>| {
            prepare_with(
                shared,
                class,
                &class.prepared_limits(),
                SeccompMode::Enforced,
                Priority::Ahead,
                early,
            )
        };
        let mut early = early;
        let planned = (plan_at == PlanAt::Here).then(|| build(shared, class, early.take()));
        let thread_shared = Arc::clone(shared);
        let thread_class = class.clone();
        let spawned = std::thread::Builder::new()
            .name(String::from("stepward-ahead"))
            .spawn(move || {
                let _announced = announced;
                let shared = thread_shared;
                // A failed build leaves nothing behind: the request runs cold and reports its
                // own error if it fails again.
                let prepared = planned
                    .unwrap_or_else(|| build(&shared, &thread_class, early))
                    .and_then(|mut prepared| prepared.wait_ready().map(|()| prepared))
                    .ok();
                let mut state = shared.pool.lock();
                if let Some(prepared) = prepared
                    && !state.closed
                {
                    state.idle.entry(thread_class).or_default().push(prepared);
                }
            });
        // A thread that cannot start drops its closure: the sandbox built here is torn down
        // and the count given back.
        if let Ok(handle) = spawned {
            let mut state = self.lock();
            if state.closed {
                // The pool closed while this was being built: it no longer joins its
                // threads, so this one is waited for here.
                drop(state);
                let _ = handle.join();
            } else {
                state.refills.push(handle);
            }
        }
    }

    /// Starts building sandboxes of this class on background threads until the class has
    /// `size` idle or pending.
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
            let handle = std::thread::spawn(move || {
                // The refill takes only the CPU requests leave idle (see
                // `local::priority`); the claim restores the step's priority.
                crate::local::priority::lower_this_thread();
                // A failed refill leaves the class one short; the next request runs cold and
                // tries again, and its own error is reported there.
                let prepared = prepare_at(
                    &shared,
                    &class,
                    &class.prepared_limits(),
                    SeccompMode::Enforced,
                    Priority::Background,
                )
                .and_then(|mut prepared| prepared.wait_ready().map(|()| prepared))
                .ok();
                let mut state = shared.pool.lock();
                if let Some(count) = state.pending.get_mut(&class) {
                    *count = count.saturating_sub(1);
                }
                if let Some(prepared) = prepared
                    && !state.closed
                {
                    state.idle.entry(class).or_default().push(prepared);
                }
            });
            state.refills.push(handle);
        }
    }

    /// How many warm sandboxes wait, over all classes.
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
        self.ahead_done.notify_all();
        for handle in refills {
            let _ = handle.join();
        }
        let idle = std::mem::take(&mut self.lock().idle);
        drop(idle);
    }
}
