//! A change to people, sessions, keys or links and its audit entry in one transaction
//! (`PeopleStore::write_audited`): when the entry cannot be appended the transaction rolls
//! back, so no change ever stands without its entry (finding 4 of the server review).

use rusqlite::{OptionalExtension, params};
use storage::people::{NewSession, PeopleChange, PeopleWrite, Written};
use storage::{Error, NewAuditEntry};

use crate::audit::{append_audit_in, prepare_entry};
use crate::people::{
    change_role_in, create_api_key_in, create_person_in, create_share_link_in,
    create_sign_in_link_in, reissue_sign_in_link_in, remove_person_in, revoke_api_key_in,
    revoke_session_in, revoke_sessions_of_in, revoke_share_link_in, transfer_ownership_in,
};
use crate::{Durability, SqliteStore, TxError};

/// Inserts a session, in the caller's transaction.
pub(crate) fn create_session_in(
    transaction: &rusqlite::Transaction<'_>,
    session: &NewSession,
) -> Result<(), TxError> {
    transaction
        .execute(
            "INSERT INTO sessions (id, token_hash, person_id, created_at, last_used_at,
                 browser, address)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)",
            params![
                session.id,
                session.token_hash.0.as_slice(),
                session.person_id,
                session.created_at.0,
                session.browser,
                session.address
            ],
        )
        .map_err(|error| match error {
            rusqlite::Error::SqliteFailure(failure, _)
                if failure.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                TxError(Error::AlreadyExists {
                    what: format!("session {}", session.id),
                })
            }
            other => TxError::from(other),
        })?;
    Ok(())
}

impl SqliteStore {
    pub(crate) fn write_people_audited(
        &self,
        write: PeopleWrite<'_>,
        entry: &NewAuditEntry,
    ) -> Result<Written, Error> {
        let prepared = prepare_entry(entry)?;
        self.transaction(Durability::Synced, |transaction| {
            let written = match write {
                PeopleWrite::Invite { person, link } => {
                    let change = create_person_in(transaction, person)?;
                    if change == PeopleChange::Done {
                        create_sign_in_link_in(transaction, link)?;
                    }
                    Written::People(change)
                }
                PeopleWrite::ChangeRole {
                    account,
                    person_id,
                    role,
                    revoke_keys,
                    at,
                } => Written::People(change_role_in(
                    transaction,
                    account,
                    person_id,
                    role,
                    Some(revoke_keys),
                    at,
                )?),
                PeopleWrite::TransferOwnership {
                    account,
                    current_owner,
                    new_owner,
                } => Written::People(transfer_ownership_in(
                    transaction,
                    account,
                    current_owner,
                    new_owner,
                )?),
                PeopleWrite::RemovePerson {
                    account,
                    person_id,
                    keys,
                    at,
                } => Written::People(remove_person_in(
                    transaction,
                    account,
                    person_id,
                    Some(&keys),
                    at,
                )?),
                PeopleWrite::RevokeSession {
                    person_id,
                    session_id,
                    at,
                } => Written::Revoked(revoke_session_in(transaction, person_id, session_id, at)?),
                PeopleWrite::RevokeSessionsOf { person_id, at } => {
                    Written::RevokedCount(revoke_sessions_of_in(transaction, person_id, at)?)
                }
                PeopleWrite::ReissueSignInLink { account, link } => {
                    Written::People(reissue_sign_in_link_in(transaction, account, link)?)
                }
                PeopleWrite::CreateApiKey(key) => {
                    create_api_key_in(transaction, key)?;
                    Written::Created
                }
                PeopleWrite::RevokeApiKey {
                    account,
                    key_id,
                    at,
                } => Written::Revoked(revoke_api_key_in(transaction, account, key_id, at)?),
                PeopleWrite::CreateShareLink(link) => {
                    create_share_link_in(transaction, link)?;
                    Written::Created
                }
                PeopleWrite::RevokeShareLink {
                    account,
                    link_id,
                    at,
                } => Written::Revoked(revoke_share_link_in(transaction, account, link_id, at)?),
                PeopleWrite::CreateSession(session) => {
                    create_session_in(transaction, session)?;
                    Written::Created
                }
                PeopleWrite::RedeemSignInLink {
                    token_hash,
                    password_hash,
                    session,
                    at,
                } => {
                    // The guarded UPDATE is what makes the link single-use: of two racing
                    // requests, only one finds `used_at IS NULL`.
                    let person_id: Option<String> = transaction
                        .query_row(
                            "UPDATE sign_in_links SET used_at = ?2
                             WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2
                             RETURNING person_id",
                            params![token_hash.0.as_slice(), at.0],
                            |row| row.get(0),
                        )
                        .optional()?;
                    match person_id {
                        Some(person_id) if person_id == session.person_id => {
                            transaction.execute(
                                "UPDATE people SET password_hash = ?1 WHERE id = ?2",
                                params![password_hash, person_id],
                            )?;
                            create_session_in(transaction, session)?;
                            Written::Created
                        }
                        // Another person's link, or none: nothing changes (the transaction
                        // rolls the used mark back with the refusal).
                        _ => {
                            return Err(TxError(Error::Invalid {
                                what: "the sign-in link is not usable".to_owned(),
                            }));
                        }
                    }
                }
                PeopleWrite::SetDefaultModelProvider { account, name, at } => {
                    let exists = transaction
                        .query_row(
                            "SELECT 1 FROM model_providers WHERE account_id = ?1 AND name = ?2",
                            params![account.as_str(), name],
                            |_| Ok(()),
                        )
                        .optional()?
                        .is_some();
                    if exists {
                        transaction.execute(
                            "UPDATE model_providers SET is_default = 0, updated_at = ?2
                             WHERE account_id = ?1 AND is_default = 1 AND name <> ?3",
                            params![account.as_str(), at.0, name],
                        )?;
                        transaction.execute(
                            "UPDATE model_providers SET is_default = 1, updated_at = ?3
                             WHERE account_id = ?1 AND name = ?2",
                            params![account.as_str(), name, at.0],
                        )?;
                    }
                    Written::Revoked(exists)
                }
                PeopleWrite::SetSupervisorRetries { account, retries } => {
                    if let Some(retries) = retries.filter(|retries| *retries > 5) {
                        return Err(TxError(Error::Invalid {
                            what: format!(
                                "{retries} supervisor retries per step: an account may set at \
                                 most 5"
                            ),
                        }));
                    }
                    transaction.execute(
                        "INSERT INTO account_supervisor_settings (account_id, supervisor_retries)
                         VALUES (?1, ?2)
                         ON CONFLICT(account_id) DO UPDATE SET
                           supervisor_retries = excluded.supervisor_retries",
                        params![account.as_str(), retries.map(i64::from)],
                    )?;
                    Written::Created
                }
            };
            // A refused write changed nothing, so there is nothing to record; the refusal is
            // returned as an answer (and the empty transaction commits).
            if written.took_effect() {
                append_audit_in(transaction, &prepared)?;
            }
            Ok(written)
        })
    }
}
