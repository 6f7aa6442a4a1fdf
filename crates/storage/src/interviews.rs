//! The interviews in progress (the assistant interviewing a person about a workflow), kept in
//! the store so that no process holds them alone and no account's load can end another's:
//! each account has its own quota of interviews and of bytes, each person their own count,
//! and an interview has a bound of its own. The state is everything the interview holds,
//! scrubbed with the account's values before it is written (G16).

use crate::error::Error;
use crate::types::{AccountId, Timestamp};

/// One interview, as stored and read back.
#[derive(Debug, Clone, PartialEq)]
pub struct InterviewRecord {
    pub id: String,
    pub account: AccountId,
    /// The person who started it; only they see it.
    pub person: String,
    /// Everything the interview holds (its conversation, what it showed), as it was written:
    /// scrubbed with the account's values.
    pub state: serde_json::Value,
    pub created_at: Timestamp,
    pub last_used: Timestamp,
}

/// An interview's state to write: scrubbed for its account (the store checks the scope).
#[derive(Debug, Clone, PartialEq)]
pub struct InterviewWrite {
    pub id: String,
    pub account: AccountId,
    pub person: String,
    pub state: redact::Redacted<serde_json::Value>,
    pub at: Timestamp,
}

/// The bounds of interviews, each held by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterviewQuota {
    /// Open interviews of one person.
    pub per_person: usize,
    /// Open interviews of one account.
    pub per_account: usize,
    /// Bytes of one interview's state.
    pub bytes_per_interview: usize,
    /// Bytes of every interview of one account together.
    pub bytes_per_account: usize,
    /// An interview unused since before this ends (milliseconds).
    pub idle_millis: i64,
}

impl Default for InterviewQuota {
    fn default() -> Self {
        InterviewQuota {
            per_person: 4,
            per_account: 32,
            bytes_per_interview: 1024 * 1024,
            bytes_per_account: 16 * 1024 * 1024,
            idle_millis: 24 * 60 * 60 * 1000,
        }
    }
}

/// Why an interview was not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterviewRefusal {
    /// The person holds the most open interviews they may.
    PersonFull { held: usize, max: usize },
    /// The account holds the most open interviews it may.
    AccountFull { held: usize, max: usize },
    /// The interview's state is larger than one may be.
    TooLarge { bytes: usize, max: usize },
    /// The account's interviews together would be larger than they may be.
    AccountBytes { bytes: usize, max: usize },
}

/// The interviews of every account.
pub trait InterviewStore: Send + Sync {
    /// Keeps a new interview, first ending the account's interviews idle past the quota's
    /// time; refused (nothing kept) past any of the quota's bounds, never by ending another
    /// interview.
    fn start_interview(
        &self,
        interview: &InterviewWrite,
        quota: &InterviewQuota,
    ) -> Result<Result<(), InterviewRefusal>, Error>;
    /// The interview `id` of `account`, when it is open and not idle past the quota's time.
    fn interview(
        &self,
        account: &AccountId,
        id: &str,
        quota: &InterviewQuota,
        now: Timestamp,
    ) -> Result<Option<InterviewRecord>, Error>;
    /// Replaces the state and last use of an open interview; refused past the quota's bytes;
    /// `Ok(Ok(false))` when it is gone.
    fn update_interview(
        &self,
        interview: &InterviewWrite,
        quota: &InterviewQuota,
    ) -> Result<Result<bool, InterviewRefusal>, Error>;
    /// The open interviews of `person` in `account`, most recently used first.
    fn interviews_of(
        &self,
        account: &AccountId,
        person: &str,
        quota: &InterviewQuota,
        now: Timestamp,
    ) -> Result<Vec<InterviewRecord>, Error>;
    /// Ends it; `false` when there was none.
    fn end_interview(&self, account: &AccountId, id: &str) -> Result<bool, Error>;
}
