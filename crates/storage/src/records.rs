//! The rows handed to and returned by the storage traits.
//!
//! `New*` values go in: their free text and JSON are `Redacted`. Records come out as plain
//! values (already scrubbed when they were written).

use redact::Redacted;

use crate::types::{
    AccountId, Actor, AttemptStatus, DecisionKind, Door, NetworkMode, RunId, RunStatus, Sha256Hex,
    StepId, Timestamp,
};

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: AccountId,
    pub name: String,
    pub created_at: Timestamp,
}

/// A run to create.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: RunId,
    pub account: AccountId,
    pub status: RunStatus,
    pub workflow_name: Redacted<String>,
    /// The file name the workflow was parsed under; recovery parses the source again with it.
    pub workflow_file_name: Redacted<String>,
    /// The workflow text, scrubbed for this run (a literal in it could hold a value).
    pub workflow_source: Redacted<String>,
    /// SHA-256 of the workflow text as the parser saw it.
    pub workflow_hash: Sha256Hex,
    /// The run-time input values, scrubbed.
    pub inputs: Redacted<serde_json::Value>,
    /// Who started the run (the runs list filters by it), a person's name scrubbed.
    pub started_by: Redacted<Actor>,
    pub created_at: Timestamp,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: RunId,
    pub account: AccountId,
    pub status: RunStatus,
    pub workflow_name: String,
    pub workflow_file_name: String,
    pub workflow_source: String,
    pub workflow_hash: String,
    pub inputs: serde_json::Value,
    /// Who started the run.
    pub started_by: Actor,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The run's short number within its workflow in its account ("ledger #12"): 1 for the
    /// first, given by the store when the run is created, never twice.
    pub number: u64,
}

/// Which runs a page of the runs list holds (every filter that is set must match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// The workflow's name, exactly.
    pub workflow: Option<String>,
    pub status: Option<RunStatus>,
    /// Who started the run: an actor kind (`person`, `api_key`, `cli`), and an id within it
    /// (`None`: any actor of that kind).
    pub started_by: Option<(String, Option<String>)>,
}

/// Where a page of the runs list goes on: the last run of the page before, in the list's
/// order (newest first: by creation time, then by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCursor {
    pub created_at: Timestamp,
    pub id: RunId,
}

/// One page of the runs list, and where the next one starts when there is one.
#[derive(Debug, Clone)]
pub struct RunsPage {
    pub runs: Vec<RunRecord>,
    pub next: Option<RunCursor>,
}

impl RunsPage {
    /// The page of the first `limit` of `runs` (read in the list's order): a run beyond them
    /// means there is a next page, which starts after the page's last run. A backend reads
    /// `limit + 1` runs for it.
    pub fn from_read(mut runs: Vec<RunRecord>, limit: usize) -> RunsPage {
        let next = runs
            .get(limit)
            .and(limit.checked_sub(1))
            .map(|last| RunCursor {
                created_at: runs[last].created_at,
                id: runs[last].id.clone(),
            });
        runs.truncate(limit);
        RunsPage { runs, next }
    }
}

impl RunFilter {
    /// Whether `run` is one this filter keeps.
    pub fn keeps(&self, run: &RunRecord) -> bool {
        self.workflow
            .as_ref()
            .is_none_or(|workflow| &run.workflow_name == workflow)
            && self.status.is_none_or(|status| run.status == status)
            && self.started_by.as_ref().is_none_or(|(kind, id)| {
                run.started_by.kind() == kind
                    && id.as_ref().is_none_or(|id| run.started_by.id() == id)
            })
    }
}

/// An attempt about to start. Written durably before the sandbox starts (G14).
#[derive(Debug, Clone)]
pub struct NewAttempt {
    pub run: RunId,
    pub step_id: StepId,
    /// 1 for the first attempt of the step, then 2, 3, ...
    pub attempt: u32,
    pub network: NetworkMode,
    /// The step's input values, scrubbed.
    pub inputs: Redacted<serde_json::Value>,
    pub started_at: Timestamp,
}

