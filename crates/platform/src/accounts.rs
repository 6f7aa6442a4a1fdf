//! An account and its owner, as every door makes them: `stepward accounts create`, the first
//! start of `stepward serve` (the local account's owner) and the console's invitations all
//! create a person with a one-time sign-in link the same way, and record it in the account's
//! audit log with the account's values scrubbed (G16, G25).

use auth::SignInLinkToken;
use redact::ScrubSets;
use serde_json::json;
use storage::people::{NewPerson, NewSignInLink, PeopleChange, PeopleStore, RoleName, TokenHash};
use storage::{
    Account, AccountId, AccountStore, Actor, AuditAction, AuditLog, NewAuditEntry, Timestamp,
};

/// A new account's owner, invited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerInvitation {
    pub person_id: String,
    /// `/welcome/<token>`: print it once; the owner sets a password with it.
    pub sign_in_path: String,
    pub expires_at: Timestamp,
}

/// Who the new owner is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOwner {
    pub display_name: String,
    pub email: String,
}

/// Why an account or its owner was not made; each door says it in its own words.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The store failed, or refused (an account that exists already is
    /// [`storage::Error::AlreadyExists`]).
    #[error("cannot {operation}")]
    Storage {
        operation: &'static str,
        #[source]
        source: storage::Error,
    },
    /// The store's rules for people refused the owner (an account has exactly one owner).
    #[error("the owner was refused: {}", people_change_said(.change))]
    PeopleRefused { change: PeopleChange },
    /// No random bytes for an id or a token.
    #[error("cannot draw random bytes for {what}")]
    Randomness {
        what: &'static str,
        #[source]
        source: auth::Error,
    },
    /// The account's values to scrub the audit entry with cannot be read.
    #[error("cannot read the values of account {account} to scrub the audit entry")]
    Redact {
        account: AccountId,
        #[source]
        source: redact::Error,
    },
}

impl AccountError {
    fn storage(operation: &'static str) -> impl FnOnce(storage::Error) -> AccountError {
        move |source| AccountError::Storage { operation, source }
    }
}

/// A random public id: `<prefix>_` and 16 random bytes in hex (people, sessions, share links).
pub fn public_id(prefix: &str) -> Result<String, auth::Error> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes).map_err(|source| auth::Error::Randomness {
        purpose: "a public id",
        source,
    })?;
    Ok(format!("{prefix}_{}", hex::encode(bytes)))
}

/// A fresh one-time sign-in link for `person_id`, made at `now` and valid for
/// `lifetime_millis`: the token (shown once) and the link as stored (only its hash).
pub fn new_sign_in_link(
    person_id: &str,
    now: Timestamp,
    lifetime_millis: i64,
) -> Result<(SignInLinkToken, NewSignInLink), auth::Error> {
    let (token, token_hash) = SignInLinkToken::generate()?;
    let link = NewSignInLink {
        token_hash: TokenHash(*token_hash.as_bytes()),
        person_id: person_id.to_owned(),
        created_at: now,
        expires_at: Timestamp(now.0.saturating_add(lifetime_millis)),
    };
    Ok((token, link))
}

/// What an owner's invitation needs of the store.
pub trait OwnerStore: AccountStore + PeopleStore + AuditLog {}

impl<T: AccountStore + PeopleStore + AuditLog + ?Sized> OwnerStore for T {}

/// Creates `account` with `owner` as its owner (no password yet) and a one-time sign-in link
/// valid for `link_lifetime_millis`, audited as `account.create` by `operator`. An account
/// that exists already is [`AccountError::Storage`] with [`storage::Error::AlreadyExists`], so
/// an account never gets a second owner this way.
pub fn create_account_with_owner(
    store: &dyn OwnerStore,
    scrub_sets: &ScrubSets,
    account: &Account,
    owner: &NewOwner,
    operator: Actor,
    link_lifetime_millis: i64,
) -> Result<OwnerInvitation, AccountError> {
    store
        .create_account(account)
        .map_err(AccountError::storage("create the account"))?;
    let invited = add_owner(
        store,
        &account.id,
        owner,
        account.created_at,
        link_lifetime_millis,
    )?;
    let detail = json!({
        "account": account.id.as_str(),
        "owner": invited.person_id,
        "email": owner.email,
    });
    audit(
        store,
        scrub_sets,
        &account.id,
        operator,
        AuditAction::AccountCreate,
        &detail,
        account.created_at,
    )?;
    Ok(invited)
}

