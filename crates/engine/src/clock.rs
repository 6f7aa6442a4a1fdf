//! Time and ids, behind traits so tests and replays are deterministic.

use std::time::{SystemTime, UNIX_EPOCH};

use storage::{RunId, Timestamp};

/// The engine's only source of time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The engine's only source of new run ids.
pub trait IdSource: Send + Sync {
    fn new_run_id(&self) -> RunId;
}

/// Wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp(millis)
    }
}

/// `run_` followed by 16 random bytes in hex: unguessable, so a run id alone grants nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomRunIds;

impl IdSource for RandomRunIds {
    fn new_run_id(&self) -> RunId {
        let mut bytes = [0_u8; 16];
        // The OS random source does not fail on Linux after boot; if it ever did, the time and
        // process id still give an id that is unique on this box (ids are not secrets).
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos())
                .unwrap_or(0);
            bytes = (nanos ^ (u128::from(std::process::id()) << 96)).to_be_bytes();
        }
        RunId::from_random(bytes)
    }
}
