//! The hash-chained audit log: one chain per account, tallied entries, pages read by keyset,
//! and the chains checked as a stream on a read connection (`audit_read.rs`).

use rusqlite::{OptionalExtension, params};
use storage::{
    AccountId, Actor, AuditEntry, AuditFilter, AuditLog, AuditPage, AuditPosition, Error,
    GENESIS_HASH, NewAuditEntry, RunId, Tallied, Timestamp, audit_entry_hash, check_scope,
};

use crate::rows::{parse_json, stored_chain, stored_run, to_u64};
use crate::{Durability, SqliteStore, TxError, backend};

/// The most entries one page reads, whatever the caller asks for.
pub const MAX_AUDIT_PAGE: usize = 500;

/// The columns every audit read selects, in the order [`read_audit_row`] takes them.
pub(crate) const AUDIT_COLUMNS: &str = "account_id, seq, run_id, actor_kind, actor_id, \
     actor_name, action, detail, at, prev_hash, hash, count, last_at, legacy_seq";

/// An audit row as stored, before its fields are parsed.
pub(crate) struct AuditRow {
    account: String,
    seq: i64,
    run: Option<String>,
    actor_kind: String,
    actor_id: String,
    actor_name: String,
    action: String,
    detail: String,
    at: i64,
    prev_hash: String,
    hash: String,
    count: i64,
    last_at: i64,
    legacy_seq: Option<i64>,
}

pub(crate) fn read_audit_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRow> {
    Ok(AuditRow {
        account: row.get(0)?,
        seq: row.get(1)?,
        run: row.get(2)?,
        actor_kind: row.get(3)?,
        actor_id: row.get(4)?,
        actor_name: row.get(5)?,
        action: row.get(6)?,
        detail: row.get(7)?,
        at: row.get(8)?,
        prev_hash: row.get(9)?,
        hash: row.get(10)?,
        count: row.get(11)?,
        last_at: row.get(12)?,
        legacy_seq: row.get(13)?,
    })
}

pub(crate) fn audit_from_row(row: AuditRow) -> Result<AuditEntry, Error> {
    Ok(AuditEntry {
        seq: to_u64("audit seq", row.seq)?,
        account: stored_chain(&row.account)?,
        run: row.run.as_deref().map(stored_run).transpose()?,
        actor: Actor::from_parts(&row.actor_kind, &row.actor_id, &row.actor_name).map_err(
            |unknown| Error::Corrupt {
                what: "audit actor",
                detail: unknown.to_string(),
            },
        )?,
        action: row.action,
        detail: parse_json("audit detail", &row.detail)?,
        at: Timestamp(row.at),
        prev_hash: row.prev_hash,
        hash: row.hash,
        count: to_u64("audit count", row.count)?,
        last_at: Timestamp(row.last_at),
        legacy_seq: row
            .legacy_seq
            .map(|seq| to_u64("audit legacy seq", seq))
            .transpose()?,
    })
}

/// An entry checked and serialized before its transaction starts: the scope check, and the
/// stored text the hash covers (re-read to the same value).
pub(crate) struct PreparedEntry<'a> {
    entry: &'a NewAuditEntry,
    detail_text: String,
    detail: serde_json::Value,
}

