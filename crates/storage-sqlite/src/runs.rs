//! Runs, step attempts and parked state.

use redact::Redacted;
use rusqlite::{OptionalExtension, params};
use storage::{
    AccountId, Actor, AttemptFinish, AttemptRecord, AttemptStatus, Error, NetworkMode, NewAttempt,
    NewEvent, NewRun, ParkedRecord, RunCursor, RunFilter, RunId, RunRecord, RunStatus, RunStore,
    RunsPage, Timestamp, check_scope,
};

/// The most runs one page of the runs list holds.
pub const MAX_PAGE: usize = 500;

use crate::events::append_event_in;
use crate::rows::{
    parse_json, parse_name, parse_optional_json, stored_account, stored_run, to_u32,
};
use crate::{Durability, SqliteStore, TxError, backend};

const RUN_COLUMNS: &str = "id, account_id, status, workflow_name, workflow_file_name, \
     workflow_source, workflow_hash, inputs, created_at, updated_at, started_by_kind, \
     started_by_id, started_by_name, number";

const ATTEMPT_COLUMNS: &str = "run_id, step_id, attempt, network, status, inputs, started_at, \
     finished_at, interpreter_version, backend, isolation_notes, output, reason";

/// A run row as stored, before its columns are parsed.
struct RunRow {
    id: String,
    account: String,
    status: String,
    workflow_name: String,
    workflow_file_name: String,
    workflow_source: String,
    workflow_hash: String,
    inputs: String,
    created_at: i64,
    updated_at: i64,
    started_by_kind: String,
    started_by_id: String,
    started_by_name: String,
    /// `None` only for a row no store wrote (the migration numbers every run it finds).
    number: Option<i64>,
}

fn read_run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: row.get(0)?,
        account: row.get(1)?,
        status: row.get(2)?,
        workflow_name: row.get(3)?,
        workflow_file_name: row.get(4)?,
        workflow_source: row.get(5)?,
        workflow_hash: row.get(6)?,
        inputs: row.get(7)?,
        created_at: row.get(8)?,
        updated_at: row.get(9)?,
        started_by_kind: row.get(10)?,
        started_by_id: row.get(11)?,
        started_by_name: row.get(12)?,
        number: row.get(13)?,
    })
}

fn run_from_row(row: RunRow) -> Result<RunRecord, Error> {
    let started_by = Actor::from_parts(
        &row.started_by_kind,
        &row.started_by_id,
        &row.started_by_name,
    )
    .map_err(|source| Error::Corrupt {
        what: "who started a run",
        detail: format!("run {}: {source}", row.id),
    })?;
    Ok(RunRecord {
        id: stored_run(&row.id)?,
        account: stored_account(&row.account)?,
        status: parse_name(&row.status)?,
        workflow_name: row.workflow_name,
        workflow_file_name: row.workflow_file_name,
        workflow_source: row.workflow_source,
        workflow_hash: row.workflow_hash,
        inputs: parse_json("run inputs", &row.inputs)?,
        started_by,
        created_at: Timestamp(row.created_at),
        updated_at: Timestamp(row.updated_at),
        number: row
            .number
            .and_then(|number| u64::try_from(number).ok())
            .ok_or_else(|| Error::Corrupt {
                what: "a run's number",
                detail: format!("run {} has none", row.id),
            })?,
    })
}

/// An attempt row as stored, before its columns are parsed.
struct AttemptRow {
    run: String,
    step_id: String,
    attempt: i64,
    network: String,
    status: String,
    inputs: String,
    started_at: i64,
    finished_at: Option<i64>,
    interpreter_version: Option<String>,
    backend: Option<String>,
    isolation_notes: Option<String>,
    output: Option<String>,
    reason: Option<String>,
}

fn read_attempt_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<AttemptRow> {
    Ok(AttemptRow {
        run: row.get(0)?,
        step_id: row.get(1)?,
        attempt: row.get(2)?,
        network: row.get(3)?,
        status: row.get(4)?,
        inputs: row.get(5)?,
        started_at: row.get(6)?,
        finished_at: row.get(7)?,
        interpreter_version: row.get(8)?,
        backend: row.get(9)?,
        isolation_notes: row.get(10)?,
        output: row.get(11)?,
        reason: row.get(12)?,
    })
}

fn attempt_from_row(row: AttemptRow) -> Result<AttemptRecord, Error> {
    Ok(AttemptRecord {
        run: stored_run(&row.run)?,
        step_id: row.step_id,
        attempt: to_u32("attempt number", row.attempt)?,
        network: parse_name(&row.network)?,
        status: parse_name(&row.status)?,
        inputs: parse_json("attempt inputs", &row.inputs)?,
        started_at: Timestamp(row.started_at),
        finished_at: row.finished_at.map(Timestamp),
        interpreter_version: row.interpreter_version,
        backend: row.backend,
        isolation_notes: row.isolation_notes,
        output: parse_optional_json("attempt output", row.output)?,
        reason: row.reason,
    })
}

