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
    check_scope(&redact::Scope::run(run), &event.payload)?;
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

/// The statement of [`EventLog::events_after`]: one range of the primary key `(run_id, seq)`,
/// so it reads the rows it returns and no other.
const EVENTS_AFTER: &str = "SELECT seq, kind, version, payload, at FROM events
     WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";

/// The statement of [`EventLog::last_event_seq`]: the end of one range of the primary key.
const LAST_EVENT_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?1";

type EventRow = (i64, String, u32, String, i64);

fn read_event_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    Ok((
        row.get::<_, i64>(0)?,
        row.get::<_, String>(1)?,
        row.get::<_, u32>(2)?,
        row.get::<_, String>(3)?,
        row.get::<_, i64>(4)?,
    ))
}

fn event_of(
    run: &RunId,
    (seq, kind, version, payload, at): EventRow,
) -> Result<EventRecord, Error> {
    Ok(EventRecord {
        run: run.clone(),
        seq: to_u64("event seq", seq)?,
        kind,
        version,
        payload: parse_json("event payload", &payload)?,
        at: Timestamp(at),
    })
}

impl SqliteStore {
    /// The query plan of [`EventLog::events_after`], for the storage tests.
    pub fn events_after_plan(
        &self,
        run: &RunId,
        after: u64,
        limit: usize,
    ) -> Result<String, Error> {
        self.event_plan(
            EVENTS_AFTER,
            params![
                run.as_str(),
                i64::try_from(after).unwrap_or(i64::MAX),
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
        )
    }

    /// The query plan of [`EventLog::last_event_seq`], for the storage tests.
    pub fn last_event_seq_plan(&self, run: &RunId) -> Result<String, Error> {
        self.event_plan(LAST_EVENT_SEQ, params![run.as_str()])
    }

    fn event_plan(&self, sql: &str, parameters: impl rusqlite::Params) -> Result<String, Error> {
        self.with_reader(|connection| {
            let mut statement = connection.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let mut rows = statement.query(parameters)?;
            let mut plan = Vec::new();
            while let Some(row) = rows.next()? {
                plan.push(row.get::<_, String>(3)?);
            }
            Ok(plan.join("; "))
        })
        .map_err(backend("explain reading the events after one"))
    }
}

impl EventLog for SqliteStore {
    fn append(&self, run: &RunId, event: &NewEvent) -> Result<u64, Error> {
        check_scope(&redact::Scope::run(run), &event.payload)?;
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
                let rows = statement.query_map(params![run.as_str()], read_event_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read events"))?;
        rows.into_iter().map(|row| event_of(run, row)).collect()
    }

    fn events_after(
        &self,
        run: &RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, Error> {
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare_cached(EVENTS_AFTER)?;
                let rows = statement.query_map(
                    params![
                        run.as_str(),
                        i64::try_from(after).unwrap_or(i64::MAX),
                        i64::try_from(limit).unwrap_or(i64::MAX)
                    ],
                    read_event_row,
                )?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read the events after one"))?;
        rows.into_iter().map(|row| event_of(run, row)).collect()
    }

    fn last_event_seq(&self, run: &RunId) -> Result<u64, Error> {
        let seq: i64 = self
            .with_reader(|connection| {
                connection
                    .prepare_cached(LAST_EVENT_SEQ)?
                    .query_row(params![run.as_str()], |row| row.get(0))
            })
            .map_err(backend("read a run's newest event number"))?;
        to_u64("event seq", seq)
    }
}
