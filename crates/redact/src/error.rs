//! The crate's one error type: every variant names the run or account it is about.

use crate::scope::Scope;
use crate::secret::SourceError;
use ids::AccountId;

/// Everything that can go wrong while collecting secrets or checking a redacted value.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The secret source could not hand over what the run asked for.
    #[error("the secret source could not give the values of account {account_id}")]
    Source {
        account_id: AccountId,
        #[source]
        source: SourceError,
    },
    /// A value scrubbed for one run (or account) was handed to a writer for another.
    #[error("a value scrubbed for {found} was handed to a writer for {expected}")]
    ForeignScope { expected: Scope, found: Scope },
    /// The multi-pattern matcher refused the patterns (for example, too many of them).
    #[error("the scrubbing automaton for {label} could not be built")]
    Automaton {
        label: String,
        #[source]
        source: aho_corasick::BuildError,
    },
}
