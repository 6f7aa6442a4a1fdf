//! The engine's step attempts as the worker's jobs (issue 38): what `stepward serve` and
//! `stepward worker` hand [`crate::run`].

use std::sync::Arc;

use engine::{Engine, JobClaim, JobEnd};
use storage::queue::{Fence, Lease, Release, Stranded};

use crate::service::{Claimed, Jobs};

/// Runs each claimed job as the engine's next attempt of its run.
pub struct EngineJobs {
    pub engine: Arc<Engine>,
}

impl JobClaim for Claimed {
    fn lease(&self) -> &Lease {
        Claimed::lease(self)
    }

    fn start(&self) -> Result<Fence, storage::Error> {
        Claimed::start(self)
    }

    fn held(&self) -> bool {
        Claimed::held(self)
    }

    fn still_held(&self) -> bool {
        Claimed::still_held(self)
    }
}

impl Jobs for EngineJobs {
    fn run(&self, claimed: &Claimed) -> Release {
        if claimed.stopping() {
            return Release::Unstarted;
        }
        match self.engine.run_job(claimed) {
            Ok(JobEnd::Ran | JobEnd::NotNext) => Release::Done,
            // Never started: back to the queue for a worker that holds it.
            Ok(JobEnd::LeaseLost) => Release::Unstarted,
            // A worker that lost its lease writes nothing more: its run is the rules' now.
            Err(_) if !claimed.held() => Release::Done,
            Err(error) => {
                // A run whose job cannot go on (its record does not load, a write failed)
                // waits for a person with the reason, as recovery sets such a run aside; a
                // store that cannot be written leaves it to the next recovery.
                let _ = self
                    .engine
                    .set_run_aside(&claimed.lease().run, &engine::with_causes(&error));
                Release::Done
            }
        }
    }

    fn stranded(&self, stranded: &Stranded) -> bool {
        self.engine.strand(stranded).is_ok()
    }
}
