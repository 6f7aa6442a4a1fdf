//! What the binary needs around the router: creating an account with its owner and the owner's
//! one-time sign-in link (first start, `stepward accounts create`), and serving the router on
//! a listener with the remote address recorded, bounded connections and a graceful shutdown
//! with a deadline.

use std::future::Future;

use auth::SignInLinkToken;
use redact::ScrubSets;
use serde_json::json;
use storage::people::{NewPerson, NewSignInLink, TokenHash};
use storage::{Account, Actor, NewAuditEntry, Timestamp};

use crate::listener::{ListenerLimits, Transport, serve_connections};
use crate::{AppState, Error, ServerStore};

/// A fresh one-time sign-in link for `person_id`, made at `now` and valid for
/// `lifetime_millis`: the token (shown once) and the link as stored (only its hash).
pub(crate) fn new_sign_in_link(
    person_id: &str,
    now: Timestamp,
    lifetime_millis: i64,
) -> Result<(SignInLinkToken, NewSignInLink), Error> {
    let (token, token_hash) =
        SignInLinkToken::generate().map_err(Error::auth("create a sign-in link"))?;
    let link = NewSignInLink {
        token_hash: TokenHash(*token_hash.as_bytes()),
        person_id: person_id.to_owned(),
        created_at: now,
        expires_at: Timestamp(now.0.saturating_add(lifetime_millis)),
    };
    Ok((token, link))
}

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

/// Creates `account` with `owner` as its owner (no password yet) and a one-time sign-in link
/// valid for `link_lifetime_millis`, and audits it as done by `operator` (the CLI user). An
/// account that exists already is [`storage::Error::AlreadyExists`], so an account never gets a
/// second owner this way.
pub fn create_account_with_owner(
    store: &dyn ServerStore,
    scrub_sets: &ScrubSets,
    account: &Account,
    owner: &NewOwner,
    operator: Actor,
    link_lifetime_millis: i64,
) -> Result<OwnerInvitation, Error> {
    store
        .create_account(account)
        .map_err(Error::storage_or_conflict("create an account"))?;
    let person_id = crate::handlers::random_id("per")?;
    let now = account.created_at;
    let change = store
        .create_person(&NewPerson {
            id: person_id.clone(),
            account: account.id.clone(),
            display_name: owner.display_name.trim().to_owned(),
            email: owner.email.trim().to_lowercase(),
            role: storage::people::RoleName::Owner,
            password_hash: None,
            created_at: now,
        })
        .map_err(Error::storage_or_conflict("create the owner"))?;
    if change != storage::people::PeopleChange::Done {
        return Err(Error::PeopleRefused {
            operation: "create the owner",
            answer: format!("{change:?}"),
        });
    }
    let (token, link) = new_sign_in_link(&person_id, now, link_lifetime_millis)?;
    let expires_at = link.expires_at;
    store
        .create_sign_in_link(&link)
        .map_err(Error::storage("create a sign-in link"))?;
    let redactor = scrub_sets
        .for_account(&account.id)
        .map_err(|source| Error::Redact {
            account: account.id.to_string(),
            source,
        })?;
    store
        .append_audit(&NewAuditEntry {
            account: account.id.clone(),
            run: None,
            actor: redactor.scrub_fields(operator),
            action: "account.create",
            detail: redactor.scrub_json(&json!({
                "account": account.id.as_str(),
                "owner": person_id,
                "email": owner.email,
            })),
            at: now,
        })
        .map_err(Error::storage("append audit entry"))?;
    Ok(OwnerInvitation {
        person_id,
        sign_in_path: format!("/welcome/{}", token.reveal_once()),
        expires_at,
    })
}

/// Serves the router over plain HTTP on `listener` until `shutdown` completes (or the listener
/// fails for good: that error is returned), then lets requests in flight finish for at most
/// `limits.shutdown_deadline` and drops what is still open. Every connection is bounded (see
/// [`ListenerLimits`]): a request head must arrive within the header-read deadline (also on an
/// idle keep-alive connection), and connections over the global or per-address cap are closed
/// at once. The remote address of each connection is recorded, so the sign-in limit applies
/// per address.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ListenerLimits,
) -> std::io::Result<()> {
    serve_connections(listener, Transport::Plain, state, shutdown, limits).await
}
