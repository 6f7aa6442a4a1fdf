//! The append-only event log.

use rusqlite::params;
use storage::{Error, EventLog, EventRecord, NewEvent, RunId, Timestamp, check_scope};

use crate::rows::{parse_json, to_u64};
use crate::{Durability, SqliteStore, TxError, backend};

/// Appends one event inside an open transaction. The next number is read and used inside the
/// same IMMEDIATE transaction, so two writers cannot take the same one and a failed insert
/// leaves no gap.
pub(crate) fn append_event_in(
    transaction: &rusqlite::Transaction<'_>,
    run: &RunId,
    event: &NewEvent,
) -> Result<u64, TxError> {
    check_scope(&run.redaction_scope(), &event.payload)?;
    let exists: i64 = transaction.query_row(
        "SELECT COUNT(*) FROM runs WHERE id = ?1",
        params![run.as_str()],
        |row| row.get(0),
    )?;
    if exists == 0 {
        return Err(TxError(Error::UnknownRun { run: run.clone() }));
    }
    let seq: i64 = transaction.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?1",
        params![run.as_str()],
        |row| row.get(0),
    )?;
    transaction.execute(
        "INSERT INTO events (run_id, seq, kind, version, payload, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            run.as_str(),
            seq,
            event.kind,
            event.version,
            event.payload.get().to_string(),
            event.at.0
        ],
    )?;
    Ok(to_u64("event seq", seq)?)
}

impl EventLog for SqliteStore {
    fn append(&self, run: &RunId, event: &NewEvent) -> Result<u64, Error> {
        check_scope(&run.redaction_scope(), &event.payload)?;
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            append_event_in(transaction, run, event)
        })
    }

    fn events(&self, run: &RunId) -> Result<Vec<EventRecord>, Error> {
        let rows = self
            .with_conn(|connection| {
                let mut statement = connection.prepare(
                    "SELECT seq, kind, version, payload, at FROM events WHERE run_id = ?1
                     ORDER BY seq",
                )?;
                let rows = statement.query_map(params![run.as_str()], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, u32>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read events"))?;
        rows.into_iter()
            .map(|(seq, kind, version, payload, at)| {
                Ok(EventRecord {
                    run: run.clone(),
                    seq: to_u64("event seq", seq)?,
                    kind,
                    version,
                    payload: parse_json("event payload", &payload)?,
                    at: Timestamp(at),
                })
            })
            .collect()
    }
}
