//! People, sessions, API keys, one-time sign-in links and share links.
//!
//! The single-owner rule is checked inside the `BEGIN IMMEDIATE` transaction that changes
//! roles: the account's roles are read, the change is applied to them, and only a result with
//! exactly one owner is written; a partial unique index (`people_one_owner`) backs it up, and
//! the count is read again before committing.

use rusqlite::{OptionalExtension, Transaction, params};
use storage::people::{
    ApiKeyRecord, KeysOfRemoved, LinkRedemption, NewApiKey, NewPerson, NewSession, NewShareLink,
    NewSignInLink, PeopleChange, PeopleStore, PersonRecord, RoleName, SessionRecord,
    ShareLinkRecord, SignInLinkRecord, TokenHash,
};
use storage::{AccountId, Error, Timestamp};

use crate::key_owners::{dispose_keys_of_removed_in, revoke_keys_above_in};
use crate::rows::{parse_name, row_tuple, stored_account, stored_run};
use crate::{Durability, SqliteStore, TxError, backend};

const PERSON_COLUMNS: &str = "id, account_id, display_name, email, role, password_hash, created_at";

type PersonRow = (String, String, String, String, String, Option<String>, i64);

fn person_from_row(
    (id, account, display_name, email, role, password_hash, created_at): PersonRow,
) -> Result<PersonRecord, Error> {
    Ok(NewPerson {
        id,
        account: stored_account(&account)?,
        display_name,
        email,
        role: parse_name::<RoleName>(&role)?,
        password_hash,
        created_at: Timestamp(created_at),
    })
}

fn token_hash(what: &'static str, bytes: Vec<u8>) -> Result<TokenHash, Error> {
    let array: [u8; 32] = bytes.try_into().map_err(|bytes: Vec<u8>| Error::Corrupt {
        what,
        detail: format!("a token hash of {} bytes, not 32", bytes.len()),
    })?;
    Ok(TokenHash(array))
}

/// The roles of an account's people, read inside the caller's transaction.
fn account_roles(
    transaction: &Transaction<'_>,
    account: &AccountId,
) -> Result<Vec<(String, RoleName)>, TxError> {
    let mut statement =
        transaction.prepare("SELECT id, role FROM people WHERE account_id = ?1 ORDER BY id")?;
    let rows = statement
        .query_map(params![account.as_str()], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter()
        .map(|(id, role)| Ok((id, parse_name::<RoleName>(&role)?)))
        .collect()
}

fn owner_count<'a>(roles: impl IntoIterator<Item = &'a RoleName>) -> usize {
    roles
        .into_iter()
        .filter(|role| **role == RoleName::Owner)
        .count()
}

/// Reads the owner count again after the writes of a role change; anything but one means the
/// writes went wrong, and the error rolls the whole transaction back.
fn confirm_single_owner(transaction: &Transaction<'_>, account: &AccountId) -> Result<(), TxError> {
    let owners: i64 = transaction.query_row(
        "SELECT COUNT(*) FROM people WHERE account_id = ?1 AND role = 'owner'",
        params![account.as_str()],
        |row| row.get(0),
    )?;
    if owners == 1 {
        Ok(())
    } else {
        Err(TxError(Error::Corrupt {
            what: "account owners",
            detail: format!("account {account} would have {owners} owners after a role change"),
        }))
    }
}

type SessionRow = (
    String,
    Vec<u8>,
    String,
    String,
    i64,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
);

const SESSION_COLUMNS: &str = "s.id, s.token_hash, s.person_id, p.account_id, s.created_at, \
     s.last_used_at, s.revoked_at, s.browser, s.address";

fn session_from_row(
    (id, hash, person_id, account, created_at, last_used_at, revoked_at, browser, address): SessionRow,
) -> Result<SessionRecord, Error> {
    Ok(SessionRecord {
        id,
        token_hash: token_hash("session token hash", hash)?,
        person_id,
        account: stored_account(&account)?,
        created_at: Timestamp(created_at),
        last_used_at: Timestamp(last_used_at),
        revoked_at: revoked_at.map(Timestamp),
        browser,
        address,
    })
}

