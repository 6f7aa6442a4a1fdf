//! The live views of running steps (migration 0017, [`storage::LiveOutputs`]): one row per
//! attempt, replaced as the step prints and removed when it ends.

use redact::Redacted;
use rusqlite::params;
use storage::{Error, LiveOutput, LiveOutputs, RunId, Timestamp};

use crate::rows::to_u32;
use crate::{Durability, SqliteStore};

impl LiveOutputs for SqliteStore {
    fn set_live_output(
        &self,
        run: &RunId,
        step: &str,
        attempt: u32,
        stdout: &Redacted<String>,
        stderr: &Redacted<String>,
        at: Timestamp,
    ) -> Result<(), Error> {
        // A view, never the record: lost in a crash, it is only not shown.
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            transaction.execute(
                "INSERT INTO live_output (run_id, step, attempt, stdout, stderr, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (run_id, step, attempt) DO UPDATE SET stdout = excluded.stdout,
                 stderr = excluded.stderr, updated_at = excluded.updated_at",
                params![
                    run.as_str(),
                    step,
                    attempt,
                    stdout.get(),
                    stderr.get(),
                    at.0
                ],
            )?;
            Ok(())
        })
    }

    fn live_output(&self, run: &RunId) -> Result<Vec<LiveOutput>, Error> {
        self.read_records(
            "reading a run's live output",
            "SELECT step, attempt, stdout, stderr, updated_at FROM live_output
             WHERE run_id = ?1 ORDER BY step, attempt",
            params![run.as_str()],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, i64>(4)?,
                ))
            },
            |(step, attempt, stdout, stderr, updated_at)| {
                Ok(LiveOutput {
                    step,
                    attempt: to_u32("a live output's attempt", attempt)?,
                    stdout,
                    stderr,
                    updated_at: Timestamp(updated_at),
                })
            },
        )
    }

    fn clear_live_output(&self, run: &RunId, step: &str, attempt: u32) -> Result<(), Error> {
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            transaction.execute(
                "DELETE FROM live_output WHERE run_id = ?1 AND step = ?2 AND attempt = ?3",
                params![run.as_str(), step, attempt],
            )?;
            Ok(())
        })
    }
}
