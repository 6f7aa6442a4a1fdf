//! The gvisor backend's warm pool (issue 13, part 5): per class (Python version, limits), up
//! to `pool_size` runsc sandboxes started ahead of time, each its own freshly started gVisor
//! kernel and interpreter waiting on the harness for its request. The folder's copy, code,
//! inputs and environment go in only after a sandbox is claimed; it serves exactly one
//! invocation and is destroyed; a used sandbox is never returned. Refills run on their own
//! threads, off the request's path. Size 0 means always cold.
//!
//! Unlike the local backend's, the class includes the limits: gVisor's kernel takes the
//! rlimits from the runtime spec when it starts, and cannot be changed from outside, so a
//! step with declared limits gets a sandbox started with exactly them. How many, on which
//! thread and who gets them is [`crate::warm`]'s, shared with the local backend.

use std::sync::Arc;
use std::time::Duration;

use crate::gvisor::Shared;
use crate::gvisor::run::{Started, start};
use crate::warm::WarmPool;
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

/// The gVisor backend's pool: started runsc sandboxes of a [`Class`].
pub(crate) type Pool = WarmPool<Class, Started>;

/// Starts sandboxes of this class on background threads until it has the pool's size idle
/// or pending.
pub(crate) fn refill(shared: &Arc<Shared>, class: &Class) {
    let build_shared = Arc::clone(shared);
    let build_class = class.clone();
    shared.pool.refill(class, move || {
        // A failed refill leaves the class one short; the next request runs cold and reports
        // its own error.
        build_shared
            .runtimes
            .get(build_class.python)
            .and_then(|runtime| {
                start(
                    &build_shared,
                    &build_class.limits,
                    build_class.network,
                    runtime,
                )
            })
            .and_then(|started| started.wait_ready(READY_TIMEOUT).map(|()| started))
            .ok()
    });
}