type ApiKeyRow = (
    String,
    Vec<u8>,
    String,
    String,
    String,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
);

const API_KEY_COLUMNS: &str =
    "key_id, token_hash, account_id, role, name, created_by, created_at, last_used_at, revoked_at";

fn api_key_from_row(
    (key_id, hash, account, role, name, created_by, created_at, last_used_at, revoked_at): ApiKeyRow,
) -> Result<ApiKeyRecord, Error> {
    Ok(ApiKeyRecord {
        key_id,
        token_hash: token_hash("API key hash", hash)?,
        account: stored_account(&account)?,
        role: parse_name::<RoleName>(&role)?,
        name,
        created_by,
        created_at: Timestamp(created_at),
        last_used_at: last_used_at.map(Timestamp),
        revoked_at: revoked_at.map(Timestamp),
    })
}

type ShareRow = (
    String,
    Vec<u8>,
    String,
    String,
    i64,
    i64,
    Option<i64>,
    bool,
    Option<String>,
    Option<String>,
    Option<String>,
);

const SHARE_COLUMNS: &str = "id, token_hash, account_id, run_id, created_at, expires_at, \
     revoked_at, include_tool_results, created_by_kind, created_by_id, created_by_name";

fn share_from_row(
    (
        id,
        hash,
        account,
        run,
        created_at,
        expires_at,
        revoked_at,
        include_tool_results,
        created_by_kind,
        created_by_id,
        created_by_name,
    ): ShareRow,
) -> Result<ShareLinkRecord, Error> {
    let created_by = match (created_by_kind, created_by_id, created_by_name) {
        (Some(kind), Some(id), name) => Some(
            storage::Actor::from_parts(&kind, &id, name.as_deref().unwrap_or_default()).map_err(
                |source| Error::Corrupt {
                    what: "who made a share link",
                    detail: source.to_string(),
                },
            )?,
        ),
        _ => None,
    };
    Ok(ShareLinkRecord {
        id,
        token_hash: token_hash("share token hash", hash)?,
        account: stored_account(&account)?,
        run: stored_run(&run)?,
        created_at: Timestamp(created_at),
        expires_at: Timestamp(expires_at),
        revoked_at: revoked_at.map(Timestamp),
        include_tool_results,
        created_by,
    })
}

/// Maps a uniqueness violation to [`Error::AlreadyExists`], naming what was being created.
fn already_exists(what: String) -> impl FnOnce(rusqlite::Error) -> TxError {
    move |error| match error {
        rusqlite::Error::SqliteFailure(code, _)
            if code.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            TxError(Error::AlreadyExists { what })
        }
        other => TxError::from(other),
    }
}

pub(crate) fn create_person_in(
    transaction: &Transaction<'_>,
    person: &NewPerson,
) -> Result<PeopleChange, TxError> {
    let roles = account_roles(transaction, &person.account)?;
    let owners_after =
        owner_count(roles.iter().map(|(_, role)| role)) + owner_count([&person.role]);
    if owners_after != 1 {
        return Ok(PeopleChange::WouldBreakSingleOwner {
            account: person.account.clone(),
            owners: owners_after,
        });
    }
    transaction
        .execute(
            "INSERT INTO people (id, account_id, display_name, email, role,
                 password_hash, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                person.id,
                person.account.as_str(),
                person.display_name,
                person.email,
                person.role.as_str(),
                person.password_hash,
                person.created_at.0,
            ],
        )
        .map_err(already_exists(format!(
            "person {} or email {:?} in account {}",
            person.id, person.email, person.account
        )))?;
    confirm_single_owner(transaction, &person.account)?;
    Ok(PeopleChange::Done)
}