/// How an attempt ended, as observed from outside the sandbox.
#[derive(Debug, Clone)]
pub struct AttemptFinish {
    pub status: AttemptStatus,
    pub finished_at: Timestamp,
    /// The exact interpreter version the sandbox reported (G8), when it got that far.
    pub interpreter_version: Option<Redacted<String>>,
    /// The sandbox backend's name (`local`, `unisolated`, ...).
    pub backend: Option<Redacted<String>>,
    /// What the backend could not enforce or chose (for example "landlock unavailable").
    pub isolation_notes: Option<Redacted<String>>,
    /// The step's output, scrubbed, for a succeeded attempt.
    pub output: Option<Redacted<serde_json::Value>>,
    /// Why the attempt failed, was refused or is unknown, scrubbed.
    pub reason: Option<Redacted<String>>,
}

/// A stored attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    pub run: RunId,
    pub step_id: String,
    pub attempt: u32,
    pub network: NetworkMode,
    pub status: AttemptStatus,
    pub inputs: serde_json::Value,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub interpreter_version: Option<String>,
    pub backend: Option<String>,
    pub isolation_notes: Option<String>,
    pub output: Option<serde_json::Value>,
    pub reason: Option<String>,
}

/// An event to append: to the run's log alone, or in the same transaction as the state change
/// it records, so that the journal and the state never disagree, whatever moment a crash
/// picks (G25).
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// The stable name of one of the engine's event kinds (`engine::journal::EventKind`).
    pub kind: &'static str,
    /// The journal schema version the payload was written in (`engine::journal::VERSION`):
    /// stored with it, so a reader knows which shape it has.
    pub version: u32,
    pub payload: Redacted<serde_json::Value>,
    pub at: Timestamp,
}

/// One entry of a run's append-only event log, as stored; `engine::journal` reads it into a
/// typed event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    pub run: RunId,
    /// 1, 2, 3, ... without gaps, per run.
    pub seq: u64,
    pub kind: String,
    /// The journal schema version the payload was written in; 1 for every event written
    /// before the version was stored.
    pub version: u32,
    pub payload: serde_json::Value,
    pub at: Timestamp,
}

/// A decision to record.
#[derive(Debug, Clone)]
pub struct NewDecision {
    pub run: RunId,
    /// The gate or failed step decided on; `None` for a stop of the whole run.
    pub step_id: Option<StepId>,
    /// The attempt the decision concerns (the gate's pending attempt, the failed attempt).
    pub attempt: Option<u32>,
    pub kind: DecisionKind,
    /// Scrubbed: a person's display name is text someone chose (`Redactor::scrub_fields`).
    pub who: Redacted<Actor>,
    pub door: Door,
    pub note: Redacted<String>,
    pub at: Timestamp,
}

/// A stored decision.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    pub id: i64,
    pub run: RunId,
    pub step_id: Option<String>,
    pub attempt: Option<u32>,
    pub kind: DecisionKind,
    pub who: Actor,
    pub door: Door,
    pub note: String,
    pub at: Timestamp,
}

/// The state of a run parked at a gate: outputs so far and the credential NAMES the run holds,
/// never their values (G18).
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedRecord {
    pub run: RunId,
    pub step_id: String,
    pub state: serde_json::Value,
    pub parked_at: Timestamp,
}

/// An audit entry to append.
#[derive(Debug, Clone)]
pub struct NewAuditEntry {
    pub account: AccountId,
    /// The run the action concerns, if any; the detail must then be scrubbed for that run,
    /// otherwise for the account (`redact::Scope::Account`).
    pub run: Option<RunId>,
    /// Scrubbed: a person's display name is text someone chose (`Redactor::scrub_fields`).
    pub actor: Redacted<Actor>,
    /// What was done, one of the closed vocabulary; stored by its stable name.
    pub action: crate::AuditAction,
    pub detail: Redacted<serde_json::Value>,
    pub at: Timestamp,
}

