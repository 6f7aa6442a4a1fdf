//! The interviews of migration 0014 ([`storage::interviews::InterviewStore`]): each account's
//! bounds held in the same transaction as the write, so two starts cannot both pass them.

use rusqlite::{OptionalExtension, params};
use storage::interviews::{
    InterviewQuota, InterviewRecord, InterviewRefusal, InterviewStore, InterviewWrite,
};
use storage::{AccountId, Error, Timestamp, check_scope};

use crate::rows::{account_column, parse_json};
use crate::{Durability, SqliteStore, TxError, backend};

const SELECT: &str = "SELECT id, account_id, person, state, created_at, last_used FROM interviews";

fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<(InterviewRecord, String)> {
    let state: String = row.get(3)?;
    Ok((
        InterviewRecord {
            id: row.get(0)?,
            account: account_column(row, 1)?,
            person: row.get(2)?,
            state: serde_json::Value::Null,
            created_at: Timestamp(row.get(4)?),
            last_used: Timestamp(row.get(5)?),
        },
        state,
    ))
}

fn with_state((mut record, state): (InterviewRecord, String)) -> Result<InterviewRecord, Error> {
    record.state = parse_json("interview state", &state)?;
    Ok(record)
}

fn state_text(interview: &InterviewWrite) -> Result<String, Error> {
    check_scope(
        &redact::Scope::account(&interview.account),
        &interview.state,
    )?;
    serde_json::to_string(interview.state.get()).map_err(|error| Error::Invalid {
        what: format!("an interview's state cannot be written: {error}"),
    })
}

/// The account's open interviews (count, bytes), `except` one, after ending the idle ones.
fn held(
    transaction: &rusqlite::Transaction<'_>,
    account: &AccountId,
    except: &str,
    idle_before: i64,
) -> Result<(usize, usize), TxError> {
    transaction.execute(
        "DELETE FROM interviews WHERE account_id = ?1 AND last_used < ?2",
        params![account.as_str(), idle_before],
    )?;
    let (count, bytes): (i64, i64) = transaction.query_row(
        "SELECT count(*), coalesce(sum(bytes), 0) FROM interviews
         WHERE account_id = ?1 AND id <> ?2",
        params![account.as_str(), except],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    Ok((
        usize::try_from(count).unwrap_or(usize::MAX),
        usize::try_from(bytes).unwrap_or(usize::MAX),
    ))
}

fn size_refusal(
    bytes: usize,
    account_bytes: usize,
    quota: &InterviewQuota,
) -> Option<InterviewRefusal> {
    if bytes > quota.bytes_per_interview {
        return Some(InterviewRefusal::TooLarge {
            bytes,
            max: quota.bytes_per_interview,
        });
    }
    let total = account_bytes.saturating_add(bytes);
    (total > quota.bytes_per_account).then_some(InterviewRefusal::AccountBytes {
        bytes: total,
        max: quota.bytes_per_account,
    })
}

impl InterviewStore for SqliteStore {
    fn start_interview(
        &self,
        interview: &InterviewWrite,
        quota: &InterviewQuota,
    ) -> Result<Result<(), InterviewRefusal>, Error> {
        let text = state_text(interview)?;
        self.transaction(Durability::Synced, |transaction| {
            let idle_before = interview.at.0.saturating_sub(quota.idle_millis);
            let (count, bytes) = held(transaction, &interview.account, &interview.id, idle_before)?;
            if count >= quota.per_account {
                return Ok(Err(InterviewRefusal::AccountFull {
                    held: count,
                    max: quota.per_account,
                }));
            }
            let of_person: i64 = transaction.query_row(
                "SELECT count(*) FROM interviews WHERE account_id = ?1 AND person = ?2",
                params![interview.account.as_str(), interview.person],
                |row| row.get(0),
            )?;
            let of_person = usize::try_from(of_person).unwrap_or(usize::MAX);
            if of_person >= quota.per_person {
                return Ok(Err(InterviewRefusal::PersonFull {
                    held: of_person,
                    max: quota.per_person,
                }));
            }
            if let Some(refusal) = size_refusal(text.len(), bytes, quota) {
                return Ok(Err(refusal));
            }
            transaction.execute(
                "INSERT INTO interviews (id, account_id, person, state, bytes, created_at, last_used)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                params![
                    interview.id,
                    interview.account.as_str(),
                    interview.person,
                    text,
                    text.len() as i64,
                    interview.at.0
                ],
            )?;
            Ok(Ok(()))
        })
    }

    fn interview(
        &self,
        account: &AccountId,
        id: &str,
        quota: &InterviewQuota,
        now: Timestamp,
    ) -> Result<Option<InterviewRecord>, Error> {
        let idle_before = now.0.saturating_sub(quota.idle_millis);
        let row = self
            .with_conn(|connection| {
                connection
                    .query_row(
                        &format!("{SELECT} WHERE account_id = ?1 AND id = ?2 AND last_used >= ?3"),
                        params![account.as_str(), id, idle_before],
                        read,
                    )
                    .optional()
            })
            .map_err(backend("read an interview"))?;
        row.map(with_state).transpose()
    }

    fn update_interview(
        &self,
        interview: &InterviewWrite,
        quota: &InterviewQuota,
    ) -> Result<Result<bool, InterviewRefusal>, Error> {
        let text = state_text(interview)?;
        self.transaction(Durability::Synced, |transaction| {
            let idle_before = interview.at.0.saturating_sub(quota.idle_millis);
            let (_, bytes) = held(transaction, &interview.account, &interview.id, idle_before)?;
            if let Some(refusal) = size_refusal(text.len(), bytes, quota) {
                return Ok(Err(refusal));
            }
            let changed = transaction.execute(
                "UPDATE interviews SET state = ?3, bytes = ?4, last_used = ?5
                 WHERE account_id = ?1 AND id = ?2",
                params![
                    interview.account.as_str(),
                    interview.id,
                    text,
                    text.len() as i64,
                    interview.at.0
                ],
            )?;
            Ok(Ok(changed > 0))
        })
    }

    fn interviews_of(
        &self,
        account: &AccountId,
        person: &str,
        quota: &InterviewQuota,
        now: Timestamp,
    ) -> Result<Vec<InterviewRecord>, Error> {
        let idle_before = now.0.saturating_sub(quota.idle_millis);
        let rows = self
            .with_conn(|connection| {
                let mut statement = connection.prepare(&format!(
                    "{SELECT} WHERE account_id = ?1 AND person = ?2 AND last_used >= ?3
                     ORDER BY last_used DESC"
                ))?;
                let rows =
                    statement.query_map(params![account.as_str(), person, idle_before], read)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("list interviews"))?;
        rows.into_iter().map(with_state).collect()
    }

    fn end_interview(&self, account: &AccountId, id: &str) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let removed = transaction.execute(
                "DELETE FROM interviews WHERE account_id = ?1 AND id = ?2",
                params![account.as_str(), id],
            )?;
            Ok(removed > 0)
        })
    }
}