impl SqliteStore {
    fn query_runs(
        &self,
        sql: &str,
        parameters: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<RunRecord>, Error> {
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(sql)?;
                let rows = statement.query_map(parameters, read_run_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read runs"))?;
        rows.into_iter().map(run_from_row).collect()
    }

    /// Like [`Self::query_runs`], for a statement that numbers its parameters (`?1`..`?N`)
    /// and may leave some of them unused.
    fn query_runs_numbered(
        &self,
        sql: &str,
        parameters: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<RunRecord>, Error> {
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(sql)?;
                for (index, parameter) in parameters.iter().enumerate() {
                    let slot = format!("?{}", index + 1);
                    if let Some(position) = statement.parameter_index(&slot)? {
                        statement.raw_bind_parameter(position, parameter)?;
                    }
                }
                let mut rows = statement.raw_query();
                let mut found = Vec::new();
                while let Some(row) = rows.next()? {
                    found.push(read_run_row(row)?);
                }
                Ok(found)
            })
            .map_err(backend("read a page of runs"))?;
        rows.into_iter().map(run_from_row).collect()
    }

    fn query_attempts(
        &self,
        sql: &str,
        parameters: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<AttemptRecord>, Error> {
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(sql)?;
                let rows = statement.query_map(parameters, read_attempt_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read attempts"))?;
        rows.into_iter().map(attempt_from_row).collect()
    }
}

fn optional_scoped_text(
    run: &RunId,
    value: Option<&Redacted<String>>,
) -> Result<Option<String>, Error> {
    value
        .map(|value| {
            check_scope(&redact::Scope::run(run), value)?;
            Ok(value.get().clone())
        })
        .transpose()
}

impl RunStore for SqliteStore {
    fn create_run(&self, run: &NewRun, event: &NewEvent) -> Result<(), Error> {
        check_scope(&redact::Scope::run(&run.id), &run.workflow_source)?;
        check_scope(&redact::Scope::run(&run.id), &run.workflow_name)?;
        check_scope(&redact::Scope::run(&run.id), &run.workflow_file_name)?;
        check_scope(&redact::Scope::run(&run.id), &event.payload)?;
        check_scope(&redact::Scope::run(&run.id), &run.inputs)?;
        check_scope(&redact::Scope::run(&run.id), &run.started_by)?;
        let inputs = run.inputs.get().to_string();
        self.transaction(Durability::Synced, |transaction| {
            // The run's number within its workflow: the counter's next value, in this
            // transaction, so a run that is not created gives none away.
            let number: i64 = transaction.query_row(
                "INSERT INTO run_numbers (account_id, workflow_name, last_number)
                 VALUES (?1, ?2, 1)
                 ON CONFLICT (account_id, workflow_name)
                 DO UPDATE SET last_number = last_number + 1
                 RETURNING last_number",
                params![run.account.as_str(), run.workflow_name.get()],
                |row| row.get(0),
            )?;
            let inserted = transaction.execute(
                &format!(
                    "INSERT INTO runs ({RUN_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12, ?13)
                     ON CONFLICT(id) DO NOTHING"
                ),
                params![
                    run.id.as_str(),
                    run.account.as_str(),
                    run.status.as_str(),
                    run.workflow_name.get(),
                    run.workflow_file_name.get(),
                    run.workflow_source.get(),
                    run.workflow_hash.as_str(),
                    inputs,
                    run.created_at.0,
                    run.started_by.get().kind(),
                    run.started_by.get().id(),
                    run.started_by.get().display_name(),
                    number,
                ],
            )?;
            if inserted == 0 {
                return Err(TxError(Error::AlreadyExists {
                    what: format!("run {}", run.id),
                }));
            }
            append_event_in(transaction, &run.id, event)?;
            Ok(())
        })
    }

    fn run(&self, id: &RunId) -> Result<Option<RunRecord>, Error> {
        let row = self
            .with_conn(|connection| {
                connection
                    .query_row(
                        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                        params![id.as_str()],
                        read_run_row,
                    )
                    .optional()
            })
            .map_err(backend("read run"))?;
        row.map(run_from_row).transpose()
    }

    fn runs(&self, account: &AccountId) -> Result<Vec<RunRecord>, Error> {
        self.query_runs(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE account_id = ?1
                 ORDER BY created_at DESC, rowid DESC"
            ),
            &[&account.as_str()],
        )
    }

    fn runs_page(
        &self,
        account: &AccountId,
        filter: &RunFilter,
        after: Option<&RunCursor>,
        limit: usize,
    ) -> Result<RunsPage, Error> {
        let limit = limit.clamp(1, MAX_PAGE);
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE account_id = ?1");
        let status = filter.status.map(RunStatus::as_str);
        let (starter_kind, starter_id) = match &filter.started_by {
            Some((kind, id)) => (Some(kind.as_str()), id.as_deref()),
            None => (None, None),
        };
        // Every filter is a fixed parameter slot, so the statement text is one of a few and
        // nothing a person typed is ever part of it.
        if filter.workflow.is_some() {
            sql.push_str(" AND workflow_name = ?2");
        }
        if status.is_some() {
            sql.push_str(" AND status = ?3");
        }
        if starter_kind.is_some() {
            sql.push_str(" AND started_by_kind = ?4");
        }
        if starter_id.is_some() {
            sql.push_str(" AND started_by_id = ?5");
        }
        if after.is_some() {
            sql.push_str(" AND (created_at, id) < (?6, ?7)");
        }
        sql.push_str(" ORDER BY created_at DESC, id DESC LIMIT ?8");
        let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let runs = self.query_runs_numbered(
            &sql,
            &[
                &account.as_str(),
                &filter.workflow.as_deref(),
                &status,
                &starter_kind,
                &starter_id,
                &after.map(|cursor| cursor.created_at.0),
                &after.map(|cursor| cursor.id.as_str()),
                &fetch,
            ],
        )?;
        Ok(RunsPage::from_read(runs, limit))
    }

    fn runs_with_status(&self, statuses: &[RunStatus]) -> Result<Vec<RunRecord>, Error> {
        let mut found = Vec::new();
        for status in statuses {
            found.extend(self.query_runs(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE status = ?1 ORDER BY created_at, rowid"
                ),
                &[&status.as_str()],
            )?);
        }
        Ok(found)
    }

    fn set_run_status(
        &self,
        id: &RunId,
        status: RunStatus,
        at: Timestamp,
        event: &NewEvent,
    ) -> Result<(), Error> {
        check_scope(&redact::Scope::run(id), &event.payload)?;
        self.transaction(Durability::Synced, |transaction| {
            let current: Option<String> = transaction
                .query_row(
                    "SELECT status FROM runs WHERE id = ?1",
                    params![id.as_str()],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(current) = current else {
                return Err(TxError(Error::UnknownRun { run: id.clone() }));
            };
            let current: RunStatus = parse_name(&current)?;
            if current.is_terminal() && current != status {
                return Err(TxError(Error::StatusConflict {
                    run: id.clone(),
                    current,
                    wanted: status,
                }));
            }
            transaction.execute(
                "UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1",
                params![id.as_str(), status.as_str(), at.0],
            )?;
            append_event_in(transaction, id, event)?;
            Ok(())
        })
    }

    fn replace_run_workflow(
        &self,
        id: &RunId,
        source: &Redacted<String>,
        hash: &storage::Sha256Hex,
        event: &NewEvent,
    ) -> Result<(), Error> {
        check_scope(&redact::Scope::run(id), source)?;
        check_scope(&redact::Scope::run(id), &event.payload)?;
        self.transaction(Durability::Synced, |transaction| {
            let changed = transaction.execute(
                "UPDATE runs SET workflow_source = ?2, workflow_hash = ?3, updated_at = ?4
                 WHERE id = ?1",
                params![id.as_str(), source.get(), hash.as_str(), event.at.0],
            )?;
            if changed == 0 {
                return Err(TxError(Error::UnknownRun { run: id.clone() }));
            }
            append_event_in(transaction, id, event)?;
            Ok(())
        })
    }

    fn begin_attempt(&self, attempt: &NewAttempt, event: &NewEvent) -> Result<(), Error> {
        check_scope(&redact::Scope::run(&attempt.run), &attempt.inputs)?;
        check_scope(&redact::Scope::run(&attempt.run), &event.payload)?;
        let inputs = attempt.inputs.get().to_string();
        // For a networked attempt this row is the promise "the sandbox may be running with
        // network", which must survive a power loss so that recovery never starts that step a
        // second time (G14): synced. An offline attempt may be run again after a crash, so
        // losing its row to a power loss is harmless: the step just runs again.
        let durability = match attempt.network {
            NetworkMode::PublicEgress => Durability::Synced,
            NetworkMode::None => Durability::ProcessCrashSafe,
        };
        self.transaction(durability, |transaction| {
            let inserted = transaction.execute(
                "INSERT INTO attempts (run_id, step_id, attempt, network, status, inputs, started_at)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)
                 ON CONFLICT(run_id, step_id, attempt) DO NOTHING",
                params![
                    attempt.run.as_str(),
                    attempt.step_id.as_str(),
                    attempt.attempt,
                    attempt.network.as_str(),
                    inputs,
                    attempt.started_at.0,
                ],
            )?;
            if inserted == 0 {
                return Err(TxError(Error::AlreadyExists {
                    what: format!(
                        "attempt {} of step {} in run {}",
                        attempt.attempt, attempt.step_id, attempt.run
                    ),
                }));
            }
            append_event_in(transaction, &attempt.run, event)?;
            Ok(())
        })
    }

    fn finish_attempt(
        &self,
        run: &RunId,
        step_id: &str,
        attempt: u32,
        finish: &AttemptFinish,
        event: &NewEvent,
    ) -> Result<(), Error> {
        check_scope(&redact::Scope::run(run), &event.payload)?;
        let isolation_notes = optional_scoped_text(run, finish.isolation_notes.as_ref())?;
        let reason = optional_scoped_text(run, finish.reason.as_ref())?;
        let interpreter_version = optional_scoped_text(run, finish.interpreter_version.as_ref())?;
        let backend = optional_scoped_text(run, finish.backend.as_ref())?;
        let output = finish
            .output
            .as_ref()
            .map(|output| {
                check_scope(&redact::Scope::run(run), output)?;
                Ok::<_, Error>(output.get().to_string())
            })
            .transpose()?;
        if finish.status == AttemptStatus::Running {
            return Err(Error::AttemptNotRunning {
                run: run.clone(),
                step: step_id.to_owned(),
                attempt,
            });
        }
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            let updated = transaction.execute(
                "UPDATE attempts SET status = ?4, finished_at = ?5, interpreter_version = ?6,
                     backend = ?7, isolation_notes = ?8, output = ?9, reason = ?10
                 WHERE run_id = ?1 AND step_id = ?2 AND attempt = ?3 AND status = 'running'",
                params![
                    run.as_str(),
                    step_id,
                    attempt,
                    finish.status.as_str(),
                    finish.finished_at.0,
                    interpreter_version,
                    backend,
                    isolation_notes,
                    output,
                    reason,
                ],
            )?;
            if updated == 0 {
                return Err(TxError(Error::AttemptNotRunning {
                    run: run.clone(),
                    step: step_id.to_owned(),
                    attempt,
                }));
            }
            append_event_in(transaction, run, event)?;
            Ok(())
        })
    }

