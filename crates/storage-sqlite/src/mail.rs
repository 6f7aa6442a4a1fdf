//! The approve-link outbox (migration 0019, [`storage::mail::GateMailOutbox`]): a row per
//! run, gate and attempt, written by `park` in its transaction, claimed for a while by a
//! process that sends mail, and recorded with its audit entry.

use rusqlite::{OptionalExtension, params};
use storage::mail::{
    GateMail, GateMailOutbox, GateMailOutcome, GateMailStatus, MAX_CLAIMED_MAIL, NewGateMail,
};
use storage::{AccountId, Error, NewAuditEntry, RunId, Timestamp, check_scope};

use crate::audit::{append_audit_in, prepare_entry};
use crate::{Durability, SqliteStore, TxError};

/// A park's mail, checked and encoded before its transaction begins.
pub(crate) struct ParkMail {
    account: String,
    attempt: u32,
    content: String,
    people: String,
    remind_after_secs: Option<i64>,
}

pub(crate) fn prepare_park_mail(run: &RunId, mail: &NewGateMail) -> Result<ParkMail, Error> {
    check_scope(&redact::Scope::run(run), &mail.content)?;
    Ok(ParkMail {
        account: mail.account.as_str().to_owned(),
        attempt: mail.attempt,
        content: mail.content.get().to_string(),
        people: encode("people", &mail.people)?,
        remind_after_secs: mail
            .remind_after_secs
            .map(|secs| i64::try_from(secs).unwrap_or(i64::MAX)),
    })
}

/// The row of this gate and attempt, unless one is there: a park repeated (recovery) mails
/// nobody twice for it, and reopens a row a sender closed while the run was between its park
/// and its wait. The mail's account must be the run's.
pub(crate) fn insert_park_mail(
    transaction: &rusqlite::Transaction<'_>,
    run: &RunId,
    step: &str,
    at: Timestamp,
    mail: &ParkMail,
) -> Result<(), TxError> {
    let account: Option<String> = transaction
        .query_row(
            "SELECT account_id FROM runs WHERE id = ?1",
            params![run.as_str()],
            |row| row.get(0),
        )
        .optional()?;
    if account.as_deref() != Some(mail.account.as_str()) {
        return Err(TxError(Error::Invalid {
            what: format!("the mail of run {run} names another account than the run's"),
        }));
    }
    transaction.execute(
        "INSERT INTO gate_mail (account_id, run_id, step_id, attempt, content, people,
             remind_after_secs, created_at, status, due_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'due', ?8)
         ON CONFLICT(run_id, step_id, attempt) DO UPDATE SET status = 'due',
             due_at = excluded.due_at, claimed_by = NULL, claimed_until = NULL
         WHERE gate_mail.status = 'closed'",
        params![
            mail.account,
            run.as_str(),
            step,
            mail.attempt,
            mail.content,
            mail.people,
            mail.remind_after_secs,
            at.0,
        ],
    )?;
    Ok(())
}

fn encode(what: &str, value: &[String]) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|source| Error::Invalid {
        what: format!("the mail's {what} cannot be encoded: {source}"),
    })
}

const COLUMNS: &str = "id, account_id, run_id, step_id, attempt, content, people, \
    remind_after_secs, created_at, status, due_at, mails_sent, tries, last_sent_at, \
    last_recipients, last_try_at, last_error, note, delivered";

type Row = (
    (i64, String, String, String, u32, String, String),
    (Option<i64>, i64, String, Option<i64>, u32, u32),
    (
        Option<i64>,
        String,
        Option<i64>,
        Option<String>,
        Option<String>,
        String,
    ),
);

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        (
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
            row.get(6)?,
        ),
        (
            row.get(7)?,
            row.get(8)?,
            row.get(9)?,
            row.get(10)?,
            row.get(11)?,
            row.get(12)?,
        ),
        (
            row.get(13)?,
            row.get(14)?,
            row.get(15)?,
            row.get(16)?,
            row.get(17)?,
            row.get(18)?,
        ),
    ))
}

fn convert(row: Row) -> Result<GateMail, Error> {
    let (
        (id, account, run, step, attempt, content, people),
        (remind_after_secs, created_at, status, due_at, mails_sent, tries),
        (last_sent_at, last_recipients, last_try_at, last_error, note, delivered),
    ) = row;
    let corrupt = |detail: String| Error::Corrupt {
        what: "a row of the mail outbox",
        detail,
    };
    let json = |what: &str, text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .map_err(|source| corrupt(format!("{what}: {source}")))
    };
    let list = |what: &str, text: &str| {
        serde_json::from_str::<Vec<String>>(text)
            .map_err(|source| corrupt(format!("{what}: {source}")))
    };
    Ok(GateMail {
        id,
        account: AccountId::parse(&account).map_err(|error| corrupt(error.to_string()))?,
        run: RunId::parse(&run).map_err(|error| corrupt(error.to_string()))?,
        step,
        attempt,
        content: json("content", &content)?,
        people: list("people", &people)?,
        remind_after_secs: remind_after_secs.and_then(|secs| u64::try_from(secs).ok()),
        created_at: Timestamp(created_at),
        status: GateMailStatus::parse(&status)
            .ok_or_else(|| corrupt(format!("unknown status `{status}`")))?,
        due_at: due_at.map(Timestamp),
        mails_sent,
        tries,
        last_sent_at: last_sent_at.map(Timestamp),
        last_recipients: list("recipients", &last_recipients)?,
        delivered: list("delivered", &delivered)?,
        last_try_at: last_try_at.map(Timestamp),
        last_error,
        note,
    })
}

