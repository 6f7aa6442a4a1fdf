//! The four roles of an account, who acts (a person or an API key), and the rules for granting,
//! changing and removing roles (G26).
//!
//! The rules, each enforced by one function here so that the server and the CLI share them:
//! - Only an admin or the owner manages roles and keys, and no one grants a role above their own
//!   ([`can_grant`]). A key is held to the role it carries, so a key cannot create a key, nor
//!   grant a role, above its own.
//! - The owner role is never granted: it moves only by [`transfer_ownership`], which only the
//!   owner, signed in as a person, can do, and which yields both role changes at once so that
//!   storage applies them in one transaction and the account keeps exactly one owner.
//! - The owner can never be removed nor demoted except by that transfer ([`can_change_role`],
//!   [`can_remove`]).
//! - An API key never acts as a person: [`Principal::actor`] of a key is the key, and a key
//!   cannot mint a session ([`can_start_session`]).

use std::fmt;
use std::str::FromStr;

use storage::AccountId;

/// The role of a person or an API key within one account, ordered by privilege:
/// `Viewer < Member < Admin < Owner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Reads workflows, runs and their records.
    Viewer,
    /// A viewer who also starts runs, decides gates, lists vault names and creates share links.
    Member,
    /// A member who also writes the vault and manages people, roles, keys, and reads the audit
    /// log.
    Admin,
    /// The one admin who can hand the account over. Exactly one per account.
    Owner,
}

impl Role {
    /// Every role, from the least privileged to the most.
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Member, Role::Admin, Role::Owner];

    /// The role's name as stored and shown: `viewer`, `member`, `admin`, `owner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Member => "member",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A role name that is none of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a role; the roles are viewer, member, admin and owner")]
pub struct UnknownRole {
    /// The text that was given.
    pub text: String,
}

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| UnknownRole {
                text: text.to_owned(),
            })
    }
}

/// Who is making a request, once its credentials checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A person signed in with a session.
    Person {
        person_id: String,
        account_id: AccountId,
        role: Role,
    },
    /// An API key. It carries its own role and never acts as the person who created it.
    ApiKey {
        key_id: String,
        account_id: AccountId,
        role: Role,
    },
}

impl Principal {
    /// The account the principal belongs to; it can reach nothing of any other account.
    pub fn account_id(&self) -> &AccountId {
        match self {
            Principal::Person { account_id, .. } | Principal::ApiKey { account_id, .. } => {
                account_id
            }
        }
    }

    /// The principal's role in its account.
    pub fn role(&self) -> Role {
        match self {
            Principal::Person { role, .. } | Principal::ApiKey { role, .. } => *role,
        }
    }

    /// Who is recorded as having done what this principal does: the person, or the key itself
    /// (never the person who created the key).
    pub fn actor(&self) -> Actor<'_> {
        match self {
            Principal::Person { person_id, .. } => Actor::Person { person_id },
            Principal::ApiKey { key_id, .. } => Actor::ApiKey { key_id },
        }
    }
}

/// The author recorded for an action (in the audit log, on a decision, on a revision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'principal> {
    /// A person, by id.
    Person { person_id: &'principal str },
    /// An API key, by id.
    ApiKey { key_id: &'principal str },
}

/// Why a role rule refused an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// Only an admin or the owner manages people, roles and keys.
    #[error("managing people, roles and keys needs the admin role; this {actor_kind} is a {role}")]
    NeedsAdmin { actor_kind: ActorKind, role: Role },
    /// No one grants a role above their own.
    #[error("a {granter} cannot grant the {role} role, which is above its own")]
    AboveOwnRole { granter: Role, role: Role },
    /// No one changes or removes someone whose role is above their own.
    #[error("a {actor} cannot change or remove a {target}, whose role is above its own")]
    TargetAboveOwnRole { actor: Role, target: Role },
    /// The owner role moves only by transfer, so an account never has two owners.
    #[error("the owner role is never granted; the owner hands it over by transferring ownership")]
    OwnershipOnlyByTransfer,
    /// Only the owner, signed in as a person, transfers ownership.
    #[error("only the owner, signed in as a person, can transfer ownership")]
    OnlyTheOwnerTransfers,
    /// Ownership goes to another person of the same account.
    #[error("ownership can only go to another person of the same account")]
    TransferTargetInvalid,
    /// The owner is removed or demoted only by transferring ownership first.
    #[error("the owner cannot be removed or demoted; transfer ownership first")]
    OwnerIsPermanent,
    /// An API key cannot mint a session.
    #[error("an API key cannot start a session; a person signs in")]
    KeyCannotStartSession,
    /// The target belongs to another account.
    #[error("the target belongs to another account")]
    AnotherAccount,
}

/// Whether a principal is a person or a key, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorKind {
    Person,
    ApiKey,
}

impl fmt::Display for ActorKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            ActorKind::Person => "person",
            ActorKind::ApiKey => "API key",
        })
    }
}

fn actor_kind(principal: &Principal) -> ActorKind {
    match principal {
        Principal::Person { .. } => ActorKind::Person,
        Principal::ApiKey { .. } => ActorKind::ApiKey,
    }
}

