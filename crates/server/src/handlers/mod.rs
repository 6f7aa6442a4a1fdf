//! The route handlers, and what they share: the scope check, audit entries scrubbed for the
//! account, blocking work off the async threads, and random ids.

pub(crate) mod admin;
pub(crate) mod approve;
pub(crate) mod assets;
pub(crate) mod audit;
pub(crate) mod audit_page;
pub(crate) mod audit_sentence;
pub(crate) mod console;
pub(crate) mod files;
pub(crate) mod gate_view;
pub(crate) mod home;
pub(crate) mod interview;
pub(crate) mod interview_page;
pub(crate) mod keys;
pub(crate) mod live;
pub(crate) mod models;
pub(crate) mod people;
pub(crate) mod person_actions;
pub(crate) mod repairs;
pub(crate) mod run_view;
pub(crate) mod runs;
pub(crate) mod sessions;
pub(crate) mod shares;
pub(crate) mod sign_in_from;
pub(crate) mod signin;
pub(crate) mod supervisor;
pub(crate) mod tool_tests;
pub(crate) mod value_view;
pub(crate) mod vault;
pub(crate) mod vault_page;
pub(crate) mod workflow_versions;
pub(crate) mod workflow_versions_page;
pub(crate) mod workflows;

use redact::Redactor;
use storage::{AccountId, Actor, NewAuditEntry};

use crate::Error;
use crate::authn::Authenticated;
use crate::state::Shared;

/// The scope check every handler makes on the resource it names: a resource of another account
/// is answered exactly as one that does not exist.
pub(crate) fn ensure_same_account(
    authenticated: &Authenticated,
    resource_account: &AccountId,
    what: &'static str,
    id: &str,
) -> Result<(), Error> {
    if resource_account == authenticated.principal.account_id() {
        Ok(())
    } else {
        Err(Error::NotFound {
            what,
            id: id.to_owned(),
        })
    }
}

/// The account's people's names by their id: what a page shows where a record holds a
/// person's id (issue 42, point 6).
pub(crate) fn names_by_id(
    people: &[storage::people::PersonRecord],
) -> std::collections::HashMap<String, String> {
    people
        .iter()
        .map(|person| (person.id.clone(), person.display_name.clone()))
        .collect()
}

/// Every value of `account` (the engine's live set), to scrub what leaves for it (answers,
/// audit details) and to screen what it writes.
pub(crate) fn account_redactor(shared: &Shared, account: &AccountId) -> Result<Redactor, Error> {
    shared
        .engine
        .scrub_sets()
        .for_account(account)
        .map_err(|source| Error::Redact {
            account: account.to_string(),
            source,
        })
}

/// Appends an audit entry of `account` that belongs to no run, its detail scrubbed with the
/// account's values (`ScrubSets::for_account`).
pub(crate) fn audit(
    shared: &Shared,
    account: &AccountId,
    actor: Actor,
    action: storage::AuditAction,
    detail: &serde_json::Value,
) -> Result<(), Error> {
    let redactor = account_redactor(shared, account)?;
    shared
        .store
        .append_audit(&NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(actor),
            action,
            detail: redactor.scrub_json(detail),
            at: shared.now(),
        })
        .map_err(Error::storage("append audit entry"))?;
    Ok(())
}

/// Makes a change to people, sessions, keys or links together with its audit entry, in one
/// transaction: when the entry cannot be written (the redactor cannot be built, or the append
/// fails), the change is refused and nothing is changed. A refused write (nothing to change)
/// writes no entry and is returned for the caller to answer.
pub(crate) fn audited_write(
    shared: &Shared,
    operation: &'static str,
    audited: Audited<'_>,
    write: storage::people::PeopleWrite<'_>,
) -> Result<storage::people::Written, Error> {
    let redactor = account_redactor(shared, audited.account)?;
    shared
        .store
        .write_audited(
            write,
            &NewAuditEntry {
                account: audited.account.clone(),
                run: None,
                actor: redactor.scrub_fields(audited.actor),
                action: audited.action,
                detail: redactor.scrub_json(audited.detail),
                at: shared.now(),
            },
        )
        .map_err(Error::storage_or_conflict(operation))
}

/// The audit entry of an [`audited_write`]: under which account, by whom, what.
pub(crate) struct Audited<'a> {
    pub(crate) account: &'a AccountId,
    pub(crate) actor: Actor,
    pub(crate) action: storage::AuditAction,
    pub(crate) detail: &'a serde_json::Value,
}

/// Runs CPU-heavy or long work (password hashing, the engine) on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    operation: &'static str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|source| Error::Blocking { operation, source })
}

/// A random public id (`<prefix>_` and 16 random bytes in hex), for sessions and share links.
pub(crate) fn random_id(prefix: &str) -> Result<String, Error> {
    platform::accounts::public_id(prefix).map_err(Error::auth("generate a public id"))
}

/// `202 Accepted`: the request was recorded and its run's steps are queued for the workers;
/// `Location` is the run's address, where its progress is read.
pub(crate) type Accepted<T> = (
    axum::http::StatusCode,
    [(axum::http::header::HeaderName, String); 1],
    axum::Json<T>,
);

/// [`Accepted`] for the run `run`, answering `body`.
pub(crate) fn accepted<T>(run: &str, body: T) -> Accepted<T> {
    (
        axum::http::StatusCode::ACCEPTED,
        [(axum::http::header::LOCATION, format!("/api/runs/{run}"))],
        axum::Json(body),
    )
}