pub(crate) fn prepare_entry(entry: &NewAuditEntry) -> Result<PreparedEntry<'_>, Error> {
    let scope = match &entry.run {
        Some(run) => redact::Scope::run(run),
        None => redact::Scope::account(&entry.account),
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

/// Appends a prepared entry inside `transaction`, chained to the last one of its account: the
/// entry commits or rolls back with whatever else the transaction does.
pub(crate) fn append_audit_in(
    transaction: &rusqlite::Transaction<'_>,
    prepared: &PreparedEntry<'_>,
) -> Result<AuditEntry, TxError> {
    append_in(transaction, prepared, None)
}

fn append_in(
    transaction: &rusqlite::Transaction<'_>,
    prepared: &PreparedEntry<'_>,
    tally: Option<(&str, u64)>,
) -> Result<AuditEntry, TxError> {
    let (tally_key, count) = match tally {
        Some((key, uses)) => (Some(key), uses.max(1)),
        None => (None, 1),
    };
    let entry = prepared.entry;
    let last: Option<(i64, String)> = transaction
        .query_row(
            "SELECT seq, hash FROM audit_log WHERE account_id = ?1 ORDER BY seq DESC LIMIT 1",
            [entry.account.as_str()],
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
        entry.action.as_str(),
        &prepared.detail,
        entry.at,
    );
    transaction.execute(
        "INSERT INTO audit_log (account_id, seq, run_id, actor_kind, actor_id, actor_name,
             action, detail, at, prev_hash, hash, tally_key, count, last_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?9)",
        params![
            entry.account.as_str(),
            i64::try_from(seq).unwrap_or(i64::MAX),
            entry.run.as_ref().map(RunId::as_str),
            entry.actor.get().kind(),
            entry.actor.get().id(),
            entry.actor.get().display_name(),
            entry.action.as_str(),
            prepared.detail_text,
            entry.at.0,
            prev_hash,
            hash,
            tally_key,
            i64::try_from(count).unwrap_or(i64::MAX),
        ],
    )?;
    Ok(AuditEntry {
        seq,
        account: entry.account.clone(),
        run: entry.run.clone(),
        actor: entry.actor.get().clone(),
        action: entry.action.as_str().to_owned(),
        detail: prepared.detail.clone(),
        at: entry.at,
        prev_hash,
        hash,
        count,
        last_at: entry.at,
        legacy_seq: None,
    })
}

