//! The storage traits. All synchronous, `&self`, `Send + Sync`: a backend serialises its own
//! writes.

use redact::Redacted;

use crate::error::Error;
use crate::records::{
    Account, AttemptFinish, AttemptRecord, AuditEntry, AuditFilter, AuditPage, AuditPosition,
    DecisionRecord, EventRecord, NewAttempt, NewAuditEntry, NewDecision, NewEvent, NewRun,
    ParkedRecord, RunCursor, RunFilter, RunRecord, RunsPage, Tallied,
};
use crate::types::{AccountId, RunId, RunStatus, Timestamp};

/// Accounts (tenants).
pub trait AccountStore: Send + Sync {
    /// Creates an account; an existing id is [`Error::AlreadyExists`].
    fn create_account(&self, account: &Account) -> Result<(), Error>;
    fn account(&self, id: &AccountId) -> Result<Option<Account>, Error>;
    fn accounts(&self) -> Result<Vec<Account>, Error>;
    /// Returns the account with this id, creating it first if there is none (the CLI's local
    /// account, created on first use). Atomic: two callers get the same account.
    fn ensure_account(&self, account: &Account) -> Result<Account, Error>;
    /// How many times the supervisor may retry one step of one run of this account (G15);
    /// `None` when the account set no number (the engine's default holds).
    fn supervisor_retries(&self, account: &AccountId) -> Result<Option<u32>, Error>;
    /// Sets (or with `None` clears) that number; more than 5 is [`Error::Invalid`]. `false`
    /// when there is no such account.
    fn set_supervisor_retries(
        &self,
        account: &AccountId,
        retries: Option<u32>,
    ) -> Result<bool, Error>;
}

/// Runs, their step attempts and their parked state.
///
/// Every method that changes a run's state takes the event that records the change and
/// appends it to the run's log in the same transaction: a crash keeps both or neither.
pub trait RunStore: Send + Sync {
    fn create_run(&self, run: &NewRun, event: &NewEvent) -> Result<(), Error>;
    fn run(&self, id: &RunId) -> Result<Option<RunRecord>, Error>;
    /// The runs of an account, newest first.
    fn runs(&self, account: &AccountId) -> Result<Vec<RunRecord>, Error>;
    /// One page of the account's runs that `filter` keeps, newest first, after `after` (the
    /// last run of the page before). A backend reads at most `limit + 1` rows (keyset
    /// pagination, so a page costs the same however deep it is); this default reads them all
    /// and is for stores that hold few runs.
    fn runs_page(
        &self,
        account: &AccountId,
        filter: &RunFilter,
        after: Option<&RunCursor>,
        limit: usize,
    ) -> Result<RunsPage, Error> {
        let limit = limit.max(1);
        let mut kept: Vec<RunRecord> = self
            .runs(account)?
            .into_iter()
            .filter(|run| filter.keeps(run))
            .filter(|run| {
                after.is_none_or(|cursor| {
                    (run.created_at, &run.id) < (cursor.created_at, &cursor.id)
                })
            })
            .collect();
        kept.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(RunsPage::from_read(kept, limit))
    }
    /// Every run in one of these statuses (recovery looks for `running` and
    /// `waiting_approval`).
    fn runs_with_status(&self, statuses: &[RunStatus]) -> Result<Vec<RunRecord>, Error>;
    /// Sets the status, durably. A terminal run cannot change again
    /// ([`Error::StatusConflict`]).
    fn set_run_status(
        &self,
        id: &RunId,
        status: RunStatus,
        at: Timestamp,
        event: &NewEvent,
    ) -> Result<(), Error>;
    /// Replaces the workflow a run runs from here on (an accepted repair, G9), with the event
    /// that records it, in one transaction. Earlier attempts and their outputs stay.
    fn replace_run_workflow(
        &self,
        id: &RunId,
        source: &Redacted<String>,
        hash: &crate::types::Sha256Hex,
        event: &NewEvent,
    ) -> Result<(), Error>;
    /// Records "this attempt is running, with this network mode", durably (synced to disk)
    /// before it returns: the engine starts the sandbox only after this (G14).
    fn begin_attempt(&self, attempt: &NewAttempt, event: &NewEvent) -> Result<(), Error>;
    /// Ends a running attempt; an attempt that is not running is
    /// [`Error::AttemptNotRunning`].
    fn finish_attempt(
        &self,
        run: &RunId,
        step_id: &str,
        attempt: u32,
        finish: &AttemptFinish,
        event: &NewEvent,
    ) -> Result<(), Error>;
    /// The attempts of a run in the order they began.
    fn attempts(&self, run: &RunId) -> Result<Vec<AttemptRecord>, Error>;
    /// Every attempt of every run still marked running (what a crash left).
    fn running_attempts(&self) -> Result<Vec<AttemptRecord>, Error>;
    /// Stores the parked state of a run at a gate, replacing any earlier one, and writes its
    /// approve-link `mail` to the outbox ([`crate::mail`]), once per gate and attempt, in the
    /// same transaction. The engine builds the state with credential values stripped and
    /// names kept (G18).
    fn park(
        &self,
        run: &RunId,
        step_id: &str,
        state: &Redacted<serde_json::Value>,
        at: Timestamp,
        event: &NewEvent,
        mail: &crate::mail::NewGateMail,
    ) -> Result<(), Error>;
    fn parked(&self, run: &RunId) -> Result<Option<ParkedRecord>, Error>;
    fn clear_parked(&self, run: &RunId) -> Result<(), Error>;
}

