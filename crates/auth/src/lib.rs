//! Who may do what, and the tokens that prove who someone is: the pure core of the server's
//! security (G24, G25, G26). No IO, no HTTP, no SQL: plain types and functions that the server,
//! the CLI and storage call.
//!
//! - [`role`](crate::Role): the four roles, [`Principal`] (a person or an API key, never one
//!   posing as the other), and the rules for granting, changing and removing roles and for
//!   handing over ownership.
//! - [`policy_table`]: every route with the least access it needs, in one place, and
//!   [`authorize`], the one function that answers a request (another account is always "not
//!   found").
//! - Approve links ([`approve_token`], [`verify_approve_token`]): an HMAC over the
//!   length-prefixed gate under a key of its own, never stored, killed by rotation.
//! - Share links ([`ShareToken`]), sessions ([`SessionToken`], [`session_cookie`],
//!   [`SessionLifetime`], [`CsrfToken`]), one-time sign-in links ([`SignInLinkToken`]) and API
//!   keys ([`ApiKeySecret`]): random tokens shown once and stored only as hashes.
//! - Passwords ([`hash_password`], [`verify_password`]): argon2id.
//! - Sign-in rate limiting ([`RateLimiter`]) with the clock passed in.
//!
//! Every secret (keys, tokens) lives in a type that derives nothing and is zeroized on drop; its
//! text comes out once (`reveal_once`) or through a `dangerously_`-named call. Every comparison
//! of a secret with a presented value is constant-time.

#![forbid(unsafe_code)]

mod approve;
mod csrf;
mod error;
mod keys;
mod password;
mod policy;
mod random;
mod rate_limit;
mod role;
mod tokens;

pub use crate::approve::{ApproveLinkKey, KeyRing, LinkError, approve_token, verify_approve_token};
pub use crate::csrf::{CsrfKey, CsrfToken, verify_csrf};
pub use crate::error::Error;
pub use crate::keys::KeyId;
pub use crate::password::{
    MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, PasswordHash, PasswordMemory, check_new_password,
    hash_password, hash_password_with, verify_password, verify_password_for_unknown_person,
    verify_password_for_unknown_person_with, verify_password_with,
};
pub use crate::policy::{
    Access, Caller, Decision, RoutePolicy, TokenRoute, authorize, find_policy, policy_table,
};
pub use crate::rate_limit::{Attempt, RateDecision, RateLimit, RateLimiter, sign_in_key};
pub use crate::role::{
    AccountPerson, Actor, ActorKind, Denied, OwnerCount, OwnershipTransfer, Principal, Role,
    RoleChange, UnknownRole, can_change_role, can_grant, can_remove, can_start_session,
    check_single_owner, transfer_ownership,
};
pub use crate::tokens::{
    ApiKeyHash, ApiKeySecret, Malformed, Mismatch, SHARE_NOT_FOUND_BODY,
    SHARE_NOT_FOUND_CONTENT_TYPE, SessionLifetime, SessionState, SessionToken, SessionTokenHash,
    ShareToken, ShareTokenHash, SignInLinkToken, SignInLinkTokenHash, StoredApiKey, TlsMode,
    clear_session_cookie, session_cookie, session_cookie_name,
};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
