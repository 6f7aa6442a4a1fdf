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
mod error;
pub mod models;
pub mod people;
mod records;
mod traits;
mod types;
pub mod vault;

pub use crate::audit::{AuditBreak, GENESIS_HASH, audit_entry_hash, verify_audit_chain};
pub use crate::error::{Error, check_scope};
pub use crate::records::{
    Account, AttemptFinish, AttemptRecord, AuditEntry, DecisionRecord, EventRecord, NewAttempt,
    NewAuditEntry, NewDecision, NewEvent, NewRun, ParkedRecord, RunCursor, RunFilter, RunRecord,
    RunsPage,
};
pub use crate::traits::{AccountStore, AuditLog, DecisionStore, EventLog, RunStore, Store};
pub use crate::types::{
    AccountId, Actor, AttemptStatus, DecisionKind, Door, GateRef, NetworkMode, RunId, RunStatus,
    Sha256Hex, StepId, Timestamp, UnknownName,
};
