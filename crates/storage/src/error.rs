//! The one error type of the storage traits, shared by every backend.

use crate::types::{RunId, RunStatus};

/// What a storage call can fail with. Backends map their driver errors into [`Error::Backend`]
/// and keep the other variants for conditions every backend must detect the same way.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `Redacted` value scrubbed for another run (or account) was handed to a writer.
    #[error("a value scrubbed for {found} was written to a record of {expected}")]
    WrongRedactor {
        expected: redact::Scope,
        found: redact::Scope,
    },
    /// The run does not exist.
    #[error("no run with id {run}")]
    UnknownRun { run: RunId },
    /// A row with this key already exists (a run id, an account id, an attempt).
    #[error("{what} already exists")]
    AlreadyExists { what: String },
    /// The attempt to finish does not exist or is no longer running.
    #[error("run {run} step {step} attempt {attempt} is not running")]
    AttemptNotRunning {
        run: RunId,
        step: String,
        attempt: u32,
    },
    /// A gate was already decided; a gate is decided exactly once (G23).
    #[error("the gate {step} of run {run} was already decided")]
    AlreadyDecided { run: RunId, step: String },
    /// A status change the run's current status does not allow.
    #[error("run {run} is {current}, which cannot become {wanted}")]
    StatusConflict {
        run: RunId,
        current: RunStatus,
        wanted: RunStatus,
    },
    /// A value the store refuses to hold (a setting out of its range).
    #[error("{what}")]
    Invalid { what: String },
    /// A stored value that this version cannot read (an unknown status name, bad JSON).
    #[error("stored {what} is unreadable: {detail}")]
    Corrupt { what: &'static str, detail: String },
    /// The database or its driver failed.
    #[error("storage backend failed during {operation}")]
    Backend {
        operation: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Checks that a scrubbed value belongs to the record it is written to: a run's records take
/// values scrubbed for that run, an account's other records values scrubbed for the account.
pub fn check_scope<T>(expected: &redact::Scope, value: &redact::Redacted<T>) -> Result<(), Error> {
    if value.scope() == expected {
        Ok(())
    } else {
        Err(Error::WrongRedactor {
            expected: expected.clone(),
            found: value.scope().clone(),
        })
    }
}