pub(crate) fn change_role_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
    role: RoleName,
    revoke_keys: Option<&[String]>,
    at: Timestamp,
) -> Result<PeopleChange, TxError> {
    let mut roles = account_roles(transaction, account)?;
    let Some(current) = roles.iter_mut().find(|(id, _)| id == person_id) else {
        return Ok(PeopleChange::NoSuchPerson {
            account: account.clone(),
            person_id: person_id.to_owned(),
        });
    };
    if current.1 == RoleName::Owner || role == RoleName::Owner {
        return Ok(PeopleChange::OwnerOnlyByTransfer {
            account: account.clone(),
        });
    }
    current.1 = role;
    let owners = owner_count(roles.iter().map(|(_, role)| role));
    if owners != 1 {
        return Ok(PeopleChange::WouldBreakSingleOwner {
            account: account.clone(),
            owners,
        });
    }
    // Checked first: a refusal must leave the role as it was.
    if !revoke_keys_above_in(transaction, account, person_id, role, revoke_keys, at)? {
        return Ok(PeopleChange::KeysChanged {
            account: account.clone(),
            person_id: person_id.to_owned(),
        });
    }
    transaction.execute(
        "UPDATE people SET role = ?1 WHERE id = ?2 AND account_id = ?3",
        params![role.as_str(), person_id, account.as_str()],
    )?;
    confirm_single_owner(transaction, account)?;
    Ok(PeopleChange::Done)
}

pub(crate) fn transfer_ownership_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    current_owner: &str,
    new_owner: &str,
) -> Result<PeopleChange, TxError> {
    let mut roles = account_roles(transaction, account)?;
    for person_id in [current_owner, new_owner] {
        if !roles.iter().any(|(id, _)| id == person_id) {
            return Ok(PeopleChange::NoSuchPerson {
                account: account.clone(),
                person_id: person_id.to_owned(),
            });
        }
    }
    let current_is_owner = roles
        .iter()
        .any(|(id, role)| id == current_owner && *role == RoleName::Owner);
    if !current_is_owner || current_owner == new_owner {
        return Ok(PeopleChange::OwnerOnlyByTransfer {
            account: account.clone(),
        });
    }
    if !has_signed_in(transaction, account, new_owner)? {
        return Ok(PeopleChange::NewOwnerNeverSignedIn {
            account: account.clone(),
            person_id: new_owner.to_owned(),
        });
    }
    for (id, role) in &mut roles {
        if id == current_owner {
            *role = RoleName::Admin;
        } else if id == new_owner {
            *role = RoleName::Owner;
        }
    }
    let owners = owner_count(roles.iter().map(|(_, role)| role));
    if owners != 1 {
        return Ok(PeopleChange::WouldBreakSingleOwner {
            account: account.clone(),
            owners,
        });
    }
    // The old owner steps down first, so the partial unique index never sees two.
    transaction.execute(
        "UPDATE people SET role = 'admin' WHERE id = ?1 AND account_id = ?2",
        params![current_owner, account.as_str()],
    )?;
    transaction.execute(
        "UPDATE people SET role = 'owner' WHERE id = ?1 AND account_id = ?2",
        params![new_owner, account.as_str()],
    )?;
    confirm_single_owner(transaction, account)?;
    Ok(PeopleChange::Done)
}

pub(crate) fn remove_person_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
    keys: Option<&KeysOfRemoved<'_>>,
    at: Timestamp,
) -> Result<PeopleChange, TxError> {
    let roles = account_roles(transaction, account)?;
    let Some((_, role)) = roles.iter().find(|(id, _)| id == person_id) else {
        return Ok(PeopleChange::NoSuchPerson {
            account: account.clone(),
            person_id: person_id.to_owned(),
        });
    };
    if *role == RoleName::Owner {
        return Ok(PeopleChange::OwnerOnlyByTransfer {
            account: account.clone(),
        });
    }
    if !dispose_keys_of_removed_in(transaction, account, person_id, keys, at)? {
        return Ok(PeopleChange::KeysChanged {
            account: account.clone(),
            person_id: person_id.to_owned(),
        });
    }
    transaction.execute(
        "UPDATE sessions SET revoked_at = ?1 WHERE person_id = ?2 AND revoked_at IS NULL",
        params![at.0, person_id],
    )?;
    transaction.execute(
        "DELETE FROM people WHERE id = ?1 AND account_id = ?2",
        params![person_id, account.as_str()],
    )?;
    confirm_single_owner(transaction, account)?;
    Ok(PeopleChange::Done)
}

