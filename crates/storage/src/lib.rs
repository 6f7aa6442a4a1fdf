//! Storage traits (runs, events, audit, decisions, accounts, vault rows) and plain data types;
//! no database code.
//!
//! Invariants: this crate names no database and depends on no driver; every backend crate
//! (`storage-sqlite`, later `storage-postgres`) implements these traits and passes the same
//! conformance story. Every free-text or JSON field a caller hands in is a
//! [`redact::Redacted`] value, and each writer checks that it was scrubbed for the run (or
//! account) the row belongs to, so an unscrubbed value cannot reach a durable record (G16).

#![forbid(unsafe_code)]

mod audit;
mod audit_action;
mod error;
pub mod interviews;
pub mod mail;
pub mod models;
pub mod people;
pub mod queue;
mod records;
pub mod tool_tests;
mod traits;
mod types;
pub mod vault;

pub use crate::audit::{
    AuditBreak, AuditVerification, ChainCheck, GENESIS_HASH, LegacyChainCheck, SERVER_CHAIN,
    audit_entry_hash, verify_audit_entries,
};
pub use crate::audit_action::AuditAction;
pub use crate::error::{Error, check_scope};
pub use crate::records::{
    Account, AttemptFinish, AttemptRecord, AuditCursor, AuditEntry, AuditFilter, AuditPage,
    AuditPosition, DecisionRecord, EventRecord, NewAttempt, NewAuditEntry, NewDecision, NewEvent,
    NewRun, ParkedRecord, RunCursor, RunFilter, RunRecord, RunsPage, Tallied,
};
pub use crate::traits::{
    AccountStore, AuditLog, DecisionStore, EventLog, LiveOutputs, RunStore, Store,
};

/// One attempt's live view (see [`LiveOutputs`]): what it printed so far, scrubbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveOutput {
    pub step: String,
    pub attempt: u32,
    pub stdout: String,
    pub stderr: String,
    pub updated_at: Timestamp,
}
pub use crate::types::{
    AccountId, Actor, AttemptStatus, DecisionKind, Door, GateRef, InvalidId, NetworkMode, RunId,
    RunStatus, Sha256Hex, StepId, Timestamp, UnknownName,
};
