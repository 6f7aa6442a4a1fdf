//! People, their credentials and the links that grant access (G24, G26): the rows and the
//! trait every backend implements.
//!
//! Nothing here holds a secret a person could use: passwords are argon2id PHC strings, and
//! every token (sign-in link, session, API key, share link) is kept only as the 32-byte hash
//! the `auth` crate computes. A backend stores these rows verbatim and enforces the rules that
//! must hold under concurrency: a sign-in link is used at most once, an account has exactly
//! one owner once it has people (checked inside the transaction that changes roles), and a
//! revoked session, key or share link stays revoked.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::types::{AccountId, RunId, Timestamp, UnknownName};

/// The role of a person or an API key, by its stored name. The rules about roles live in the
/// `auth` crate; storage only keeps the name and the single-owner invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleName {
    Viewer,
    Member,
    Admin,
    Owner,
}

impl RoleName {
    /// Every role, from the least privileged to the most.
    pub const ALL: [RoleName; 4] = [
        RoleName::Viewer,
        RoleName::Member,
        RoleName::Admin,
        RoleName::Owner,
    ];

    /// Whether the role decides gates (member and above): who an approve link's POST accepts
    /// and who is mailed one (issue 41).
    pub fn decides_gates(self) -> bool {
        self >= RoleName::Member
    }

    /// The stable name stored in rows: `viewer`, `member`, `admin`, `owner`.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Viewer => "viewer",
            RoleName::Member => "member",
            RoleName::Admin => "admin",
            RoleName::Owner => "owner",
        }
    }
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RoleName {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<Self, UnknownName> {
        RoleName::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| UnknownName {
                vocabulary: "role",
                name: text.to_owned(),
            })
    }
}

/// A stored token hash: the SHA-256 the `auth` crate computes for a token. Never the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

/// A person to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPerson {
    pub id: String,
    pub account: AccountId,
    pub display_name: String,
    /// Unique within the account, compared as given (the server lower-cases it first).
    pub email: String,
    pub role: RoleName,
    /// An argon2id PHC string, or `None` until the person sets a password with a sign-in link.
    pub password_hash: Option<String>,
    pub created_at: Timestamp,
}

/// A stored person. The same fields as [`NewPerson`].
pub type PersonRecord = NewPerson;

/// A one-time sign-in link to create (`/welcome/{token}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSignInLink {
    pub token_hash: TokenHash,
    pub person_id: String,
    pub created_at: Timestamp,
    /// The link does nothing at or after this moment.
    pub expires_at: Timestamp,
}

/// A sign-in link that may still be used: unused and not expired at the time asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInLinkRecord {
    pub person: PersonRecord,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// A public id (random, not derived from the token) to list and revoke the session by.
    pub id: String,
    pub token_hash: TokenHash,
    pub person_id: String,
    pub created_at: Timestamp,
    /// The browser it signed in with, in words ("Chrome 131 on Linux"), when it could be named.
    pub browser: Option<String>,
    /// The address it signed in from, when known.
    pub address: Option<String>,
}

/// A stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: String,
    pub token_hash: TokenHash,
    pub person_id: String,
    pub account: AccountId,
    pub created_at: Timestamp,
    pub last_used_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
    /// As [`NewSession`] has them; `None` for a session from before they were kept.
    pub browser: Option<String>,
    pub address: Option<String>,
}

/// An API key to create. The key's secret is never stored, only the hash of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    /// The key's public id (16 hex), also in its text.
    pub key_id: String,
    pub token_hash: TokenHash,
    pub account: AccountId,
    pub role: RoleName,
    pub name: String,
    /// The id of the person who created it (only people create keys). Removing that person
    /// revokes the key, demoting them revokes it when its role is above the new one.
    pub created_by: String,
    pub created_at: Timestamp,
}

/// A stored API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub key_id: String,
    pub token_hash: TokenHash,
    pub account: AccountId,
    pub role: RoleName,
    pub name: String,
    /// The person who created it, or who took it over when its creator was removed; `None`
    /// for a key made before creators were recorded whose creator the audit log does not name.
    pub created_by: Option<String>,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

/// A share link to create: read-only access to one run's scrubbed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewShareLink {
    /// A public id to list and revoke the link by.
    pub id: String,
    pub token_hash: TokenHash,
    pub account: AccountId,
    pub run: RunId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// Whether its page shows agent tool calls' results, not only their names, paths and
    /// outcomes: ticked by the person who made the link, and recorded.
    pub include_tool_results: bool,
    /// Who made it: a person (with their name then) or a key.
    pub created_by: crate::Actor,
}

/// A stored share link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLinkRecord {
    pub id: String,
    pub token_hash: TokenHash,
    pub account: AccountId,
    pub run: RunId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
    pub include_tool_results: bool,
    /// Who made it; `None` for a link from before links kept it.
    pub created_by: Option<crate::Actor>,
}