/// Whether the person has signed in at least once: their one-time link set a password (the
/// only way a person gets one, and nothing takes it away).
fn has_signed_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    person_id: &str,
) -> Result<bool, TxError> {
    let hash: Option<Option<String>> = transaction
        .query_row(
            "SELECT password_hash FROM people WHERE id = ?1 AND account_id = ?2",
            params![person_id, account.as_str()],
            |row| row.get(0),
        )
        .optional()?;
    Ok(matches!(hash, Some(Some(_))))
}

/// A fresh one-time link for a person who never signed in, ending their other unused links.
pub(crate) fn reissue_sign_in_link_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    link: &NewSignInLink,
) -> Result<PeopleChange, TxError> {
    let roles = account_roles(transaction, account)?;
    if !roles.iter().any(|(id, _)| *id == link.person_id) {
        return Ok(PeopleChange::NoSuchPerson {
            account: account.clone(),
            person_id: link.person_id.clone(),
        });
    }
    if has_signed_in(transaction, account, &link.person_id)? {
        return Ok(PeopleChange::AlreadySignedIn {
            account: account.clone(),
            person_id: link.person_id.clone(),
        });
    }
    replace_sign_in_links_in(transaction, link)?;
    Ok(PeopleChange::Done)
}

/// Ends every unused link of the person (at the new link's creation) and creates the new
/// one; how many links it ended.
fn replace_sign_in_links_in(
    transaction: &Transaction<'_>,
    link: &NewSignInLink,
) -> Result<u64, TxError> {
    let ended = transaction.execute(
        "UPDATE sign_in_links SET expires_at = ?2
         WHERE person_id = ?1 AND used_at IS NULL AND expires_at > ?2",
        params![link.person_id, link.created_at.0],
    )?;
    create_sign_in_link_in(transaction, link)?;
    Ok(u64::try_from(ended).unwrap_or(u64::MAX))
}

pub(crate) fn create_sign_in_link_in(
    transaction: &Transaction<'_>,
    link: &NewSignInLink,
) -> Result<(), TxError> {
    transaction
        .execute(
            "INSERT INTO sign_in_links (token_hash, person_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                link.token_hash.0.as_slice(),
                link.person_id,
                link.created_at.0,
                link.expires_at.0
            ],
        )
        .map_err(already_exists(format!(
            "a sign-in link for person {}",
            link.person_id
        )))?;
    Ok(())
}

pub(crate) fn create_api_key_in(
    transaction: &Transaction<'_>,
    key: &NewApiKey,
) -> Result<(), TxError> {
    transaction
        .execute(
            "INSERT INTO api_keys
                 (key_id, token_hash, account_id, role, name, created_by, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                key.key_id,
                key.token_hash.0.as_slice(),
                key.account.as_str(),
                key.role.as_str(),
                key.name,
                key.created_by,
                key.created_at.0
            ],
        )
        .map_err(already_exists(format!("API key {}", key.key_id)))?;
    Ok(())
}

pub(crate) fn create_share_link_in(
    transaction: &Transaction<'_>,
    link: &NewShareLink,
) -> Result<(), TxError> {
    transaction
        .execute(
            "INSERT INTO share_links (id, token_hash, account_id, run_id, created_at,
                 expires_at, include_tool_results, created_by_kind, created_by_id,
                 created_by_name)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                link.id,
                link.token_hash.0.as_slice(),
                link.account.as_str(),
                link.run.as_str(),
                link.created_at.0,
                link.expires_at.0,
                link.include_tool_results,
                link.created_by.kind(),
                link.created_by.id(),
                link.created_by.display_name()
            ],
        )
        .map_err(already_exists(format!("share link {}", link.id)))?;
    Ok(())
}

