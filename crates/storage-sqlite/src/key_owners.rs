//! The keys of a person (issue 11, finding 5): a person's live keys are found by
//! `api_keys.created_by` (migration 0011) inside the transaction that removes or demotes them,
//! and revoked or re-assigned there, so no key outlives its creator's removal and none stays
//! above its creator's role.

use rusqlite::{Transaction, params};
use storage::AccountId;
use storage::Timestamp;
use storage::people::{KeysOfRemoved, RoleName};

use crate::TxError;
use crate::rows::parse_name;

/// The live keys `person_id` created in `account`, with their roles, by id.
pub(crate) fn live_keys_of(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
) -> Result<Vec<(String, RoleName)>, TxError> {
    let mut statement = transaction.prepare(
        "SELECT key_id, role FROM api_keys
         WHERE account_id = ?1 AND created_by = ?2 AND revoked_at IS NULL
         ORDER BY key_id",
    )?;
    let rows = statement
        .query_map(params![account.as_str(), person_id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(key_id, role)| Ok((key_id, parse_name::<RoleName>(&role).map_err(TxError)?)))
        .collect()
}

/// Whether two lists of key ids hold the same ids (order aside).
pub(crate) fn same_keys(found: &[String], asked: &[String]) -> bool {
    let mut found = found.to_vec();
    let mut asked = asked.to_vec();
    found.sort();
    asked.sort();
    asked.dedup();
    found == asked
}

fn revoke_keys_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    key_ids: &[String],
    at: Timestamp,
) -> Result<(), TxError> {
    for key_id in key_ids {
        transaction.execute(
            "UPDATE api_keys SET revoked_at = ?3
             WHERE account_id = ?1 AND key_id = ?2 AND revoked_at IS NULL",
            params![account.as_str(), key_id, at.0],
        )?;
    }
    Ok(())
}

/// Revokes the person's live keys above `role`. With `asked`, refuses (false, nothing
/// changed) unless those are exactly the asked keys.
pub(crate) fn revoke_keys_above_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
    role: RoleName,
    asked: Option<&[String]>,
    at: Timestamp,
) -> Result<bool, TxError> {
    let above: Vec<String> = live_keys_of(transaction, account, person_id)?
        .into_iter()
        .filter(|(_, key_role)| *key_role > role)
        .map(|(key_id, _)| key_id)
        .collect();
    if asked.is_some_and(|asked| !same_keys(&above, asked)) {
        return Ok(false);
    }
    revoke_keys_in(transaction, account, &above, at)?;
    Ok(true)
}

/// Revokes or re-assigns every live key of a person being removed. With `keys`, refuses
/// (false, nothing changed) unless its two lists together are exactly the person's live keys;
/// without, revokes them all.
pub(crate) fn dispose_keys_of_removed_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
    keys: Option<&KeysOfRemoved<'_>>,
    at: Timestamp,
) -> Result<bool, TxError> {
    let live: Vec<String> = live_keys_of(transaction, account, person_id)?
        .into_iter()
        .map(|(key_id, _)| key_id)
        .collect();
    let Some(keys) = keys else {
        revoke_keys_in(transaction, account, &live, at)?;
        return Ok(true);
    };
    let overlap = keys
        .revoke
        .iter()
        .any(|key_id| keys.reassign.contains(key_id));
    let asked: Vec<String> = keys.revoke.iter().chain(keys.reassign).cloned().collect();
    if overlap || !same_keys(&live, &asked) {
        return Ok(false);
    }
    revoke_keys_in(transaction, account, keys.revoke, at)?;
    for key_id in keys.reassign {
        transaction.execute(
            "UPDATE api_keys SET created_by = ?3
             WHERE account_id = ?1 AND key_id = ?2 AND revoked_at IS NULL",
            params![account.as_str(), key_id, keys.reassign_to],
        )?;
    }
    Ok(true)
}
