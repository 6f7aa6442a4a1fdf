//! The crate's one error type: every variant names the run or account it is about.

use crate::secret::SourceError;

/// Everything that can go wrong while collecting secrets or checking a redacted value.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The secret source could not hand over what the run asked for.
    #[error("run {run_id} (account {account_id}): the secret source refused: {source}")]
    Source {
        run_id: String,
        account_id: String,
        #[source]
        source: SourceError,
    },
    /// A run id was empty; a secret set without a run cannot be checked by writers.
    #[error("a run id must not be empty (account {account_id})")]
    EmptyRunId { account_id: String },
    /// A run id used the prefix reserved for account redactors, so writers could mistake one for the other.
    #[error("run id {run_id} uses the prefix reserved for account redactors")]
    ReservedRunId { run_id: String },
    /// A value scrubbed for one run was handed to a writer for another run.
    #[error("a value scrubbed for run {found} was handed to a writer for run {expected}")]
    ForeignRun { expected: String, found: String },
    /// The multi-pattern matcher refused the patterns (for example, too many of them).
    #[error("the scrubbing automaton for {run_id} could not be built: {source}")]
    Automaton {
        run_id: String,
        #[source]
        source: aho_corasick::BuildError,
    },
}