pub(crate) fn revoke_session_in(
    transaction: &Transaction<'_>,
    person_id: &str,
    session_id: &str,
    at: Timestamp,
) -> Result<bool, TxError> {
    let changed = transaction.execute(
        "UPDATE sessions SET revoked_at = ?3
         WHERE id = ?1 AND person_id = ?2 AND revoked_at IS NULL",
        params![session_id, person_id, at.0],
    )?;
    Ok(changed > 0)
}

pub(crate) fn revoke_sessions_of_in(
    transaction: &Transaction<'_>,
    person_id: &str,
    at: Timestamp,
) -> Result<u64, TxError> {
    let changed = transaction.execute(
        "UPDATE sessions SET revoked_at = ?2 WHERE person_id = ?1 AND revoked_at IS NULL",
        params![person_id, at.0],
    )?;
    Ok(u64::try_from(changed).unwrap_or(u64::MAX))
}

pub(crate) fn revoke_api_key_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    key_id: &str,
    at: Timestamp,
) -> Result<bool, TxError> {
    let changed = transaction.execute(
        "UPDATE api_keys SET revoked_at = ?3
         WHERE key_id = ?1 AND account_id = ?2 AND revoked_at IS NULL",
        params![key_id, account.as_str(), at.0],
    )?;
    Ok(changed > 0)
}

pub(crate) fn revoke_share_link_in(
    transaction: &Transaction<'_>,
    account: &AccountId,
    link_id: &str,
    at: Timestamp,
) -> Result<bool, TxError> {
    let changed = transaction.execute(
        "UPDATE share_links SET revoked_at = ?3
         WHERE id = ?1 AND account_id = ?2 AND revoked_at IS NULL",
        params![link_id, account.as_str(), at.0],
    )?;
    Ok(changed > 0)
}

impl SqliteStore {
    fn execute(
        &self,
        durability: Durability,
        sql: &str,
        parameters: impl rusqlite::Params,
    ) -> Result<usize, Error> {
        self.transaction(durability, |transaction| {
            Ok(transaction.execute(sql, parameters)?)
        })
    }
}

impl PeopleStore for SqliteStore {
    fn write_audited(
        &self,
        write: storage::people::PeopleWrite<'_>,
        entry: &storage::NewAuditEntry,
    ) -> Result<storage::people::Written, Error> {
        self.write_people_audited(write, entry)
    }

    fn create_person(&self, person: &NewPerson) -> Result<PeopleChange, Error> {
        self.transaction(Durability::Synced, |transaction| {
            create_person_in(transaction, person)
        })
    }

    fn person(&self, id: &str) -> Result<Option<PersonRecord>, Error> {
        let sql = format!("SELECT {PERSON_COLUMNS} FROM people WHERE id = ?1");
        Ok(self
            .read_records("read person", &sql, params![id], row_tuple, person_from_row)?
            .into_iter()
            .next())
    }

    fn person_by_email(
        &self,
        account: &AccountId,
        email: &str,
    ) -> Result<Option<PersonRecord>, Error> {
        let sql =
            format!("SELECT {PERSON_COLUMNS} FROM people WHERE account_id = ?1 AND email = ?2");
        Ok(self
            .read_records(
                "read person by email",
                &sql,
                params![account.as_str(), email],
                row_tuple,
                person_from_row,
            )?
            .into_iter()
            .next())
    }

    fn people(&self, account: &AccountId) -> Result<Vec<PersonRecord>, Error> {
        let sql = format!(
            "SELECT {PERSON_COLUMNS} FROM people WHERE account_id = ?1 ORDER BY created_at, id"
        );
        self.read_records(
            "list people",
            &sql,
            params![account.as_str()],
            row_tuple,
            person_from_row,
        )
    }

