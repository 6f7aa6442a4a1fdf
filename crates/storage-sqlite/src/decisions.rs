//! Decisions on runs.

use rusqlite::OptionalExtension;
use rusqlite::params;
use storage::{
    Actor, DecisionKind, DecisionRecord, DecisionStore, Error, NewAuditEntry, NewDecision,
    NewEvent, RunId, RunStatus, StepId, Timestamp, check_scope,
};

use crate::audit::{append_audit_in, prepare_entry};
use crate::events::append_event_in;
use crate::rows::{parse_name, to_u32};
use crate::{Durability, SqliteStore, TxError};

/// The extended result code SQLite gives a unique index violation.
const CONSTRAINT_UNIQUE: std::ffi::c_int = 2067;

impl DecisionStore for SqliteStore {
    fn record_decision(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
    ) -> Result<DecisionRecord, Error> {
        self.decide(decision, event, audit, None)
    }

    fn record_decision_moving(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
        from: &[RunStatus],
        to: RunStatus,
        status_event: &NewEvent,
    ) -> Result<DecisionRecord, Error> {
        check_scope(&redact::Scope::run(&decision.run), &status_event.payload)?;
        self.decide(decision, event, audit, Some((from, to, status_event)))
    }

    fn decisions(&self, run: &RunId) -> Result<Vec<DecisionRecord>, Error> {
        type Row = (
            i64,
            Option<String>,
            Option<i64>,
            String,
            String,
            String,
            String,
            String,
            String,
            i64,
        );
        self.read_records(
            "read decisions",
            "SELECT id, step_id, attempt, kind, actor_kind, actor_id, actor_name, door,
                         note, at
                     FROM decisions WHERE run_id = ?1 ORDER BY id",
            params![run.as_str()],
            |row| -> rusqlite::Result<Row> {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                    row.get(8)?,
                    row.get(9)?,
                ))
            },
            |(id, step_id, attempt, kind, actor_kind, actor_id, actor_name, door, note, at)| {
                Ok(DecisionRecord {
                    id,
                    run: run.clone(),
                    step_id,
                    attempt: attempt
                        .map(|attempt| to_u32("decision attempt", attempt))
                        .transpose()?,
                    kind: parse_name(&kind)?,
                    who: Actor::from_parts(&actor_kind, &actor_id, &actor_name).map_err(
                        |unknown| Error::Corrupt {
                            what: "decision actor",
                            detail: unknown.to_string(),
                        },
                    )?,
                    door: parse_name(&door)?,
                    note,
                    at: Timestamp(at),
                })
            },
        )
    }
}

impl SqliteStore {
    /// Records `decision` with its event and audit entry; with `moving`, only while the run
    /// is in one of its statuses, moving it to the next with its event, all in one transaction.
    fn decide(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
        moving: Option<(&[RunStatus], RunStatus, &NewEvent)>,
    ) -> Result<DecisionRecord, Error> {
        check_scope(&redact::Scope::run(&decision.run), &decision.note)?;
        check_scope(&redact::Scope::run(&decision.run), &event.payload)?;
        let prepared = prepare_entry(audit)?;
        let is_gate_decision =
            matches!(decision.kind, DecisionKind::Approve | DecisionKind::Reject);
        self.transaction(Durability::Synced, |transaction| {
            if let Some((from, to, _)) = moving {
                let current: Option<String> = transaction
                    .query_row(
                        "SELECT status FROM runs WHERE id = ?1",
                        params![decision.run.as_str()],
                        |row| row.get(0),
                    )
                    .optional()?;
                let Some(current) = current else {
                    return Err(TxError(Error::UnknownRun {
                        run: decision.run.clone(),
                    }));
                };
                let current: RunStatus = parse_name(&current)?;
                if !from.contains(&current) {
                    return Err(TxError(Error::StatusConflict {
                        run: decision.run.clone(),
                        current,
                        wanted: to,
                    }));
                }
            }
            let inserted = transaction.execute(
                "INSERT INTO decisions (run_id, step_id, attempt, kind, actor_kind, actor_id,
                     actor_name, door, note, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    decision.run.as_str(),
                    decision.step_id.as_ref().map(StepId::as_str),
                    decision.attempt,
                    decision.kind.as_str(),
                    decision.who.get().kind(),
                    decision.who.get().id(),
                    decision.who.get().display_name(),
                    decision.door.as_str(),
                    decision.note.get(),
                    decision.at.0,
                ],
            );
            match inserted {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(failure, _))
                    if is_gate_decision && failure.extended_code == CONSTRAINT_UNIQUE =>
                {
                    return Err(TxError(Error::AlreadyDecided {
                        run: decision.run.clone(),
                        step: decision
                            .step_id
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                    }));
                }
                Err(error) => return Err(error.into()),
            }
            let id = transaction.last_insert_rowid();
            append_event_in(transaction, &decision.run, event)?;
            append_audit_in(transaction, &prepared)?;
            if let Some((_, to, status_event)) = moving {
                transaction.execute(
                    "UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1",
                    params![decision.run.as_str(), to.as_str(), status_event.at.0],
                )?;
                append_event_in(transaction, &decision.run, status_event)?;
            }
            Ok(DecisionRecord {
                id,
                run: decision.run.clone(),
                step_id: decision.step_id.as_ref().map(ToString::to_string),
                attempt: decision.attempt,
                kind: decision.kind,
                who: decision.who.get().clone(),
                door: decision.door,
                note: decision.note.get().clone(),
                at: decision.at,
            })
        })
    }
}
