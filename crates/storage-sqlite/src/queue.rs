//! The run queue of migration 0016 ([`storage::queue::WorkQueue`]) across the processes of one
//! host: every claim, start, renewal, release and reaping is one `BEGIN IMMEDIATE` transaction,
//! so two processes never hold the same job, and every lease's end is SQLite's clock, read in
//! the statement that sets or compares it.

use std::time::Duration;

use rusqlite::{OptionalExtension, params};
use storage::queue::{
    Fence, Holder, JobId, JobRecord, JobState, Lease, NewJob, Reaped, Release, SlotKind, Slots,
    Stranded, WorkQueue, lease_millis,
};
use storage::{Error, RunId, Timestamp};

use crate::rows::{parse_name, stored_account, stored_run, to_u32, to_u64};
use crate::{Durability, SqliteStore, TxError, backend};

/// The store's clock in milliseconds since the epoch, as SQL.
const NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

const COLUMNS: &str = "id, account_id, run_id, step, attempt, slot, state, claims, holder_host, \
                       holder_boot, holder_pid, holder_start, lease_until, enqueued_at";

/// A job row as read, before its names and ids are checked.
struct Row {
    id: i64,
    account: String,
    run: String,
    step: String,
    attempt: i64,
    slot: String,
    state: String,
    claims: i64,
    holder: (Option<String>, Option<String>, Option<i64>, Option<i64>),
    lease_until: Option<i64>,
    enqueued_at: i64,
}

fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: row.get(0)?,
        account: row.get(1)?,
        run: row.get(2)?,
        step: row.get(3)?,
        attempt: row.get(4)?,
        slot: row.get(5)?,
        state: row.get(6)?,
        claims: row.get(7)?,
        holder: (row.get(8)?, row.get(9)?, row.get(10)?, row.get(11)?),
        lease_until: row.get(12)?,
        enqueued_at: row.get(13)?,
    })
}

fn record(row: Row) -> Result<JobRecord, Error> {
    let holder = match row.holder {
        (Some(host), Some(boot), Some(pid), Some(start)) => Some(Holder {
            host,
            boot,
            pid: to_u32("a job's holder pid", pid)?,
            process_start: to_u64("a job's holder start", start)?,
        }),
        _ => None,
    };
    Ok(JobRecord {
        id: JobId(row.id),
        account: stored_account(&row.account)?,
        run: stored_run(&row.run)?,
        step: row.step,
        attempt: to_u32("a job's attempt", row.attempt)?,
        slot: parse_name::<SlotKind>(&row.slot)?,
        state: parse_name::<JobState>(&row.state)?,
        claims: to_u32("a job's claims", row.claims)?,
        holder,
        lease_until: row.lease_until.map(Timestamp),
        enqueued_at: Timestamp(row.enqueued_at),
    })
}

fn pid_column(holder: &Holder) -> i64 {
    i64::from(holder.pid)
}

fn start_column(holder: &Holder) -> Result<i64, TxError> {
    i64::try_from(holder.process_start).map_err(|_| {
        TxError(Error::Invalid {
            what: format!(
                "a process start time of {} does not fit the store",
                holder.process_start
            ),
        })
    })
}

/// The condition of every call under a lease: the same claim of the job, still held by the
/// same holder, not reaped.
const HELD: &str = "id = ?1 AND claims = ?2 AND holder_host = ?3 AND holder_boot = ?4 \
                    AND holder_pid = ?5 AND holder_start = ?6 AND state IN ('claimed', 'started')";

/// The parameters ?1 to ?6 of [`HELD`] for `lease`.
fn held_key(lease: &Lease) -> Result<(i64, u32, String, String, i64, i64), TxError> {
    Ok((
        lease.job.0,
        lease.claim,
        lease.holder.host.clone(),
        lease.holder.boot.clone(),
        pid_column(&lease.holder),
        start_column(&lease.holder)?,
    ))
}

fn fence(changed: usize) -> Fence {
    if changed == 1 {
        Fence::Held
    } else {
        Fence::Lost
    }
}

