//! The outbox of approve-link mail (issue 41). Parking a run at a gate writes one row in the
//! park's own transaction ([`crate::RunStore::park`]), keyed by the run, the gate and the
//! attempt; any process that sends mail claims due rows for a while, sends, and records what
//! happened. A claim that runs out (its process died) makes the row due again: delivery is at
//! least once, and the same link twice is harmless.
//!
//! The row holds the workflow's and the step's names and the step's explanation, scrubbed,
//! never the step's inputs or outputs; the link is derived when the mail is sent, from the
//! key then in force, so it is never stored.

use redact::Redacted;

use crate::{AccountId, Error, NewAuditEntry, RunId, Timestamp};

/// The mail a park writes.
#[derive(Debug, Clone)]
pub struct NewGateMail {
    pub account: AccountId,
    /// The attempt the gate waits for: the approve link names it.
    pub attempt: u32,
    /// `{"workflow": name, "step": id, "explain": text}`, scrubbed for the run.
    pub content: Redacted<serde_json::Value>,
    /// The addresses `notify:` names, lower-cased; empty: everyone who may decide.
    pub people: Vec<String>,
    /// Seconds between reminders; `None`: no reminder.
    pub remind_after_secs: Option<u64>,
}

/// Where a row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateMailStatus {
    /// A mail (the first or a reminder) is due at `due_at`.
    Due,
    /// Everything asked for was sent.
    Done,
    /// Sending failed too often; nothing more is tried.
    GaveUp,
    /// The gate stopped waiting before the mail went out (decided, or the run ended).
    Closed,
}

impl GateMailStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateMailStatus::Due => "due",
            GateMailStatus::Done => "done",
            GateMailStatus::GaveUp => "gave_up",
            GateMailStatus::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<GateMailStatus> {
        [
            GateMailStatus::Due,
            GateMailStatus::Done,
            GateMailStatus::GaveUp,
            GateMailStatus::Closed,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// One row of the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct GateMail {
    pub id: i64,
    pub account: AccountId,
    pub run: RunId,
    pub step: String,
    pub attempt: u32,
    pub content: serde_json::Value,
    pub people: Vec<String>,
    pub remind_after_secs: Option<u64>,
    pub created_at: Timestamp,
    pub status: GateMailStatus,
    pub due_at: Option<Timestamp>,
    /// Mails sent so far: the first, then reminders.
    pub mails_sent: u32,
    /// Failed tries since the last mail went out.
    pub tries: u32,
    pub last_sent_at: Option<Timestamp>,
    /// Who the last mail went to.
    pub last_recipients: Vec<String>,
    /// Who already got the mail now due (a try that failed partway): a retry skips them.
    pub delivered: Vec<String>,
    pub last_try_at: Option<Timestamp>,
    /// Why the last try failed, in words (scrubbed).
    pub last_error: Option<String>,
    /// What the last try said beside its outcome: people `notify:` named who were left out.
    pub note: Option<String>,
}

/// What a sender records of a claimed row; its texts scrubbed with the account's values.
#[derive(Debug, Clone)]
pub enum GateMailOutcome {
    /// Mailed to `recipients`; `next_due`: when the next reminder is due (`None`: done).
    Sent {
        at: Timestamp,
        recipients: Vec<String>,
        note: Option<Redacted<String>>,
        next_due: Option<Timestamp>,
    },
    /// Not sent to everyone; `delivered`: who got it all the same (a retry skips them);
    /// `next_due`: when to try again (`None`: give up).
    Failed {
        at: Timestamp,
        delivered: Vec<String>,
        error: Redacted<String>,
        note: Option<Redacted<String>>,
        next_due: Option<Timestamp>,
    },
    /// The gate no longer waits: nothing more is sent.
    Closed { at: Timestamp },
    /// Not yet: the run parked but has not yet said it waits. Released, due again at
    /// `next_due`, no try counted.
    Later { next_due: Timestamp },
}

/// Most rows one claim takes.
pub const MAX_CLAIMED_MAIL: usize = 5;

/// The outbox. A store without one refuses to claim, so no process believes it sends.
pub trait GateMailOutbox: Send + Sync {
    /// Claims up to `limit` (at most [`MAX_CLAIMED_MAIL`]) rows due at `now` for `claimer`
    /// until `until`: rows nobody holds, or whose claim ran out. Oldest due first.
    fn claim_gate_mail(
        &self,
        claimer: &str,
        now: Timestamp,
        until: Timestamp,
        limit: usize,
    ) -> Result<Vec<GateMail>, Error>;
    /// Renews `claimer`'s claim of a row until `until`, if it still holds it at `now`: asked
    /// right before sending, so a claim that ran out sends nothing twice. `false`: not held.
    fn hold_gate_mail(
        &self,
        id: i64,
        claimer: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool, Error>;
    /// Records the outcome of a row `claimer` holds, with its audit entry (a sent or failed
    /// mail; none for a closed row) in one transaction. `false`: `claimer` no longer holds the
    /// row's claim (it ran out and another process took it), and nothing is written.
    fn record_gate_mail(
        &self,
        id: i64,
        claimer: &str,
        outcome: &GateMailOutcome,
        entry: Option<&NewAuditEntry>,
    ) -> Result<bool, Error>;
    /// The rows of a run, oldest first: what its page shows.
    fn gate_mail(&self, run: &RunId) -> Result<Vec<GateMail>, Error>;
}