fn require_admin(principal: &Principal) -> Result<(), Denied> {
    if principal.role() >= Role::Admin {
        Ok(())
    } else {
        Err(Denied::NeedsAdmin {
            actor_kind: actor_kind(principal),
            role: principal.role(),
        })
    }
}

/// May `granter` give `role` to someone: invite a person with it, raise a person to it, or
/// create an API key carrying it? Only admins and the owner grant, never above their own role,
/// and never the owner role (that moves only by [`transfer_ownership`]). A key is held to the
/// role it carries, so a key never creates a key above its own role.
pub fn can_grant(granter: &Principal, role: Role) -> Result<(), Denied> {
    if role == Role::Owner {
        return Err(Denied::OwnershipOnlyByTransfer);
    }
    require_admin(granter)?;
    if role > granter.role() {
        return Err(Denied::AboveOwnRole {
            granter: granter.role(),
            role,
        });
    }
    Ok(())
}

/// May `changer` change the role of a person of `target_account` from `current` to `new`?
/// The owner is never demoted this way and no one becomes owner this way (both only by
/// [`transfer_ownership`]); no one changes someone above themselves or grants above themselves.
pub fn can_change_role(
    changer: &Principal,
    target_account: &AccountId,
    current: Role,
    new: Role,
) -> Result<(), Denied> {
    if changer.account_id() != target_account {
        return Err(Denied::AnotherAccount);
    }
    if current == Role::Owner {
        return Err(Denied::OwnerIsPermanent);
    }
    can_grant(changer, new)?;
    if current > changer.role() {
        return Err(Denied::TargetAboveOwnRole {
            actor: changer.role(),
            target: current,
        });
    }
    Ok(())
}

/// May `remover` remove a person, or revoke a key, of `target_account` holding `target_role`?
/// The owner is never removed; no one removes someone above themselves.
pub fn can_remove(
    remover: &Principal,
    target_account: &AccountId,
    target_role: Role,
) -> Result<(), Denied> {
    if remover.account_id() != target_account {
        return Err(Denied::AnotherAccount);
    }
    if target_role == Role::Owner {
        return Err(Denied::OwnerIsPermanent);
    }
    require_admin(remover)?;
    if target_role > remover.role() {
        return Err(Denied::TargetAboveOwnRole {
            actor: remover.role(),
            target: target_role,
        });
    }
    Ok(())
}

/// May this principal start a session (sign in, or mint a sign-in link for itself)? Only a
/// person: a key never turns into a person's session.
pub fn can_start_session(principal: &Principal) -> Result<(), Denied> {
    match principal {
        Principal::Person { .. } => Ok(()),
        Principal::ApiKey { .. } => Err(Denied::KeyCannotStartSession),
    }
}

/// A person of an account, as the target of an ownership transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPerson {
    pub person_id: String,
    pub account_id: AccountId,
    pub role: Role,
}

/// One person's role going from one value to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleChange {
    pub person_id: String,
    pub from: Role,
    pub to: Role,
}

/// The two role changes of an ownership transfer. Storage applies both in one transaction (and
/// may check [`check_single_owner`] before committing), so the account has exactly one owner
/// before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnershipTransfer {
    /// The current owner becomes an admin.
    pub previous_owner: RoleChange,
    /// The new owner, whatever their role was, becomes the owner.
    pub new_owner: RoleChange,
}

/// Hands ownership from `current_owner` (the owner, signed in as a person) to `new_owner`
/// (another person of the same account). The previous owner becomes an admin.
pub fn transfer_ownership(
    current_owner: &Principal,
    new_owner: &AccountPerson,
) -> Result<OwnershipTransfer, Denied> {
    let Principal::Person {
        person_id,
        account_id,
        role: Role::Owner,
    } = current_owner
    else {
        return Err(Denied::OnlyTheOwnerTransfers);
    };
    if new_owner.account_id != *account_id
        || new_owner.person_id == *person_id
        || new_owner.role == Role::Owner
    {
        return Err(Denied::TransferTargetInvalid);
    }
    Ok(OwnershipTransfer {
        previous_owner: RoleChange {
            person_id: person_id.clone(),
            from: Role::Owner,
            to: Role::Admin,
        },
        new_owner: RoleChange {
            person_id: new_owner.person_id.clone(),
            from: new_owner.role,
            to: Role::Owner,
        },
    })
}

/// An account's roles do not hold exactly one owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an account must have exactly one owner; these roles have {owners}")]
pub struct OwnerCount {
    /// How many owners there are.
    pub owners: usize,
}

/// Checks that the roles of one account's people hold exactly one owner: storage runs this
/// over the account's people before committing any role change.
pub fn check_single_owner(roles: impl IntoIterator<Item = Role>) -> Result<(), OwnerCount> {
    let owners = roles
        .into_iter()
        .filter(|role| *role == Role::Owner)
        .count();
    if owners == 1 {
        Ok(())
    } else {
        Err(OwnerCount { owners })
    }
}