    fn change_role(
        &self,
        account: &AccountId,
        person_id: &str,
        role: RoleName,
        at: Timestamp,
    ) -> Result<PeopleChange, Error> {
        self.transaction(Durability::Synced, |transaction| {
            change_role_in(transaction, account, person_id, role, None, at)
        })
    }

    fn transfer_ownership(
        &self,
        account: &AccountId,
        current_owner: &str,
        new_owner: &str,
    ) -> Result<PeopleChange, Error> {
        self.transaction(Durability::Synced, |transaction| {
            transfer_ownership_in(transaction, account, current_owner, new_owner)
        })
    }

    fn remove_person(
        &self,
        account: &AccountId,
        person_id: &str,
        at: Timestamp,
    ) -> Result<PeopleChange, Error> {
        self.transaction(Durability::Synced, |transaction| {
            remove_person_in(transaction, account, person_id, None, at)
        })
    }

    fn create_sign_in_link(&self, link: &NewSignInLink) -> Result<(), Error> {
        self.transaction(Durability::Synced, |transaction| {
            create_sign_in_link_in(transaction, link)
        })
    }

    fn replace_sign_in_links(&self, link: &NewSignInLink) -> Result<u64, Error> {
        self.transaction(Durability::Synced, |transaction| {
            replace_sign_in_links_in(transaction, link)
        })
    }

    fn usable_sign_in_link(
        &self,
        token_hash: &TokenHash,
        now: Timestamp,
    ) -> Result<Option<SignInLinkRecord>, Error> {
        let found: Option<(String, i64, i64)> = self
            .with_conn(|connection| {
                connection
                    .query_row(
                        "SELECT person_id, created_at, expires_at FROM sign_in_links
                         WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
                        params![token_hash.0.as_slice(), now.0],
                        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                    )
                    .optional()
            })
            .map_err(backend("read sign-in link"))?;
        let Some((person_id, created_at, expires_at)) = found else {
            return Ok(None);
        };
        Ok(self.person(&person_id)?.map(|person| SignInLinkRecord {
            person,
            created_at: Timestamp(created_at),
            expires_at: Timestamp(expires_at),
        }))
    }

