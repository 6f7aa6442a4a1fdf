//! The workspace's audit entries around a commit (issue 11, finding 4). A workspace is files
//! and a revision log outside the database, so a write and its entry cannot be one
//! transaction: a write appends `workspace.write_intent` first (when that fails, nothing is
//! written), commits, then appends its outcome (`workspace.write`, or
//! `workspace.write_refused`). A process that stops between the commit and the outcome leaves
//! an intent without one; [`recover_workspace_writes`], run at start-up, finds each and
//! records what the revision log shows happened (`workspace.write_recovered`, `committed` with
//! the revision or `not_committed`).
//!
//! An intent names the head revision it was made on (`base`), its author and its paths; the
//! revision that carried it out is the first later one in the log with the same author and
//! paths that no other outcome names (writers are serialised by the workspace's lock, so the
//! revisions after `base` are in commit order).

use std::collections::HashSet;

use serde_json::{Value, json};
use storage::{AccountId, Actor};
use workspace::{Author, Revision};

use crate::handlers::{audit, random_id};
use crate::state::Shared;
use crate::{AppState, Error};

/// The actions of the entries before and after a workspace commit.
const INTENT: &str = "workspace.write_intent";
/// The entries that record an intent's outcome (each carries the intent's id): a file write's,
/// and those of the writes that save definitions (a workflow version, an interview's proposal,
/// an accepted repair), which announce themselves the same way.
const OUTCOMES: [&str; 9] = [
    "workspace.write",
    "workspace.write_refused",
    "workspace.write_recovered",
    "workflow.save",
    "workflow.save_refused",
    "interview.confirmed",
    "interview.confirm_refused",
    "workflow.version",
    "repair.accept_refused",
];

/// Appends the intent of a write by `author` of `paths` on the workspace whose head is
/// `base`, and answers its id; an error means the write must not happen.
pub(crate) fn write_intent(
    shared: &Shared,
    account: &AccountId,
    actor: Actor,
    author: &Author,
    base: Option<&str>,
    paths: &[String],
) -> Result<String, Error> {
    let intent = random_id("wsi")?;
    audit(
        shared,
        account,
        actor,
        INTENT,
        &json!({"intent": intent, "base": base, "author": author, "paths": paths}),
    )?;
    Ok(intent)
}

/// [`write_intent`] on the account's workspace as it is now (its head revision the base):
/// the announcement a write of `paths` by `author` makes before it changes anything.
pub(crate) fn announce(
    shared: &Shared,
    account: &AccountId,
    actor: Actor,
    author: &Author,
    paths: &[String],
) -> Result<String, Error> {
    let workspace = shared
        .engine
        .workspaces()
        .for_account(account)
        .map_err(|source| Error::Workspace {
            operation: "open the workspace",
            source,
        })?;
    let base = workspace
        .latest(1)
        .map_err(|source| Error::Workspace {
            operation: "read the workspace's head revision",
            source,
        })?
        .into_iter()
        .next()
        .map(|revision| revision.id.as_str().to_owned());
    write_intent(shared, account, actor, author, base.as_deref(), paths)
}

fn sorted(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths
}

/// The revision of `history` that carried out the intent `detail`, if the log shows one.
fn carried_out<'a>(
    history: &'a [Revision],
    detail: &Value,
    claimed: &HashSet<String>,
) -> Option<&'a Revision> {
    let start = match detail["base"].as_str() {
        Some(base) => {
            history
                .iter()
                .position(|revision| revision.id.as_str() == base)?
                + 1
        }
        None => 0,
    };
    let paths = sorted(
        detail["paths"]
            .as_array()?
            .iter()
            .filter_map(|path| path.as_str().map(str::to_owned))
            .collect(),
    );
    history.get(start..)?.iter().find(|revision| {
        !claimed.contains(revision.id.as_str())
            && serde_json::to_value(&revision.author).ok().as_ref() == Some(&detail["author"])
            && sorted(
                revision
                    .changes
                    .iter()
                    .map(|change| change.path.clone())
                    .collect(),
            ) == paths
    })
}

/// Records the outcome of every workspace write whose intent has none (a process stopped
/// between its commit and its outcome entry), from what the account's revision log shows.
/// Answers how many it recorded. Run it at start-up, before the server takes requests.
pub fn recover_workspace_writes(state: &AppState) -> Result<usize, Error> {
    let shared = &state.shared;
    let entries = shared
        .store
        .audit_entries()
        .map_err(Error::storage("read the audit log"))?;
    let mut closed = HashSet::new();
    let mut claimed = HashSet::new();
    let mut intents = Vec::new();
    for entry in entries {
        let Some(intent) = entry.detail["intent"].as_str().map(str::to_owned) else {
            continue;
        };
        if entry.action == INTENT {
            intents.push((entry.account, intent, entry.detail));
        } else if OUTCOMES.contains(&entry.action.as_str()) {
            if let Some(revision) = entry.detail["revision"].as_str() {
                claimed.insert(revision.to_owned());
            }
            closed.insert(intent);
        }
    }
    let mut recovered = 0;
    for (account, intent, detail) in intents {
        if closed.contains(&intent) {
            continue;
        }
        let workspace = shared
            .engine
            .workspaces()
            .for_account(&account)
            .map_err(|source| Error::Workspace {
                operation: "open a workspace to recover its writes",
                source,
            })?;
        let history = workspace.history().map_err(|source| Error::Workspace {
            operation: "read a revision log to recover its writes",
            source,
        })?;
        let outcome = match carried_out(&history, &detail, &claimed) {
            Some(revision) => {
                claimed.insert(revision.id.as_str().to_owned());
                json!({"intent": intent, "outcome": "committed", "revision": revision.id.as_str()})
            }
            None => json!({"intent": intent, "outcome": "not_committed"}),
        };
        audit(
            shared,
            &account,
            Actor::Engine,
            "workspace.write_recovered",
            &outcome,
        )?;
        recovered += 1;
    }
    Ok(recovered)
}
