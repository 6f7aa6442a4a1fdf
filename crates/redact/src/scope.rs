//! `Scope`: whose values a [`crate::Redacted`] value was scrubbed with, so a writer for one
//! run or account can refuse a value scrubbed for another.

use std::fmt;
use std::sync::Arc;

use ids::{AccountId, RunId};

/// The record a scrubbed value may be written to: one run's, or an account's records that
/// belong to no run (a vault write's audit entry, a sign-in).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A run's records (its row, attempts, events, decisions, the audit entries of the run).
    Run(Arc<str>),
    /// An account's records that belong to no run.
    Account(Arc<str>),
}

impl Scope {
    /// The scope of one run's records.
    pub fn run(run_id: &RunId) -> Scope {
        Scope::Run(Arc::from(run_id.as_str()))
    }

    /// The scope of an account's records that belong to no run.
    pub fn account(account_id: &AccountId) -> Scope {
        Scope::Account(Arc::from(account_id.as_str()))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Run(run) => write!(formatter, "run {run}"),
            Scope::Account(account) => write!(formatter, "account {account}"),
        }
    }
}
