//! The hash-chained audit log.

use rusqlite::{OptionalExtension, params};
use storage::{
    AccountId, Actor, AuditEntry, AuditLog, Error, GENESIS_HASH, NewAuditEntry, RunId, Timestamp,
    audit_entry_hash, check_scope,
};

use crate::rows::{parse_json, to_u64};
use crate::{Durability, SqliteStore, TxError};

/// An entry checked and serialized before its transaction starts: the scope check, and the
/// stored text the hash covers (re-read to the same value).
pub(crate) struct PreparedEntry<'a> {
    entry: &'a NewAuditEntry,
    detail_text: String,
    detail: serde_json::Value,
}

pub(crate) fn prepare_entry(entry: &NewAuditEntry) -> Result<PreparedEntry<'_>, Error> {
    let scope = match &entry.run {
        Some(run) => run.redaction_scope(),
        None => entry.account.redaction_scope(),
    };
    check_scope(&scope, &entry.detail)?;
    let detail_text = entry.detail.get().to_string();
    let detail = parse_json("audit detail", &detail_text)?;
    Ok(PreparedEntry {
        entry,
        detail_text,
        detail,
    })
}

/// Appends a prepared entry inside `transaction`, chained to the last one: the entry commits
/// or rolls back with whatever else the transaction does.
pub(crate) fn append_audit_in(
    transaction: &rusqlite::Transaction<'_>,
    prepared: &PreparedEntry<'_>,
) -> Result<AuditEntry, TxError> {
    let entry = prepared.entry;
    let last: Option<(i64, String)> = transaction
        .query_row(
            "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let (seq, prev_hash) = match last {
        Some((seq, hash)) => (to_u64("audit seq", seq)? + 1, hash),
        None => (1, GENESIS_HASH.to_owned()),
    };
    let hash = audit_entry_hash(
        &prev_hash,
        seq,
        &entry.account,
        entry.run.as_ref(),
        entry.actor.get(),
        entry.action,
        &prepared.detail,
        entry.at,
    );
    transaction.execute(
        "INSERT INTO audit_log (seq, account_id, run_id, actor_kind, actor_id, actor_name,
             action, detail, at, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            i64::try_from(seq).unwrap_or(i64::MAX),
            entry.account.as_str(),
            entry.run.as_ref().map(RunId::as_str),
            entry.actor.get().kind(),
            entry.actor.get().id(),
            entry.actor.get().display_name(),
            entry.action,
            prepared.detail_text,
            entry.at.0,
            prev_hash,
            hash,
        ],
    )?;
    Ok(AuditEntry {
        seq,
        account: entry.account.clone(),
        run: entry.run.clone(),
        actor: entry.actor.get().clone(),
        action: entry.action.to_owned(),
        detail: prepared.detail.clone(),
        at: entry.at,
        prev_hash,
        hash,
    })
}

impl AuditLog for SqliteStore {
    fn append_audit(&self, entry: &NewAuditEntry) -> Result<AuditEntry, Error> {
        let prepared = prepare_entry(entry)?;
        self.transaction(Durability::Synced, |transaction| {
            append_audit_in(transaction, &prepared)
        })
    }

    fn audit_entries(&self) -> Result<Vec<AuditEntry>, Error> {
        type Row = (
            i64,
            String,
            Option<String>,
            String,
            String,
            String,
            String,
            String,
            i64,
            String,
            String,
        );
        self.read_records(
            "read audit log",
            "SELECT seq, account_id, run_id, actor_kind, actor_id, actor_name, action,
                         detail, at, prev_hash, hash
                     FROM audit_log ORDER BY seq",
            [],
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
                    row.get(10)?,
                ))
            },
            |(
                seq,
                account,
                run,
                actor_kind,
                actor_id,
                actor_name,
                action,
                detail,
                at,
                prev_hash,
                hash,
            )| {
                Ok(AuditEntry {
                    seq: to_u64("audit seq", seq)?,
                    account: AccountId(account),
                    run: run.map(RunId),
                    actor: Actor::from_parts(&actor_kind, &actor_id, &actor_name).map_err(
                        |unknown| Error::Corrupt {
                            what: "audit actor",
                            detail: unknown.to_string(),
                        },
                    )?,
                    action,
                    detail: parse_json("audit detail", &detail)?,
                    at: Timestamp(at),
                    prev_hash,
                    hash,
                })
            },
        )
    }
}
