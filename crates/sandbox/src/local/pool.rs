//! The warm pool (issue 3, item 9): per class (Python version, network mode, fixed limits), up to
//! `pool_size` sandboxes built ahead of time, each its own freshly exec'd interpreter waiting
//! on the harness with the runtime loaded (never forked from a shared one: tenants must not
//! share memory layout or random state). Code, inputs, environment and the folder's copy go in
//! only after a sandbox is claimed; it serves exactly one invocation and is destroyed; a used
//! sandbox is never returned. Refills run on their own threads, off the request's path. Size 0
//! means always cold, unless the caller announces a request ahead of it
//! ([`prepare_ahead`]: one sandbox built for that request alone, nothing refilled). How many,
//! on which thread and who gets them is [`crate::warm`]'s, shared with the gVisor backend.
//!
//! A class is first seen on a request, which runs cold and starts the refill; the next request
//! of the same class finds a warm sandbox.

use std::sync::Arc;

use crate::local::Shared;
use crate::local::helper::Helper;
use crate::local::run::{Prepared, Priority, SeccompMode, prepare_at, prepare_with};
use crate::warm::WarmPool;
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

/// The local backend's pool: warm sandboxes of a [`Class`], each prepared up to its
/// interpreter waiting on the harness.
pub(crate) type Pool = WarmPool<Class, Prepared>;

/// Where [`prepare_ahead`] builds its sandbox up to the helper's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanAt {
    /// On the caller's thread: when the call returns, the interpreter is loading.
    Here,
    /// On the thread that then waits for the interpreter.
    Thread,
}

/// Builds one sandbox of `class` now, at a request's priority, for a request the caller knows
/// is coming (the CLI's first code step, while the engine writes the run's record): the
/// request claims it as a warm one (or waits for it), and nothing is refilled after it unless
/// the pool has a size. Like every pooled sandbox it holds nothing of any tenant until it is
/// claimed, and serves one invocation. `plan_at` says where the build runs up to the helper's
/// plan: on the caller's thread or on the thread that then waits for the interpreter.
pub(crate) fn prepare_ahead(
    shared: &Arc<Shared>,
    class: &Class,
    early: Option<Helper>,
    plan_at: PlanAt,
) {
    let Some(ahead) = shared.pool.ahead(class) else {
        return;
    };
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
    // Up to its plan here when asked (the caller's thread), else all on the thread.
    let planned = (plan_at == PlanAt::Here).then(|| build(shared, class, early.take()));
    let shared = Arc::clone(shared);
    let class = class.clone();
    ahead.finish_on_thread("stepward-ahead", move || {
        // A failed build leaves nothing behind: the request runs cold and reports its own
        // error if it fails again.
        planned
            .unwrap_or_else(|| build(&shared, &class, early))
            .and_then(|mut prepared| prepared.wait_ready().map(|()| prepared))
            .ok()
    });
}

/// Starts building sandboxes of this class on background threads until the class has the
/// pool's size idle or pending.
pub(crate) fn refill(shared: &Arc<Shared>, class: &Class) {
    let build_shared = Arc::clone(shared);
    let build_class = class.clone();
    shared.pool.refill(class, move || {
        // The refill takes only the CPU requests leave idle (see `local::priority`); the
        // claim restores the step's priority.
        crate::local::priority::lower_this_thread();
        prepare_at(
            &build_shared,
            &build_class,
            &build_class.prepared_limits(),
            SeccompMode::Enforced,
            Priority::Background,
        )
        .and_then(|mut prepared| prepared.wait_ready().map(|()| prepared))
        .ok()
    });
}