/// Invites `owner` as the owner of `account`, which exists without anybody in it (the local
/// account `stepward serve` makes on its first start), audited as `account.invite_owner` by
/// `operator`.
pub fn invite_first_owner(
    store: &dyn OwnerStore,
    scrub_sets: &ScrubSets,
    account: &AccountId,
    owner: &NewOwner,
    operator: Actor,
    now: Timestamp,
    link_lifetime_millis: i64,
) -> Result<OwnerInvitation, AccountError> {
    let invited = add_owner(store, account, owner, now, link_lifetime_millis)?;
    let detail = json!({
        "account": account.as_str(),
        "owner": invited.person_id,
        "email": owner.email,
    });
    audit(
        store,
        scrub_sets,
        account,
        operator,
        AuditAction::AccountInviteOwner,
        &detail,
        now,
    )?;
    Ok(invited)
}

/// The owner as a person without a password, and their one-time link.
fn add_owner(
    store: &dyn OwnerStore,
    account: &AccountId,
    owner: &NewOwner,
    now: Timestamp,
    link_lifetime_millis: i64,
) -> Result<OwnerInvitation, AccountError> {
    let person_id = public_id("per").map_err(|source| AccountError::Randomness {
        what: "a person's id",
        source,
    })?;
    let change = store
        .create_person(&NewPerson {
            id: person_id.clone(),
            account: account.clone(),
            display_name: owner.display_name.trim().to_owned(),
            email: owner.email.trim().to_lowercase(),
            role: RoleName::Owner,
            password_hash: None,
            created_at: now,
        })
        .map_err(AccountError::storage("create the owner"))?;
    if change != PeopleChange::Done {
        return Err(AccountError::PeopleRefused { change });
    }
    let (token, link) =
        new_sign_in_link(&person_id, now, link_lifetime_millis).map_err(|source| {
            AccountError::Randomness {
                what: "a sign-in link",
                source,
            }
        })?;
    let expires_at = link.expires_at;
    store
        .create_sign_in_link(&link)
        .map_err(AccountError::storage("store the owner's sign-in link"))?;
    Ok(OwnerInvitation {
        person_id,
        sign_in_path: format!("/welcome/{}", token.reveal_once()),
        expires_at,
    })
}

fn audit(
    store: &dyn OwnerStore,
    scrub_sets: &ScrubSets,
    account: &AccountId,
    operator: Actor,
    action: AuditAction,
    detail: &serde_json::Value,
    at: Timestamp,
) -> Result<(), AccountError> {
    let redactor = scrub_sets
        .for_account(account)
        .map_err(|source| AccountError::Redact {
            account: account.clone(),
            source,
        })?;
    store
        .append_audit(&NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(operator),
            action,
            detail: redactor.scrub_json(detail),
            at,
        })
        .map_err(AccountError::storage("write the audit log"))?;
    Ok(())
}

/// A refused change of people in words.
fn people_change_said(change: &PeopleChange) -> String {
    match change {
        PeopleChange::Done => "it was done".to_owned(),
        PeopleChange::NoSuchPerson { account, person_id } => {
            format!("account {} has no person {person_id}", account.as_str())
        }
        PeopleChange::WouldBreakSingleOwner { account, owners } => format!(
            "account {} would have {owners} owners; an account has exactly one",
            account.as_str()
        ),
        PeopleChange::OwnerOnlyByTransfer { account } => format!(
            "the owner of account {} changes only by a transfer of ownership",
            account.as_str()
        ),
        PeopleChange::KeysChanged { account, person_id } => format!(
            "the API keys of {person_id} in account {} are not the ones listed; look again",
            account.as_str()
        ),
        PeopleChange::NewOwnerNeverSignedIn { account, person_id } => format!(
            "{person_id} of account {} has never signed in, and ownership goes only to a \
             person who has",
            account.as_str()
        ),
        PeopleChange::AlreadySignedIn { account, person_id } => format!(
            "{person_id} of account {} has signed in already and signs in with a password",
            account.as_str()
        ),
    }
}