/// Counts one more use in the tallied entry `tally_key` of `account`, if there is one.
fn count_in(
    transaction: &rusqlite::Transaction<'_>,
    account: &AccountId,
    tally_key: &str,
    at: Timestamp,
    uses: u64,
) -> Result<Option<Tallied>, TxError> {
    let counted: Option<(i64, i64)> = transaction
        .query_row(
            "UPDATE audit_log SET count = count + ?4, last_at = MAX(last_at, ?3)
             WHERE account_id = ?1 AND tally_key = ?2
             RETURNING seq, count",
            params![
                account.as_str(),
                tally_key,
                at.0,
                i64::try_from(uses).unwrap_or(i64::MAX)
            ],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    counted
        .map(|(seq, count)| {
            Ok(Tallied::Counted {
                seq: to_u64("audit seq", seq)?,
                count: to_u64("audit count", count)?,
            })
        })
        .transpose()
}

/// One bound of a page: `(at, seq)` compared as a pair.
fn pair(cursor: storage::AuditCursor) -> (i64, i64) {
    (cursor.at.0, i64::try_from(cursor.seq).unwrap_or(i64::MAX))
}

/// The statement of one page and its parameters. Every condition is one the chosen index
/// answers by itself (equalities on its leading columns, one range on `at` and one on
/// `(at, seq)`), so every row the index yields is a row of the page: the page reads at most
/// `limit + 1` rows. `to` is folded into the upper pair bound and `from` into the lower one
/// where a cursor already bounds that side, so that there is never a third range.
pub(crate) struct PageQuery {
    pub(crate) sql: String,
    account: String,
    actor_kind: Option<String>,
    actor_id: Option<String>,
    action: Option<String>,
    /// The older name of the filtered action, when it has one.
    legacy_action: Option<String>,
    lower_at: Option<i64>,
    upper_at: Option<i64>,
    pair_bound: Option<(i64, i64)>,
    fetch: i64,
}

impl PageQuery {
    pub(crate) fn new(
        account: &AccountId,
        filter: &AuditFilter,
        position: AuditPosition,
        limit: usize,
    ) -> PageQuery {
        // The index is named, not left to the planner: without statistics it may pick one
        // that answers fewer of the conditions and drop rows after reading them.
        let index = match (filter.actor.is_some(), filter.action.is_some()) {
            (false, false) => "audit_newest",
            (true, false) => "audit_newest_by_actor",
            (false, true) => "audit_newest_by_action",
            (true, true) => "audit_newest_by_actor_action",
        };
        let mut sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit_log INDEXED BY {index} WHERE account_id = ?1"
        );
        if filter.actor.is_some() {
            sql.push_str(" AND actor_kind = ?2 AND actor_id = ?3");
        }
        // An action's older name (the CLI's, before the closed vocabulary) is the same
        // action: filtered by either name, both are found. Only the four vault actions have
        // one; their pages are sorted after the search (two ranges of the index), the
        // others stay one search in the index's order.
        let (action, legacy_action) = match filter.action.as_deref() {
            Some(name) => match storage::AuditAction::parse(name) {
                Some(known) => (
                    Some(known.as_str().to_owned()),
                    known
                        .legacy_names()
                        .first()
                        .map(|legacy| (*legacy).to_owned()),
                ),
                None => (Some(name.to_owned()), None),
            },
            None => (None, None),
        };
        match (&action, &legacy_action) {
            (Some(_), Some(_)) => sql.push_str(" AND action IN (?4, ?10)"),
            (Some(_), None) => sql.push_str(" AND action = ?4"),
            (None, _) => {}
        }
        let from = filter.from.map(|from| from.0);
        let to = filter.to.map(|to| to.0);
        let (lower_at, upper_at, pair_bound, order) = match position {
            AuditPosition::Newest | AuditPosition::OlderThan(_) => {
                // Everything at or before `to`: older than (to + 1, 0).
                let to_bound = to.map(|to| (to.saturating_add(1), 0));
                let cursor = match position {
                    AuditPosition::OlderThan(cursor) => Some(pair(cursor)),
                    _ => None,
                };
                let upper = match (cursor, to_bound) {
                    (Some(cursor), Some(to_bound)) => Some(cursor.min(to_bound)),
                    (cursor, to_bound) => cursor.or(to_bound),
                };
                if from.is_some() {
                    sql.push_str(" AND at >= ?5");
                }
                if upper.is_some() {
                    sql.push_str(" AND (at, seq) < (?7, ?8)");
                }
                (from, None, upper, "DESC")
            }
            AuditPosition::NewerThan(cursor) => {
                // Everything at or after `from`: newer than (from, 0), as sequence numbers
                // start at 1.
                let lower = match from {
                    Some(from) => pair(cursor).max((from, 0)),
                    None => pair(cursor),
                };
                if to.is_some() {
                    sql.push_str(" AND at <= ?6");
                }
                sql.push_str(" AND (at, seq) > (?7, ?8)");
                (None, to, Some(lower), "ASC")
            }
        };
        sql.push_str(&format!(" ORDER BY at {order}, seq {order} LIMIT ?9"));
        PageQuery {
            sql,
            account: account.as_str().to_owned(),
            actor_kind: filter.actor.as_ref().map(|(kind, _)| kind.clone()),
            actor_id: filter.actor.as_ref().map(|(_, id)| id.clone()),
            action,
            legacy_action,
            lower_at,
            upper_at,
            pair_bound,
            fetch: i64::try_from(limit + 1).unwrap_or(i64::MAX),
        }
    }

    /// Binds the parameters the statement names (`?1`..`?10`; a filter left out leaves its
    /// slots unused).
    pub(crate) fn bind(&self, statement: &mut rusqlite::Statement<'_>) -> rusqlite::Result<()> {
        let parameters: [&dyn rusqlite::ToSql; 10] = [
            &self.account,
            &self.actor_kind,
            &self.actor_id,
            &self.action,
            &self.lower_at,
            &self.upper_at,
            &self.pair_bound.map(|(at, _)| at),
            &self.pair_bound.map(|(_, seq)| seq),
            &self.fetch,
            &self.legacy_action,
        ];
        for (index, parameter) in parameters.iter().enumerate() {
            let slot = format!("?{}", index + 1);
            if let Some(position) = statement.parameter_index(&slot)? {
                statement.raw_bind_parameter(position, parameter)?;
            }
        }
        Ok(())
    }
}

/// What reading one page cost: the rows the statement returned (with no condition left
/// outside the index, the rows it read) and the virtual machine's steps
/// (`SQLITE_STMTSTATUS_VM_STEP`, which grows with every row the statement visits, returned or
/// not), for the storage tests' bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCost {
    pub rows_returned: usize,
    pub vm_steps: i32,
}

