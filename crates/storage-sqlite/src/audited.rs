//! A change to people, sessions, keys or links and its audit entry in one transaction
//! (`PeopleStore::write_audited`): when the entry cannot be appended the transaction rolls
//! back, so no change ever stands without its entry (finding 4 of the server review).

use storage::people::{PeopleChange, PeopleWrite, Written};
use storage::{Error, NewAuditEntry};

use crate::audit::{append_audit_in, prepare_entry};
use crate::people::{
    change_role_in, create_api_key_in, create_person_in, create_share_link_in,
    create_sign_in_link_in, reissue_sign_in_link_in, remove_person_in, revoke_api_key_in,
    revoke_session_in, revoke_sessions_of_in, revoke_share_link_in, transfer_ownership_in,
};
use crate::{Durability, SqliteStore};

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
