//! The workspace's audit entries around a commit (issue 11, finding 4; in one place for every
//! door since issue 37). A workspace is files and a revision log outside the database, so a
//! write and its entry cannot be one transaction: a write appends `workspace.write_intent`
//! first (when that fails, nothing is written), commits, then appends its outcome
//! (`workspace.write`, or `workspace.write_refused`). A process that stops between the commit
//! and the outcome leaves an intent without one; [`Engine::recover_workspace_writes`], run
//! wherever a process opens the data (the CLI's every command, `serve` before it takes
//! requests), finds each and records what the revision log shows happened
//! (`workspace.write_recovered`, `committed` with the revision or `not_committed`).
//!
//! An intent names the head revision it was made on (`base`), its author and its paths; the
//! revision that carried it out is the first later one in the log with the same author and
//! paths that no other outcome names (writers are serialised by the workspace's lock, so the
//! revisions after `base` are in commit order).

use std::collections::HashSet;

use serde_json::{Value, json};
use storage::{AccountId, Actor, AuditAction, NewAuditEntry};
use workspace::{Author, Revision, WriteInFlight};

use crate::Error;
use crate::engine::Engine;

/// The action of the entry before a workspace commit.
pub const WRITE_INTENT: AuditAction = AuditAction::WorkspaceWriteIntent;
/// The action of the entry that settles an intent a stopped process left open.
pub const WRITE_RECOVERED: AuditAction = AuditAction::WorkspaceWriteRecovered;
/// The entries that record an intent's outcome (each carries the intent's id): a file write's,
/// and those of the writes that save definitions (a workflow version, an interview's proposal,
/// an accepted repair), which announce themselves the same way.
pub const WRITE_OUTCOMES: [AuditAction; 9] = [
    AuditAction::WorkspaceWrite,
    AuditAction::WorkspaceWriteRefused,
    WRITE_RECOVERED,
    AuditAction::WorkflowSave,
    AuditAction::WorkflowSaveRefused,
    AuditAction::InterviewConfirmed,
    AuditAction::InterviewConfirmRefused,
    AuditAction::WorkflowVersion,
    AuditAction::RepairAcceptRefused,
];

/// A write announced in the audit log: its intent's id (which the write's outcome entry
/// carries), and the workspace's writes lock, held shared until this is dropped, so that no
/// recovery settles the intent while its writer is still at work. Keep it until the outcome
/// entry is written.
pub struct AnnouncedWrite {
    pub intent: String,
    _in_flight: WriteInFlight,
}

/// An intent without an outcome: its account, its id and its detail as recorded.
struct OpenIntent {
    account: AccountId,
    intent: String,
    detail: Value,
}

/// What [`Engine::recover_workspace_writes`] did.
#[derive(Debug, Default)]
pub struct WritesRecovered {
    /// Intents whose outcome it recorded.
    pub recorded: usize,
    /// Accounts it left for the next process: a writer of theirs was at work.
    pub busy: usize,
    /// Accounts whose intents could not be settled, and why; the others were.
    pub failed: Vec<(AccountId, String)>,
}

impl Engine {
    /// Appends the intent of a write of `paths` by `author` to `account`'s workspace, on its
    /// head revision as it is now, and answers it with the workspace's writes lock held; an
    /// error means the write must not happen.
    pub fn announce_workspace_write(
        &self,
        account: &AccountId,
        actor: Actor,
        author: &Author,
        paths: &[String],
    ) -> Result<AnnouncedWrite, Error> {
        let workspace = self.options.workspaces.for_account(account)?;
        // Taken before the intent exists: a recovery never sees this intent unlocked.
        let in_flight = workspace.writing()?;
        let base = workspace
            .latest(1)?
            .into_iter()
            .next()
            .map(|revision| revision.id.as_str().to_owned());
        let intent = intent_id()?;
        self.append_workspace_entry(
            account,
            actor,
            WRITE_INTENT,
            &json!({"intent": intent, "base": base, "author": author, "paths": paths}),
        )?;
        Ok(AnnouncedWrite {
            intent,
            _in_flight: in_flight,
        })
    }