/// The answer to a change of people or roles. Refusals are answers, not failures: the caller
/// maps each to what the person sees. Nothing was changed unless it is [`PeopleChange::Done`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeopleChange {
    /// The change was committed.
    Done,
    /// No such person in this account.
    NoSuchPerson {
        account: AccountId,
        person_id: String,
    },
    /// The change would leave the account with `owners` owners instead of exactly one.
    WouldBreakSingleOwner { account: AccountId, owners: usize },
    /// The owner role only moves by [`PeopleStore::transfer_ownership`].
    OwnerOnlyByTransfer { account: AccountId },
    /// The person's live keys are not the ones the change was asked for (a key was created,
    /// revoked or re-assigned since the caller looked, or a key to keep is not theirs).
    KeysChanged {
        account: AccountId,
        person_id: String,
    },
    /// Ownership goes only to a person who has signed in at least once (set a password with
    /// their one-time link), so an account never has an owner who cannot sign in.
    NewOwnerNeverSignedIn {
        account: AccountId,
        person_id: String,
    },
    /// A one-time link is re-issued only for a person who has never signed in.
    AlreadySignedIn {
        account: AccountId,
        person_id: String,
    },
}

/// What happens to the live keys a removed person created: every one is listed, either to be
/// revoked or to be kept by `reassign_to` (the person who removes). A removal whose lists are
/// not exactly the person's live keys is refused ([`PeopleChange::KeysChanged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeysOfRemoved<'a> {
    pub revoke: &'a [String],
    pub reassign: &'a [String],
    pub reassign_to: &'a str,
}

/// The answer to redeeming a one-time sign-in link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkRedemption {
    /// The link was marked used and the password set, in one transaction.
    Redeemed { person: PersonRecord },
    /// Unknown, already used, or expired: one answer for all, so callers treat them alike.
    Unusable,
}