/// The append-only event log of each run.
pub trait EventLog: Send + Sync {
    /// Appends an event and returns its sequence number: the run's previous one plus one,
    /// starting at 1, without gaps.
    fn append(&self, run: &RunId, event: &NewEvent) -> Result<u64, Error>;
    /// The run's events in sequence order.
    fn events(&self, run: &RunId) -> Result<Vec<EventRecord>, Error>;
    /// At most `limit` of the run's events after sequence number `after`, in sequence order:
    /// what a reader that has seen up to `after` has not seen yet (a run page's live stream).
    /// A backend reads only those rows, however long the run's log is; this default reads
    /// every event and is for stores that hold few.
    fn events_after(
        &self,
        run: &RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, Error> {
        Ok(self
            .events(run)?
            .into_iter()
            .filter(|event| event.seq > after)
            .take(limit)
            .collect())
    }
    /// The sequence number of the run's newest event (0 when it has none). A backend finds it
    /// without reading the log; this default reads it.
    fn last_event_seq(&self, run: &RunId) -> Result<u64, Error> {
        Ok(self.events(run)?.last().map_or(0, |event| event.seq))
    }
}

/// Decisions of people (and the supervisor) on runs.
pub trait DecisionStore: Send + Sync {
    /// Records a decision durably, with its event and its audit entry in the same
    /// transaction: when the entry cannot be appended nothing is recorded and the error is
    /// returned, so a decision is never taken without its entry. A second approve/reject of the
    /// same gate (run, step, attempt) is [`Error::AlreadyDecided`], also when two deciders race.
    fn record_decision(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
    ) -> Result<DecisionRecord, Error>;
    /// [`DecisionStore::record_decision`] of a decision that moves the run (a person's retry
    /// or stop): in the same transaction the run goes from one of `from` to `to`, with
    /// `status_event` after the decision's. Refused ([`Error::StatusConflict`]) with nothing
    /// recorded when the run is no longer in one of `from`: two doors in two processes that
    /// both saw the run wait for a person record one decision.
    fn record_decision_moving(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
        from: &[RunStatus],
        to: RunStatus,
        status_event: &NewEvent,
    ) -> Result<DecisionRecord, Error>;
    /// The run's decisions, oldest first.
    fn decisions(&self, run: &RunId) -> Result<Vec<DecisionRecord>, Error>;
}

/// The hash-chained audit log: one chain per account.
pub trait AuditLog: Send + Sync {
    /// Appends an entry chained to the last one of its account, durably.
    fn append_audit(&self, entry: &NewAuditEntry) -> Result<AuditEntry, Error>;
    /// A tallied entry: the first call with `tally` (a key that names what is counted and its
    /// window, such as a key, its route class and the minute) in the entry's account appends
    /// `entry` with a count of `uses`; every later call adds `uses` to that entry's `count`
    /// (and moves its `last_at`). So a flood of uses grows the log by one entry per tally
    /// key, and the first use is in the log before the call returns.
    fn tally_audit_uses(
        &self,
        entry: &NewAuditEntry,
        tally: &str,
        uses: u64,
    ) -> Result<Tallied, Error>;
    /// [`AuditLog::tally_audit_uses`] for one use.
    fn tally_audit(&self, entry: &NewAuditEntry, tally: &str) -> Result<Tallied, Error> {
        self.tally_audit_uses(entry, tally, 1)
    }
    /// Every entry of every account, each account's in sequence order.
    fn audit_entries(&self) -> Result<Vec<AuditEntry>, Error>;
    /// The entries whose action is one of `actions`, in the order of [`AuditLog::audit_entries`]
    /// (what the recovery of interrupted workspace writes reads at every start). A backend
    /// reads them through an index; this default reads every entry.
    fn audit_entries_of_actions(&self, actions: &[&str]) -> Result<Vec<AuditEntry>, Error> {
        Ok(self
            .audit_entries()?
            .into_iter()
            .filter(|entry| actions.contains(&entry.action.as_str()))
            .collect())
    }
    /// One page of the account's entries that `filter` keeps, newest first (by time, then
    /// sequence number). A backend reads at most `limit + 1` rows (keyset pagination, so a
    /// page costs the same however deep it is); this default reads every entry and is for
    /// stores that hold few.
    fn audit_page(
        &self,
        account: &AccountId,
        filter: &AuditFilter,
        position: AuditPosition,
        limit: usize,
    ) -> Result<AuditPage, Error> {
        let limit = limit.max(1);
        let mut kept: Vec<AuditEntry> = self
            .audit_entries()?
            .into_iter()
            .filter(|entry| entry.account == *account && filter.keeps(entry))
            .filter(|entry| {
                let here = crate::AuditCursor::of(entry);
                match position {
                    AuditPosition::Newest => true,
                    AuditPosition::OlderThan(cursor) => here < cursor,
                    AuditPosition::NewerThan(cursor) => here > cursor,
                }
            })
            .collect();
        kept.sort_by_key(crate::AuditCursor::of);
        if !matches!(position, AuditPosition::NewerThan(_)) {
            kept.reverse();
        }
        kept.truncate(limit + 1);
        Ok(AuditPage::from_read(kept, position, limit))
    }
    /// Checks one account's chain; see [`crate::ChainCheck`].
    fn verify_account_audit(
        &self,
        account: &AccountId,
    ) -> Result<Result<u64, crate::AuditBreak>, Error> {
        let verification = crate::verify_audit_entries(&self.audit_entries()?);
        Ok(verification
            .chains
            .into_iter()
            .find(|(chain, _)| chain == account)
            .map_or(Ok(0), |(_, result)| result))
    }
    /// Checks every account's chain and the old shared chain.
    fn verify_audit(&self) -> Result<crate::AuditVerification, Error> {
        Ok(crate::verify_audit_entries(&self.audit_entries()?))
    }
}

/// Everything the engine needs from one store.
/// What a running step printed so far (issue 38): the run page's live view while the step
/// runs, scrubbed and bounded as the record is, replaced as it grows and removed when the
/// attempt ends; the record keeps what the step printed, at its end, as events. A store that
/// keeps no live view (a benchmark's) takes the defaults: nothing is kept, nothing is shown
/// until the attempt ends.
pub trait LiveOutputs: Send + Sync {
    /// Replaces the live view of one attempt.
    fn set_live_output(
        &self,
        _run: &RunId,
        _step: &str,
        _attempt: u32,
        _stdout: &Redacted<String>,
        _stderr: &Redacted<String>,
        _at: Timestamp,
    ) -> Result<(), Error> {
        Ok(())
    }
    /// The live views of a run's attempts that have one.
    fn live_output(&self, _run: &RunId) -> Result<Vec<crate::LiveOutput>, Error> {
        Ok(Vec::new())
    }
    /// Removes one attempt's live view (it ended: its record has what it printed).
    fn clear_live_output(&self, _run: &RunId, _step: &str, _attempt: u32) -> Result<(), Error> {
        Ok(())
    }
}

pub trait Store:
    AccountStore
    + RunStore
    + EventLog
    + DecisionStore
    + AuditLog
    + LiveOutputs
    + crate::queue::WorkQueue
    + crate::tool_tests::ToolTestLog
{
}

impl<
    T: AccountStore
        + RunStore
        + EventLog
        + DecisionStore
        + AuditLog
        + LiveOutputs
        + crate::queue::WorkQueue
        + crate::tool_tests::ToolTestLog,
> Store for T
{
}