    fn attempts(&self, run: &RunId) -> Result<Vec<AttemptRecord>, Error> {
        self.query_attempts(
            &format!("SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ?1 ORDER BY rowid"),
            &[&run.as_str()],
        )
    }

    fn running_attempts(&self) -> Result<Vec<AttemptRecord>, Error> {
        self.query_attempts(
            &format!(
                "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE status = 'running' ORDER BY rowid"
            ),
            &[],
        )
    }

    fn park(
        &self,
        run: &RunId,
        step_id: &str,
        state: &Redacted<serde_json::Value>,
        at: Timestamp,
        event: &NewEvent,
        mail: &storage::mail::NewGateMail,
    ) -> Result<(), Error> {
        check_scope(&redact::Scope::run(run), state)?;
        check_scope(&redact::Scope::run(run), &event.payload)?;
        let state_text = state.get().to_string();
        let mail_row = crate::mail::prepare_park_mail(run, mail)?;
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "INSERT INTO parked (run_id, step_id, state, parked_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(run_id) DO UPDATE SET step_id = excluded.step_id,
                     state = excluded.state, parked_at = excluded.parked_at",
                params![run.as_str(), step_id, state_text, at.0],
            )?;
            crate::mail::insert_park_mail(transaction, run, step_id, at, &mail_row)?;
            append_event_in(transaction, run, event)?;
            Ok(())
        })
    }

    fn parked(&self, run: &RunId) -> Result<Option<ParkedRecord>, Error> {
        let row = self
            .with_conn(|connection| {
                connection
                    .query_row(
                        "SELECT step_id, state, parked_at FROM parked WHERE run_id = ?1",
                        params![run.as_str()],
                        |row| {
                            Ok((
                                row.get::<_, String>(0)?,
                                row.get::<_, String>(1)?,
                                row.get::<_, i64>(2)?,
                            ))
                        },
                    )
                    .optional()
            })
            .map_err(backend("read parked state"))?;
        row.map(|(step_id, state, parked_at)| {
            Ok(ParkedRecord {
                run: run.clone(),
                step_id,
                state: parse_json("parked state", &state)?,
                parked_at: Timestamp(parked_at),
            })
        })
        .transpose()
    }

    fn clear_parked(&self, run: &RunId) -> Result<(), Error> {
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            transaction.execute(
                "DELETE FROM parked WHERE run_id = ?1",
                params![run.as_str()],
            )?;
            Ok(())
        })
    }
}