/// Claims the job `id` for `holder` when it is queued, inside `transaction`.
fn take(
    transaction: &rusqlite::Transaction<'_>,
    id: i64,
    holder: &Holder,
    lease_for: Duration,
) -> Result<Option<Lease>, TxError> {
    let row = transaction
        .query_row(
            &format!(
                "UPDATE work_queue SET state = 'claimed', claims = claims + 1, \
                 holder_host = ?2, holder_boot = ?3, holder_pid = ?4, holder_start = ?5, \
                 lease_until = {NOW} + ?6 WHERE id = ?1 AND state = 'queued' RETURNING {COLUMNS}"
            ),
            params![
                id,
                holder.host,
                holder.boot,
                pid_column(holder),
                start_column(holder)?,
                lease_millis(lease_for)
            ],
            read,
        )
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let job = record(row)?;
    Ok(Some(Lease {
        job: job.id,
        account: job.account,
        run: job.run,
        step: job.step,
        attempt: job.attempt,
        claim: job.claims,
        slot: job.slot,
        holder: holder.clone(),
        until: job.lease_until.unwrap_or(Timestamp(0)),
    }))
}

impl WorkQueue for SqliteStore {
    fn enqueue(&self, job: &NewJob) -> Result<JobId, Error> {
        // Lost in a power loss, a run is left running with no job: recovery queues its next
        // attempt again from its record.
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            transaction.execute(
                "INSERT INTO work_queue (account_id, run_id, step, attempt, slot, state, \
                 enqueued_at) VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6)
                 ON CONFLICT (run_id, step, attempt) DO UPDATE SET state = 'queued', \
                 slot = excluded.slot, holder_host = NULL, holder_boot = NULL, \
                 holder_pid = NULL, holder_start = NULL, lease_until = NULL \
                 WHERE work_queue.state = 'done'",
                params![
                    job.account.as_str(),
                    job.run.as_str(),
                    job.step,
                    job.attempt,
                    job.slot.as_str(),
                    job.at.0
                ],
            )?;
            let id: i64 = transaction.query_row(
                "SELECT id FROM work_queue WHERE run_id = ?1 AND step = ?2 AND attempt = ?3",
                params![job.run.as_str(), job.step, job.attempt],
                |row| row.get(0),
            )?;
            Ok(JobId(id))
        })
    }

    fn claim(
        &self,
        holder: &Holder,
        slots: Slots,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error> {
        let kinds: Vec<&str> = SlotKind::ALL
            .into_iter()
            .filter(|kind| slots.free(*kind) > 0)
            .map(SlotKind::as_str)
            .collect();
        if kinds.is_empty() {
            return Ok(None);
        }
        // A claim lost in a power loss is no loss: its worker died with it.
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            let waiting: Option<i64> = transaction
                .query_row(
                    "SELECT id FROM work_queue WHERE state = 'queued' AND slot IN (?1, ?2)
                     ORDER BY id LIMIT 1",
                    params![kinds[0], kinds.get(1).copied().unwrap_or(kinds[0])],
                    |row| row.get(0),
                )
                .optional()?;
            match waiting {
                Some(id) => take(transaction, id, holder, lease_for),
                None => Ok(None),
            }
        })
    }

    fn claim_job(
        &self,
        job: JobId,
        holder: &Holder,
        lease_for: Duration,
    ) -> Result<Option<Lease>, Error> {
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            take(transaction, job.0, holder, lease_for)
        })
    }

    fn start(&self, lease: &Lease) -> Result<Fence, Error> {
        // On disk before the step runs: a started step is never run again by itself.
        self.transaction(Durability::Synced, |transaction| {
            let changed = transaction.execute(
                &format!(
                    "UPDATE work_queue SET state = 'started' WHERE {HELD} AND state = 'claimed' \
                     AND lease_until > {NOW}"
                ),
                held_key(lease)?,
            )?;
            Ok(fence(changed))
        })
    }

    fn renew(&self, lease: &Lease, lease_for: Duration) -> Result<Option<Timestamp>, Error> {
        let millis = lease_millis(lease_for);
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            let until: Option<i64> = transaction
                .query_row(
                    &format!(
                        "UPDATE work_queue SET lease_until = {NOW} + ?7 WHERE {HELD} \
                         AND lease_until > {NOW} RETURNING lease_until"
                    ),
                    {
                        let (job, claim, host, boot, pid, start) = held_key(lease)?;
                        (job, claim, host, boot, pid, start, millis)
                    },
                    |row| row.get(0),
                )
                .optional()?;
            Ok(until.map(Timestamp))
        })
    }

    fn release(&self, lease: &Lease, release: Release) -> Result<Fence, Error> {
        let sql = match release {
            Release::Done => format!(
                "UPDATE work_queue SET state = 'done', holder_host = NULL, holder_boot = NULL, \
                 holder_pid = NULL, holder_start = NULL, lease_until = NULL WHERE {HELD}"
            ),
            Release::Unstarted => format!(
                "UPDATE work_queue SET state = 'queued', holder_host = NULL, holder_boot = NULL, \
                 holder_pid = NULL, holder_start = NULL, lease_until = NULL \
                 WHERE {HELD} AND state = 'claimed'"
            ),
        };
        // Lost in a power loss, the job reads as still held: reaped, its rules find the
        // attempt's own record (synced as the attempt requires) and the run goes on.
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            let changed = transaction.execute(&sql, held_key(lease)?)?;
            Ok(fence(changed))
        })
    }

    fn reap(&self, dead: &dyn Fn(&Holder) -> bool) -> Result<Reaped, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let held = {
                let mut statement = transaction.prepare(&format!(
                    "SELECT {COLUMNS}, coalesce(lease_until <= {NOW}, 1) FROM work_queue \
                     WHERE state IN ('claimed', 'started') ORDER BY id"
                ))?;
                let rows =
                    statement.query_map([], |row| Ok((read(row)?, row.get::<_, bool>(14)?)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let mut reaped = Reaped::default();
            for (row, expired) in held {
                let job = record(row)?;
                let holder_dead = job.holder.as_ref().is_some_and(dead);
                if !expired && !holder_dead {
                    continue;
                }
                if job.state == JobState::Claimed {
                    transaction.execute(
                        "UPDATE work_queue SET state = 'queued', holder_host = NULL, \
                         holder_boot = NULL, holder_pid = NULL, holder_start = NULL, \
                         lease_until = NULL WHERE id = ?1",
                        params![job.id.0],
                    )?;
                    reaped.requeued.push(job.id);
                } else {
                    transaction.execute(
                        "UPDATE work_queue SET state = 'stranded', lease_until = NULL \
                         WHERE id = ?1",
                        params![job.id.0],
                    )?;
                }
            }
            // Every stranded job not yet settled, this reaping's and earlier ones' (a reaper
            // that died before the engine applied its rules leaves them here).
            let stranded = {
                let mut statement = transaction.prepare(&format!(
                    "SELECT {COLUMNS}, (SELECT count(*) FROM work_queue AS other \
                     WHERE other.run_id = work_queue.run_id AND other.step = work_queue.step \
                     AND other.state IN ('stranded', 'settled') AND other.id <> work_queue.id) \
                     FROM work_queue WHERE state = 'stranded' ORDER BY id"
                ))?;
                let rows =
                    statement.query_map([], |row| Ok((read(row)?, row.get::<_, i64>(14)?)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            for (row, before) in stranded {
                reaped.stranded.push(Stranded {
                    job: record(row)?,
                    stranded_before: to_u32("stranded jobs", before)?,
                });
            }
            Ok(reaped)
        })
    }

    fn settle(&self, job: JobId) -> Result<(), Error> {
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "UPDATE work_queue SET state = 'settled' WHERE id = ?1 AND state = 'stranded'",
                params![job.0],
            )?;
            Ok(())
        })
    }

    fn finish_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let changed = transaction.execute(
                "UPDATE work_queue SET state = 'done', lease_until = NULL \
                 WHERE id = ?1 AND state = 'stranded'",
                params![job.0],
            )?;
            Ok(changed == 1)
        })
    }

    fn requeue_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let changed = transaction.execute(
                "UPDATE work_queue SET state = 'queued', holder_host = NULL, holder_boot = NULL, \
                 holder_pid = NULL, holder_start = NULL, lease_until = NULL \
                 WHERE id = ?1 AND state = 'stranded'",
                params![job.0],
            )?;
            Ok(changed == 1)
        })
    }

    fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let rows = self
            .with_reader(|connection| {
                connection
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM work_queue WHERE id = ?1"),
                        params![id.0],
                        read,
                    )
                    .optional()
            })
            .map_err(backend("reading a job"))?;
        rows.map(record).transpose()
    }

    fn jobs_of_run(&self, run: &RunId) -> Result<Vec<JobRecord>, Error> {
        self.read_records(
            "reading a run's jobs",
            &format!("SELECT {COLUMNS} FROM work_queue WHERE run_id = ?1 ORDER BY id"),
            params![run.as_str()],
            read,
            record,
        )
    }
}