    /// Records the outcome of every workspace write whose intent has none (a process stopped
    /// between its commit and its outcome entry), from what the account's revision log shows.
    /// An account one of whose writers is at work is left for the next process; an account
    /// whose workspace cannot be read is said, and the others are settled.
    pub fn recover_workspace_writes(&self) -> Result<WritesRecovered, Error> {
        let mut done = WritesRecovered::default();
        let accounts: Vec<AccountId> = self
            .open_intents_and_claimed()?
            .0
            .into_iter()
            .map(|open| open.account)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for account in accounts {
            match self.settle_account(&account) {
                Ok(Some(recorded)) => done.recorded += recorded,
                Ok(None) => done.busy += 1,
                Err(error) => done.failed.push((account, crate::with_causes(&error))),
            }
        }
        Ok(done)
    }

    /// Settles `account`'s open intents under its writes lock; `None` when a writer holds it.
    fn settle_account(&self, account: &AccountId) -> Result<Option<usize>, Error> {
        let workspace = self.options.workspaces.for_account(account)?;
        let Some(_settling) = workspace.settling()? else {
            return Ok(None);
        };
        // Read again under the lock: another process may have settled them meanwhile.
        let (open, mut claimed) = self.open_intents_and_claimed()?;
        let history = workspace.history()?;
        let mut recorded = 0;
        for OpenIntent { intent, detail, .. } in
            open.into_iter().filter(|open| open.account == *account)
        {
            let outcome = match carried_out(&history, &detail, &claimed) {
                Some(revision) => {
                    claimed.insert(revision.id.as_str().to_owned());
                    json!({"intent": intent, "outcome": "committed", "revision": revision.id.as_str()})
                }
                None => json!({"intent": intent, "outcome": "not_committed"}),
            };
            self.append_workspace_entry(account, Actor::Engine, WRITE_RECOVERED, &outcome)?;
            recorded += 1;
        }
        Ok(Some(recorded))
    }

    /// The intents without an outcome, and every revision an outcome already names (with an
    /// intent or without one: a revision is carried out once).
    fn open_intents_and_claimed(&self) -> Result<(Vec<OpenIntent>, HashSet<String>), Error> {
        // Read by their stored names, legacy ones too (there are none of these yet).
        let actions: Vec<&str> = std::iter::once(WRITE_INTENT)
            .chain(WRITE_OUTCOMES)
            .flat_map(|action| {
                std::iter::once(action.as_str()).chain(action.legacy_names().iter().copied())
            })
            .collect();
        let entries = self.store.audit_entries_of_actions(&actions)?;
        let mut closed = HashSet::new();
        let mut claimed = HashSet::new();
        let mut intents = Vec::new();
        for entry in entries {
            if AuditAction::parse(&entry.action) != Some(WRITE_INTENT)
                && let Some(revision) = entry.detail["revision"].as_str()
            {
                claimed.insert(revision.to_owned());
            }
            let Some(intent) = entry.detail["intent"].as_str().map(str::to_owned) else {
                continue;
            };
            if AuditAction::parse(&entry.action) == Some(WRITE_INTENT) {
                intents.push(OpenIntent {
                    account: entry.account,
                    intent,
                    detail: entry.detail,
                });
            } else {
                closed.insert(intent);
            }
        }
        intents.retain(|open| !closed.contains(&open.intent));
        Ok((intents, claimed))
    }

    /// Appends an entry of `account`, its actor and detail scrubbed with the account's values.
    fn append_workspace_entry(
        &self,
        account: &AccountId,
        actor: Actor,
        action: AuditAction,
        detail: &Value,
    ) -> Result<(), Error> {
        let redactor =
            self.scrub_sets
                .for_account(account)
                .map_err(|source| Error::AccountValues {
                    account: account.clone(),
                    source,
                })?;
        self.store.append_audit(&NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(actor),
            action,
            detail: redactor.scrub_json(detail),
            at: self.clock.now(),
        })?;
        Ok(())
    }
}

/// A fresh intent id, `wsi_` and 32 hex digits.
fn intent_id() -> Result<String, Error> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes).map_err(|source| Error::Randomness {
        purpose: "a workspace write's intent id",
        detail: source.to_string(),
    })?;
    Ok(format!("wsi_{}", hex::encode(bytes)))
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
