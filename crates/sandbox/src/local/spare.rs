//! One spare jail helper, exec'd ahead of time and waiting for a plan, so a cold sandbox does
//! not wait for the platform's fork and exec nor for the helper's own start (dynamic loading,
//! runtime set-up): about two milliseconds of a cold step. The spare holds nothing of any
//! tenant (no plan, no namespace, no cgroup, an empty environment); it becomes one sandbox's
//! helper only when a request takes it (and, for `none`, wakes it to make the sandbox's network
//! namespace) and its plan is written to it, and is replaced on the reaper's thread. When its
//! lifeline closes (the backend drops it, or the platform dies) it exits without a sandbox.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use crate::local::helper::Helper;

#[derive(Default)]
struct State {
    helper: Option<Helper>,
    closed: bool,
}

/// The spare helper's slot.
pub(crate) struct SpareHelper {
    program: (PathBuf, Vec<OsString>),
    state: Mutex<State>,
}

impl SpareHelper {
    pub(crate) fn new(program: (PathBuf, Vec<OsString>)) -> Self {
        Self {
            program,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // An Option and a flag stay consistent whatever panicked while the lock was held.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The waiting spare's pid, if one waits.
    #[cfg(feature = "test-controls")]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.lock().helper.as_ref().map(Helper::pid)
    }

    /// Takes the spare, if one is waiting.
    pub(crate) fn take(&self) -> Option<Helper> {
        self.lock().helper.take()
    }

    /// Spawns a spare if none waits (a failure leaves the slot empty: the next sandbox spawns
    /// its own helper, and reports the error if it fails again).
    pub(crate) fn fill(&self) {
        {
            let state = self.lock();
            if state.closed || state.helper.is_some() {
                return;
            }
        }
        let Ok(helper) = Helper::spawn_idle(&self.program) else {
            return;
        };
        let unused = {
            let mut state = self.lock();
            if !state.closed && state.helper.is_none() {
                state.helper = Some(helper);
                None
            } else {
                Some(helper)
            }
        };
        // Otherwise the new helper ends here, after the lock.
        if let Some(helper) = unused {
            helper.discard_idle();
        }
    }

    /// No more spares; the waiting one is ended (it holds nothing: no plan, no namespace).
    pub(crate) fn close(&self) {
        let helper = {
            let mut state = self.lock();
            state.closed = true;
            state.helper.take()
        };
        if let Some(helper) = helper {
            helper.discard_idle();
        }
    }
}