impl SqliteStore {
    /// [`AuditLog::audit_page`], with what reading it cost.
    pub fn audit_page_with_cost(
        &self,
        account: &AccountId,
        filter: &AuditFilter,
        position: AuditPosition,
        limit: usize,
    ) -> Result<(AuditPage, PageCost), Error> {
        let limit = limit.clamp(1, MAX_AUDIT_PAGE);
        let query = PageQuery::new(account, filter, position, limit);
        let (rows, cost) = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(&query.sql)?;
                query.bind(&mut statement)?;
                let mut found = Vec::new();
                {
                    let mut rows = statement.raw_query();
                    while let Some(row) = rows.next()? {
                        found.push(read_audit_row(row)?);
                    }
                }
                let vm_steps = statement.get_status(rusqlite::StatementStatus::VmStep);
                let rows_returned = found.len();
                Ok((
                    found,
                    PageCost {
                        rows_returned,
                        vm_steps,
                    },
                ))
            })
            .map_err(backend("read a page of the audit log"))?;
        let entries = rows
            .into_iter()
            .map(audit_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((AuditPage::from_read(entries, position, limit), cost))
    }

    /// The query plan of a page's statement, for the storage tests.
    pub fn audit_page_plan(
        &self,
        account: &AccountId,
        filter: &AuditFilter,
        position: AuditPosition,
        limit: usize,
    ) -> Result<String, Error> {
        let query = PageQuery::new(account, filter, position, limit);
        self.with_reader(|connection| {
            let mut statement = connection.prepare(&format!("EXPLAIN QUERY PLAN {}", query.sql))?;
            query.bind(&mut statement)?;
            let mut rows = statement.raw_query();
            let mut plan = Vec::new();
            while let Some(row) = rows.next()? {
                plan.push(row.get::<_, String>(3)?);
            }
            Ok(plan.join("; "))
        })
        .map_err(backend("explain a page of the audit log"))
    }
}

impl AuditLog for SqliteStore {
    fn append_audit(&self, entry: &NewAuditEntry) -> Result<AuditEntry, Error> {
        let prepared = prepare_entry(entry)?;
        self.transaction(Durability::Synced, |transaction| {
            append_audit_in(transaction, &prepared)
        })
    }

    fn tally_audit_uses(
        &self,
        entry: &NewAuditEntry,
        tally: &str,
        uses: u64,
    ) -> Result<Tallied, Error> {
        let prepared = prepare_entry(entry)?;
        // Counting one more use survives a crash of this process; the window's first entry is
        // synced like every other entry. The count is tried first in a transaction of its own
        // so that a flood of uses costs no fsync.
        let counted = self.transaction(Durability::ProcessCrashSafe, |transaction| {
            count_in(transaction, &entry.account, tally, entry.at, uses)
        })?;
        if let Some(counted) = counted {
            return Ok(counted);
        }
        self.transaction(Durability::Synced, |transaction| {
            // Another writer may have appended the window's entry in between.
            if let Some(counted) = count_in(transaction, &entry.account, tally, entry.at, uses)? {
                return Ok(counted);
            }
            let appended = append_in(transaction, &prepared, Some((tally, uses)))?;
            Ok(Tallied::Appended { seq: appended.seq })
        })
    }

    fn audit_entries(&self) -> Result<Vec<AuditEntry>, Error> {
        // In the order they were written (rowid), which is each account's sequence order.
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(&format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit_log ORDER BY rowid"
                ))?;
                let rows = statement.query_map([], read_audit_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read audit log"))?;
        rows.into_iter().map(audit_from_row).collect()
    }

    fn audit_entries_of_actions(&self, actions: &[&str]) -> Result<Vec<AuditEntry>, Error> {
        if actions.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; actions.len()].join(", ");
        let rows = self
            .with_reader(|connection| {
                let mut statement = connection.prepare(&format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit_log INDEXED BY audit_by_action
                     WHERE action IN ({marks}) ORDER BY rowid"
                ))?;
                let rows =
                    statement.query_map(rusqlite::params_from_iter(actions), read_audit_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(backend("read audit log"))?;
        rows.into_iter().map(audit_from_row).collect()
    }

    fn audit_page(
        &self,
        account: &AccountId,
        filter: &AuditFilter,
        position: AuditPosition,
        limit: usize,
    ) -> Result<AuditPage, Error> {
        self.audit_page_with_cost(account, filter, position, limit)
            .map(|(page, _)| page)
    }

    fn verify_account_audit(
        &self,
        account: &AccountId,
    ) -> Result<Result<u64, storage::AuditBreak>, Error> {
        self.verify_chain(account)
    }

    fn verify_audit(&self) -> Result<storage::AuditVerification, Error> {
        self.verify_all_chains()
    }
}
