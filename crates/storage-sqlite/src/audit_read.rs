//! Checking the audit chains as a stream, inside one read transaction on a read connection:
//! a check of a long log holds no lock the writer or other readers wait for, holds one entry
//! in memory at a time, and sees one consistent state of the log.

use storage::{
    AccountId, AuditBreak, AuditVerification, ChainCheck, Error, GENESIS_HASH, LegacyChainCheck,
};

use crate::audit::{AUDIT_COLUMNS, audit_from_row, read_audit_row};
use crate::rows::{stored_chain, to_u64};
use crate::{SqliteStore, backend};

/// A failure of the check itself (not a broken chain).
enum Failed {
    Read(rusqlite::Error),
    Parse(Error),
}

impl From<rusqlite::Error> for Failed {
    fn from(error: rusqlite::Error) -> Self {
        Failed::Read(error)
    }
}

fn into_storage(failed: Failed) -> Error {
    match failed {
        Failed::Read(error) => backend("check the audit chain")(error),
        Failed::Parse(error) => error,
    }
}

/// Checks one account's chain on `connection`, entry by entry.
fn check_chain(
    connection: &rusqlite::Connection,
    account: &AccountId,
) -> Result<Result<u64, AuditBreak>, Failed> {
    let columns: String = AUDIT_COLUMNS
        .split(", ")
        .map(|column| format!("a.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    // An old entry's predecessor in the old shared chain may be another account's: only its
    // hash is read, and only to compare it.
    let mut statement = connection.prepare(&format!(
        "SELECT {columns}, p.hash FROM audit_log a
         LEFT JOIN audit_log p ON a.legacy_seq IS NOT NULL AND p.legacy_seq = a.legacy_seq - 1
         WHERE a.account_id = ?1 ORDER BY a.seq"
    ))?;
    let mut rows = statement.query([account.as_str()])?;
    let mut check = ChainCheck::new(account.clone());
    while let Some(row) = rows.next()? {
        let previous: Option<String> = row.get(14)?;
        let entry = audit_from_row(read_audit_row(row)?).map_err(Failed::Parse)?;
        let previous = match entry.legacy_seq {
            Some(1) => Some(GENESIS_HASH.to_owned()),
            _ => previous,
        };
        if let Err(broken) = check.check(&entry, previous.as_deref()) {
            return Ok(Err(broken));
        }
    }
    Ok(Ok(check.checked()))
}

/// Checks the old shared chain link by link.
fn check_legacy(connection: &rusqlite::Connection) -> Result<Result<u64, AuditBreak>, Failed> {
    let mut statement = connection.prepare(
        "SELECT account_id, legacy_seq, prev_hash, hash FROM audit_log
         WHERE legacy_seq IS NOT NULL ORDER BY legacy_seq",
    )?;
    let mut rows = statement.query([])?;
    let mut check = LegacyChainCheck::default();
    while let Some(row) = rows.next()? {
        let account: String = row.get(0)?;
        let account = stored_chain(&account).map_err(Failed::Parse)?;
        let legacy_seq = to_u64("audit legacy seq", row.get(1)?).map_err(Failed::Parse)?;
        let prev_hash: String = row.get(2)?;
        let hash: String = row.get(3)?;
        if let Err(broken) = check.check(&account, legacy_seq, &prev_hash, &hash) {
            return Ok(Err(broken));
        }
    }
    Ok(Ok(check.checked()))
}

impl SqliteStore {
    pub(crate) fn verify_chain(
        &self,
        account: &AccountId,
    ) -> Result<Result<u64, AuditBreak>, Error> {
        self.read_snapshot(|connection| check_chain(connection, account))?
            .map_err(into_storage)
    }

    pub(crate) fn verify_all_chains(&self) -> Result<AuditVerification, Error> {
        self.read_snapshot(|connection| {
            let accounts: Vec<String> = {
                let mut statement =
                    connection.prepare("SELECT DISTINCT account_id FROM audit_log ORDER BY 1")?;
                let rows = statement.query_map([], |row| row.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut chains = Vec::new();
            for account in accounts {
                let account = stored_chain(&account).map_err(Failed::Parse)?;
                let result = check_chain(connection, &account)?;
                chains.push((account, result));
            }
            Ok(AuditVerification {
                chains,
                legacy: check_legacy(connection)?,
            })
        })?
        .map_err(into_storage)
    }
}