impl GateMailOutbox for SqliteStore {
    fn claim_gate_mail(
        &self,
        claimer: &str,
        now: Timestamp,
        until: Timestamp,
        limit: usize,
    ) -> Result<Vec<GateMail>, Error> {
        let limit = i64::try_from(limit.min(MAX_CLAIMED_MAIL)).unwrap_or(0);
        let rows = self.transaction(Durability::Synced, |transaction| {
            let ids: Vec<i64> = {
                let mut statement = transaction.prepare(
                    "SELECT id FROM gate_mail WHERE status = 'due' AND due_at <= ?1
                     AND (claimed_until IS NULL OR claimed_until <= ?1)
                     ORDER BY due_at, id LIMIT ?2",
                )?;
                let ids = statement.query_map(params![now.0, limit], |row| row.get(0))?;
                ids.collect::<rusqlite::Result<_>>()?
            };
            let mut rows = Vec::with_capacity(ids.len());
            for id in ids {
                transaction.execute(
                    "UPDATE gate_mail SET claimed_by = ?1, claimed_until = ?2 WHERE id = ?3",
                    params![claimer, until.0, id],
                )?;
                let row = transaction.query_row(
                    &format!("SELECT {COLUMNS} FROM gate_mail WHERE id = ?1"),
                    params![id],
                    read_row,
                )?;
                rows.push(row);
            }
            Ok(rows)
        })?;
        rows.into_iter().map(convert).collect()
    }

    fn record_gate_mail(
        &self,
        id: i64,
        claimer: &str,
        outcome: &GateMailOutcome,
        entry: Option<&NewAuditEntry>,
    ) -> Result<bool, Error> {
        let prepared = entry.map(prepare_entry).transpose()?;
        // What a sender writes is scrubbed with the account's values: the row's account.
        let held = |transaction: &rusqlite::Transaction<'_>| -> Result<bool, TxError> {
            let account: Option<String> = transaction
                .query_row(
                    "SELECT account_id FROM gate_mail
                     WHERE id = ?1 AND claimed_by = ?2 AND status = 'due'",
                    params![id, claimer],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(account) = account else {
                return Ok(false);
            };
            let account = AccountId::parse(&account).map_err(|error| Error::Corrupt {
                what: "a row of the mail outbox",
                detail: error.to_string(),
            })?;
            let scope = redact::Scope::account(&account);
            let (error, note) = match outcome {
                GateMailOutcome::Sent { note, .. } => (None, note),
                GateMailOutcome::Failed { error, note, .. } => (Some(error), note),
                GateMailOutcome::Closed { .. } | GateMailOutcome::Later { .. } => (None, &None),
            };
            for text in error.into_iter().chain(note) {
                check_scope(&scope, text)?;
            }
            Ok(true)
        };
        let note =
            |note: &Option<redact::Redacted<String>>| note.as_ref().map(|note| note.get().clone());
        let recipients = match outcome {
            GateMailOutcome::Sent { recipients, .. } => encode("recipients", recipients)?,
            GateMailOutcome::Failed { delivered, .. } => encode("delivered", delivered)?,
            _ => String::new(),
        };
        self.transaction(Durability::Synced, |transaction| {
            if !held(transaction)? {
                return Ok(false);
            }
            match outcome {
                GateMailOutcome::Sent {
                    at,
                    note: said,
                    next_due,
                    ..
                } => transaction.execute(
                    "UPDATE gate_mail SET mails_sent = mails_sent + 1, tries = 0,
                         last_sent_at = ?2, last_try_at = ?2, last_recipients = ?3,
                         last_error = NULL, note = ?4, due_at = ?5, delivered = '[]',
                         status = CASE WHEN ?5 IS NULL THEN 'done' ELSE 'due' END,
                         claimed_by = NULL, claimed_until = NULL
                     WHERE id = ?1",
                    params![id, at.0, recipients, note(said), next_due.map(|due| due.0)],
                )?,
                GateMailOutcome::Failed {
                    at,
                    error,
                    note: said,
                    next_due,
                    ..
                } => transaction.execute(
                    "UPDATE gate_mail SET tries = tries + 1, last_try_at = ?2, last_error = ?3,
                         note = ?4, due_at = ?5, delivered = ?6,
                         status = CASE WHEN ?5 IS NULL THEN 'gave_up' ELSE 'due' END,
                         claimed_by = NULL, claimed_until = NULL
                     WHERE id = ?1",
                    params![
                        id,
                        at.0,
                        error.get(),
                        note(said),
                        next_due.map(|due| due.0),
                        recipients
                    ],
                )?,
                GateMailOutcome::Closed { at } => transaction.execute(
                    "UPDATE gate_mail SET status = 'closed', due_at = NULL, last_try_at = ?2,
                         claimed_by = NULL, claimed_until = NULL
                     WHERE id = ?1",
                    params![id, at.0],
                )?,
                GateMailOutcome::Later { next_due } => transaction.execute(
                    "UPDATE gate_mail SET due_at = ?2, claimed_by = NULL, claimed_until = NULL
                     WHERE id = ?1",
                    params![id, next_due.0],
                )?,
            };
            if let Some(prepared) = &prepared {
                append_audit_in(transaction, prepared)?;
            }
            Ok(true)
        })
    }

    fn hold_gate_mail(
        &self,
        id: i64,
        claimer: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            Ok(transaction.execute(
                "UPDATE gate_mail SET claimed_until = ?4
                 WHERE id = ?1 AND claimed_by = ?2 AND claimed_until > ?3 AND status = 'due'",
                params![id, claimer, now.0, until.0],
            )? == 1)
        })
    }

    fn gate_mail(&self, run: &RunId) -> Result<Vec<GateMail>, Error> {
        self.read_records(
            "reading a run's mail",
            &format!("SELECT {COLUMNS} FROM gate_mail WHERE run_id = ?1 ORDER BY id"),
            params![run.as_str()],
            read_row,
            convert,
        )
    }
}