/// A change to people, sessions, keys or links that is made together with its audit entry
/// ([`PeopleStore::write_audited`]).
#[derive(Debug, Clone, Copy)]
pub enum PeopleWrite<'a> {
    /// A new person and their one-time sign-in link.
    Invite {
        person: &'a NewPerson,
        link: &'a NewSignInLink,
    },
    /// A role change, and the revocation of the person's live keys above the new role:
    /// `revoke_keys` must be exactly those keys, or the change is refused
    /// ([`PeopleChange::KeysChanged`]).
    ChangeRole {
        account: &'a AccountId,
        person_id: &'a str,
        role: RoleName,
        revoke_keys: &'a [String],
        at: Timestamp,
    },
    TransferOwnership {
        account: &'a AccountId,
        current_owner: &'a str,
        new_owner: &'a str,
    },
    /// A removal: the person's sessions end and their keys are revoked or re-assigned.
    RemovePerson {
        account: &'a AccountId,
        person_id: &'a str,
        keys: KeysOfRemoved<'a>,
        at: Timestamp,
    },
    RevokeSession {
        person_id: &'a str,
        session_id: &'a str,
        at: Timestamp,
    },
    RevokeSessionsOf {
        person_id: &'a str,
        at: Timestamp,
    },
    /// A new one-time sign-in link for a person of `account` who has never signed in; every
    /// other unused link of theirs stops working in the same transaction.
    ReissueSignInLink {
        account: &'a AccountId,
        link: &'a NewSignInLink,
    },
    CreateApiKey(&'a NewApiKey),
    RevokeApiKey {
        account: &'a AccountId,
        key_id: &'a str,
        at: Timestamp,
    },
    CreateShareLink(&'a NewShareLink),
    RevokeShareLink {
        account: &'a AccountId,
        link_id: &'a str,
        at: Timestamp,
    },
    /// A session of a person who signed in.
    CreateSession(&'a NewSession),
    /// A one-time sign-in link redeemed (single use: of two racing redemptions only one finds
    /// it unused) with the person's new password, and their first session.
    RedeemSignInLink {
        token_hash: &'a TokenHash,
        password_hash: &'a str,
        session: &'a NewSession,
        at: Timestamp,
    },
    /// The account's default model provider (`Written::Revoked(false)`: there is none by that
    /// name).
    SetDefaultModelProvider {
        account: &'a AccountId,
        name: &'a str,
        at: Timestamp,
    },
    /// How many times the account's supervisor may retry one step (`None`: the default).
    SetSupervisorRetries {
        account: &'a AccountId,
        retries: Option<u32>,
    },
}

/// What a [`PeopleWrite`] did. The audit entry was written exactly when [`Written::took_effect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Invite, role change, transfer, removal: refused (nothing changed) or done.
    People(PeopleChange),
    /// A revocation of one session, key or link: whether a live one was revoked.
    Revoked(bool),
    /// Revoking every session of a person: how many (0 is still an action taken).
    RevokedCount(u64),
    /// A key or share link was created.
    Created,
}

impl Written {
    /// Whether the change was made (and so its audit entry written).
    pub fn took_effect(&self) -> bool {
        match self {
            Written::People(change) => *change == PeopleChange::Done,
            Written::Revoked(revoked) => *revoked,
            Written::RevokedCount(_) | Written::Created => true,
        }
    }
}

/// People, sessions, API keys, sign-in links and share links.
pub trait PeopleStore: Send + Sync {
    /// Makes `write` and appends `entry` in one transaction: both commit, or neither does. An
    /// entry that cannot be written refuses the change (the error is returned and nothing is
    /// changed); a write that is refused or finds nothing to change writes no entry either.
    fn write_audited(
        &self,
        write: PeopleWrite<'_>,
        entry: &crate::NewAuditEntry,
    ) -> Result<Written, Error>;

    /// Creates a person. The first person of an account must be its owner, and no later person
    /// can be (the owner role only moves by transfer), so an account with people always has
    /// exactly one owner. An existing id or email in the account is [`Error::AlreadyExists`].
    fn create_person(&self, person: &NewPerson) -> Result<PeopleChange, Error>;
    fn person(&self, id: &str) -> Result<Option<PersonRecord>, Error>;
    fn person_by_email(
        &self,
        account: &AccountId,
        email: &str,
    ) -> Result<Option<PersonRecord>, Error>;
    /// The people of an account, oldest first.
    fn people(&self, account: &AccountId) -> Result<Vec<PersonRecord>, Error>;
    /// Changes a person's role to `role`, neither of them the owner, revoking at `at` every
    /// live key the person created whose role is above `role`.
    fn change_role(
        &self,
        account: &AccountId,
        person_id: &str,
        role: RoleName,
        at: Timestamp,
    ) -> Result<PeopleChange, Error>;
    /// Makes `new_owner` the owner and the current owner an admin, in one transaction that
    /// checks the account ends with exactly one owner.
    fn transfer_ownership(
        &self,
        account: &AccountId,
        current_owner: &str,
        new_owner: &str,
    ) -> Result<PeopleChange, Error>;
    /// Removes a person who is not the owner, revoking their sessions and every key they
    /// created at `at`.
    fn remove_person(
        &self,
        account: &AccountId,
        person_id: &str,
        at: Timestamp,
    ) -> Result<PeopleChange, Error>;

    fn create_sign_in_link(&self, link: &NewSignInLink) -> Result<(), Error>;
    /// Creates `link` and, in the same transaction, ends every other link of its person that
    /// could still be used (they stop working at `link.created_at`): the one link printed last
    /// is the only one that works. Returns how many earlier links were ended.
    fn replace_sign_in_links(&self, link: &NewSignInLink) -> Result<u64, Error>;
    /// The link with this hash if it is unused and not expired at `now`; looking does not use it.
    fn usable_sign_in_link(
        &self,
        token_hash: &TokenHash,
        now: Timestamp,
    ) -> Result<Option<SignInLinkRecord>, Error>;
    /// Uses the link (at most once, also when two requests race) and sets the person's
    /// password hash, in one transaction.
    fn redeem_sign_in_link(
        &self,
        token_hash: &TokenHash,
        password_hash: &str,
        now: Timestamp,
    ) -> Result<LinkRedemption, Error>;

    fn create_session(&self, session: &NewSession) -> Result<(), Error>;
    /// The session with this token hash, revoked or not (the caller checks).
    fn session_by_token(&self, token_hash: &TokenHash) -> Result<Option<SessionRecord>, Error>;
    /// Records a request on a live session.
    fn touch_session(&self, session_id: &str, at: Timestamp) -> Result<(), Error>;
    /// The person's sessions that are not revoked, newest first.
    fn live_sessions(&self, person_id: &str) -> Result<Vec<SessionRecord>, Error>;
    /// Revokes one session of this person; `false` if there was no such live session.
    fn revoke_session(
        &self,
        person_id: &str,
        session_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error>;
    /// Revokes every live session of this person (by themselves or an admin); how many.
    fn revoke_sessions_of(&self, person_id: &str, at: Timestamp) -> Result<u64, Error>;

    fn create_api_key(&self, key: &NewApiKey) -> Result<(), Error>;
    fn api_key(&self, key_id: &str) -> Result<Option<ApiKeyRecord>, Error>;
    /// The account's keys, revoked ones included, oldest first.
    fn api_keys(&self, account: &AccountId) -> Result<Vec<ApiKeyRecord>, Error>;
    fn touch_api_key(&self, key_id: &str, at: Timestamp) -> Result<(), Error>;
    /// Revokes a key of this account; `false` if there was no such live key.
    fn revoke_api_key(
        &self,
        account: &AccountId,
        key_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error>;

    fn create_share_link(&self, link: &NewShareLink) -> Result<(), Error>;
    /// The share link with this token hash, expired or revoked or not (the caller checks).
    fn share_link_by_token(&self, token_hash: &TokenHash)
    -> Result<Option<ShareLinkRecord>, Error>;
    /// The account's share links, newest first.
    fn share_links(&self, account: &AccountId) -> Result<Vec<ShareLinkRecord>, Error>;
    /// Revokes a share link of this account; `false` if there was no such live link.
    fn revoke_share_link(
        &self,
        account: &AccountId,
        link_id: &str,
        at: Timestamp,
    ) -> Result<bool, Error>;
}
