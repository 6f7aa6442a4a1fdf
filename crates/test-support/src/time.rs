//! Clocks and run ids that move only as the test says, so two runs of a test write the same
//! rows.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use engine::{Clock, IdSource};
use storage::{RunId, Timestamp};

/// This process's clock in milliseconds since the epoch (the store's clock of a store in
/// this process, and what a test compares a store's lease ends with).
pub fn now_millis() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis(),
    )
    .unwrap_or(i64::MAX)
}

/// Where [`CountingClock`] starts: 2023-11-14, in milliseconds.
pub const COUNTING_FROM: i64 = 1_700_000_000_000;

/// Time that moves one millisecond per reading, from [`COUNTING_FROM`].
#[derive(Default)]
pub struct CountingClock(AtomicI64);

impl Clock for CountingClock {
    fn now(&self) -> Timestamp {
        Timestamp(COUNTING_FROM + self.0.fetch_add(1, Ordering::SeqCst))
    }
}

/// Time that moves only when the test advances it.
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// Stopped at `millis` since the epoch.
    pub fn at(millis: i64) -> ManualClock {
        ManualClock(AtomicI64::new(millis))
    }

    pub fn advance(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// `run-1`, `run-2`, ... continuing across engines that share it.
#[derive(Default)]
pub struct CountingIds(AtomicU64);

impl IdSource for CountingIds {
    fn new_run_id(&self) -> RunId {
        RunId::parse(&format!(
            "run-{}",
            self.0.fetch_add(1, Ordering::SeqCst) + 1
        ))
        .unwrap()
    }
}