/// A stored audit entry, chained to the one before it in its account's chain.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// 1, 2, 3, ... per account (each account has its own chain, so no account sees how much
    /// happened in another through gaps).
    pub seq: u64,
    pub account: AccountId,
    pub run: Option<RunId>,
    pub actor: Actor,
    /// The action's stored name: one of [`crate::AuditAction`]'s for every entry this version
    /// writes (a newer version's name is read as it is).
    pub action: String,
    pub detail: serde_json::Value,
    pub at: Timestamp,
    /// The hash of the entry before (or [`crate::GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// [`crate::audit_entry_hash`] of this entry.
    pub hash: String,
    /// How many times what this entry records happened: 1, or for a tallied entry (one entry
    /// per key, route class and window; per client address and window for refused attempts)
    /// the number of uses in its window. Not covered by the hash: it is the one field that
    /// moves, and only up (the store refuses any other change).
    pub count: u64,
    /// The last time it happened (`at` for an entry that is not tallied). Not covered by the
    /// hash either.
    pub last_at: Timestamp,
    /// For an entry written before each account had its own chain: its number in the one
    /// chain of the whole log, which its hash covers (and its `prev_hash` is the hash of the
    /// entry before it there, whichever account that was).
    pub legacy_seq: Option<u64>,
}

/// Whether two stored action names name the same action (an older name is its action).
fn same_action(stored: &str, filtered: &str) -> bool {
    stored == filtered
        || crate::AuditAction::parse(stored)
            .is_some_and(|action| crate::AuditAction::parse(filtered) == Some(action))
}

/// What [`crate::AuditLog::audit_page`] keeps: every field optional, `None` meaning "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Who acted: an actor kind (`person`, `api_key`, ...) and id.
    pub actor: Option<(String, String)>,
    /// What was done: an action name (`session.sign_in`, ...).
    pub action: Option<String>,
    /// From this time on (inclusive).
    pub from: Option<Timestamp>,
    /// Up to this time (inclusive).
    pub to: Option<Timestamp>,
}

impl AuditFilter {
    /// Whether `entry` passes the filter (for stores that filter in memory, and for tests).
    pub fn keeps(&self, entry: &AuditEntry) -> bool {
        self.actor.as_ref().is_none_or(|(kind, id)| {
            entry.actor.kind() == kind.as_str() && entry.actor.id() == id.as_str()
        }) && self
            .action
            .as_ref()
            .is_none_or(|action| same_action(&entry.action, action))
            && self.from.is_none_or(|from| entry.at >= from)
            && self.to.is_none_or(|to| entry.at <= to)
    }
}

/// A place in an account's audit log, newest first: by time, then by sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuditCursor {
    pub at: Timestamp,
    pub seq: u64,
}

impl AuditCursor {
    /// Where `entry` stands.
    pub fn of(entry: &AuditEntry) -> AuditCursor {
        AuditCursor {
            at: entry.at,
            seq: entry.seq,
        }
    }
}

/// Which page of the log to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuditPosition {
    /// The newest entries.
    #[default]
    Newest,
    /// The entries just older than this one (the "next page").
    OlderThan(AuditCursor),
    /// The entries just newer than this one (the "previous page").
    NewerThan(AuditCursor),
}

/// One page of an account's audit log, newest first, and where the pages beside it start.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// Older entries exist: the page after this one starts older than this.
    pub older: Option<AuditCursor>,
    /// Newer entries exist: the page before this one starts newer than this.
    pub newer: Option<AuditCursor>,
}

impl AuditPage {
    /// Builds a page from at most `limit + 1` entries read in the direction of `position`
    /// (newest first for [`AuditPosition::Newest`] and [`AuditPosition::OlderThan`], oldest
    /// first for [`AuditPosition::NewerThan`]): the extra entry only says that there is more.
    pub fn from_read(mut read: Vec<AuditEntry>, position: AuditPosition, limit: usize) -> Self {
        let more = read.len() > limit;
        read.truncate(limit);
        if matches!(position, AuditPosition::NewerThan(_)) {
            read.reverse();
        }
        let first = read.first().map(AuditCursor::of);
        let last = read.last().map(AuditCursor::of);
        let (older, newer) = match position {
            AuditPosition::Newest => (last.filter(|_| more), None),
            AuditPosition::OlderThan(cursor) => (last.filter(|_| more), first.or(Some(cursor))),
            AuditPosition::NewerThan(_) => (last, first.filter(|_| more)),
        };
        AuditPage {
            entries: read,
            older,
            newer,
        }
    }
}

/// What a tallied append did: wrote the window's entry, or counted one more use in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tallied {
    /// The first use in its window: a new entry of the chain, with this sequence number.
    Appended { seq: u64 },
    /// Counted in the window's entry `seq`, which now says `count`.
    Counted { seq: u64, count: u64 },
}
