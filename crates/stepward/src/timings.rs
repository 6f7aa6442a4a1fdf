//! Start-up costs of one command, each measured and shown (issue 13, part 2): with
//! `--startup-timings` (or `STEPWARD_STARTUP_TIMINGS=1`) every phase prints its duration to
//! stderr as it ends, so `scripts/bench` can show where a whole `stepward run` spends its time.

use std::sync::Mutex;
use std::time::Instant;

/// The clock of one command's phases. Off by default: then `mark` does nothing.
#[derive(Debug)]
pub struct Timings {
    enabled: bool,
    started: Instant,
    last: Mutex<Instant>,
}

impl Timings {
    pub fn new(enabled: bool) -> Timings {
        let now = Instant::now();
        Timings {
            enabled,
            started: now,
            last: Mutex::new(now),
        }
    }

    /// Prints how long the phase that just ended (`what`) took, and the time since `main`.
    pub fn mark(&self, what: &str) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        errln!(
            "startup-timing: {what}: {:.3} ms (at {:.3} ms)",
            now.duration_since(*last).as_secs_f64() * 1000.0,
            now.duration_since(self.started).as_secs_f64() * 1000.0
        );
        *last = now;
    }
}