    fn redeem_sign_in_link(
        &self,
        token_hash: &TokenHash,
        password_hash: &str,
        now: Timestamp,
    ) -> Result<LinkRedemption, Error> {
        let redeemed = self.transaction(Durability::Synced, |transaction| {
            // The guarded UPDATE is what makes the link single-use: of two racing requests,
            // only one finds `used_at IS NULL`.
            let person_id: Option<String> = transaction
                .query_row(
                    "UPDATE sign_in_links SET used_at = ?2
                     WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2
                     RETURNING person_id",
                    params![token_hash.0.as_slice(), now.0],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(person_id) = person_id else {
                return Ok(None);
            };
            transaction.execute(
                "UPDATE people SET password_hash = ?1 WHERE id = ?2",
                params![password_hash, person_id],
            )?;
            Ok(Some(person_id))
        })?;
        let Some(person_id) = redeemed else {
            return Ok(LinkRedemption::Unusable);
        };
        match self.person(&person_id)? {
            Some(person) => Ok(LinkRedemption::Redeemed { person }),
            None => Ok(LinkRedemption::Unusable),
        }
    }

    fn create_session(&self, session: &NewSession) -> Result<(), Error> {
        self.transaction(Durability::ProcessCrashSafe, |transaction| {
            crate::audited::create_session_in(transaction, session)
        })
    }

    fn session_by_token(&self, token_hash: &TokenHash) -> Result<Option<SessionRecord>, Error> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN people p ON p.id = s.person_id
             WHERE s.token_hash = ?1"
        );
        Ok(self
            .read_records(
                "read session",
                &sql,
                params![token_hash.0.as_slice()],
                row_tuple,
                session_from_row,
            )?
            .into_iter()
            .next())
    }

    fn touch_session(&self, session_id: &str, at: Timestamp) -> Result<(), Error> {
        self.execute(
            Durability::ProcessCrashSafe,
            "UPDATE sessions SET last_used_at = MAX(last_used_at, ?2) WHERE id = ?1",
            params![session_id, at.0],
        )?;
        Ok(())
    }

    fn live_sessions(&self, person_id: &str) -> Result<Vec<SessionRecord>, Error> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN people p ON p.id = s.person_id
             WHERE s.person_id = ?1 AND s.revoked_at IS NULL
             ORDER BY s.created_at DESC, s.id"
        );
        self.read_records(
            "list sessions",
            &sql,
            params![person_id],
            row_tuple,
            session_from_row,
        )
    }

    fn revoke_session(
        &self,
        person_id: &str,
        session_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            revoke_session_in(transaction, person_id, session_id, at)
        })
    }

    fn revoke_sessions_of(&self, person_id: &str, at: Timestamp) -> Result<u64, Error> {
        self.transaction(Durability::Synced, |transaction| {
            revoke_sessions_of_in(transaction, person_id, at)
        })
    }

    fn create_api_key(&self, key: &NewApiKey) -> Result<(), Error> {
        self.transaction(Durability::Synced, |transaction| {
            create_api_key_in(transaction, key)
        })
    }

    fn api_key(&self, key_id: &str) -> Result<Option<ApiKeyRecord>, Error> {
        let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_id = ?1");
        Ok(self
            .read_records(
                "read API key",
                &sql,
                params![key_id],
                row_tuple,
                api_key_from_row,
            )?
            .into_iter()
            .next())
    }

    fn api_keys(&self, account: &AccountId) -> Result<Vec<ApiKeyRecord>, Error> {
        let sql = format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys WHERE account_id = ?1
             ORDER BY created_at, key_id"
        );
        self.read_records(
            "list API keys",
            &sql,
            params![account.as_str()],
            row_tuple,
            api_key_from_row,
        )
    }

    fn touch_api_key(&self, key_id: &str, at: Timestamp) -> Result<(), Error> {
        self.execute(
            Durability::ProcessCrashSafe,
            "UPDATE api_keys SET last_used_at = MAX(COALESCE(last_used_at, ?2), ?2)
             WHERE key_id = ?1",
            params![key_id, at.0],
        )?;
        Ok(())
    }

    fn revoke_api_key(
        &self,
        account: &AccountId,
        key_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            revoke_api_key_in(transaction, account, key_id, at)
        })
    }

    fn create_share_link(&self, link: &NewShareLink) -> Result<(), Error> {
        self.transaction(Durability::Synced, |transaction| {
            create_share_link_in(transaction, link)
        })
    }

    fn share_link_by_token(
        &self,
        token_hash: &TokenHash,
    ) -> Result<Option<ShareLinkRecord>, Error> {
        let sql = format!("SELECT {SHARE_COLUMNS} FROM share_links WHERE token_hash = ?1");
        Ok(self
            .read_records(
                "read share link",
                &sql,
                params![token_hash.0.as_slice()],
                row_tuple,
                share_from_row,
            )?
            .into_iter()
            .next())
    }

    fn share_links(&self, account: &AccountId) -> Result<Vec<ShareLinkRecord>, Error> {
        let sql = format!(
            "SELECT {SHARE_COLUMNS} FROM share_links WHERE account_id = ?1
             ORDER BY created_at DESC, id"
        );
        self.read_records(
            "list share links",
            &sql,
            params![account.as_str()],
            row_tuple,
            share_from_row,
        )
    }

    fn revoke_share_link(
        &self,
        account: &AccountId,
        link_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            revoke_share_link_in(transaction, account, link_id, at)
        })
    }
}
