//! The interviews in progress (issue 17 §4), held by the server for the people who started
//! them, and the authoring lints the binary hands in.
//!
//! An interview is a conversation, not a record: it lives in the server's memory, bounded
//! ([`MAX_PER_PERSON`], [`MAX_INTERVIEWS`], [`IDLE_MILLIS`]), and only its owner sees it
//! (another person's, or another account's, is the same 404 as a missing one). What the
//! record keeps is the audit entries (started, confirmed, a refused confirmation; names,
//! numbers and reasons, never the chat) and the version a confirmation saved (a revision
//! authored by the assistant and accepted by the person). Every text held here was scrubbed
//! with the account's values before it was kept.

use std::collections::HashMap;
use std::sync::Mutex;
use storage::AccountId;

use agent::interview::Conversation;
use api_types::interview::{InterviewEntry, InterviewProposal, InterviewView};
use workspace::RelPath;

/// The most interviews one person holds; starting another ends their least recently used.
pub const MAX_PER_PERSON: usize = 4;
/// The most interviews the server holds; past it the least recently used ends.
pub const MAX_INTERVIEWS: usize = 512;
/// An interview nobody used for this long ends.
pub const IDLE_MILLIS: i64 = 24 * 60 * 60 * 1000;
/// The most entries one interview shows.
pub const MAX_ENTRIES: usize = 200;

/// The authoring lints of a workflow's code steps (`stepward check`'s warnings), which read
/// the code with the machine's Python; the binary implements it.
pub trait AuthoringLints: Send + Sync {
    /// The warnings of `workflow`; `None` when they cannot be run here.
    fn lint(&self, workflow: &spec::Workflow) -> Option<Vec<spec::Diagnostic>>;
}

/// A proposal shown to the person, kept for their confirmation.
#[derive(Debug, Clone)]
pub(crate) struct Shown {
    pub(crate) draft: engine::Draft,
    pub(crate) view: InterviewProposal,
    /// Every workspace file its check read to make the reach rows shown, with its hash then
    /// (`engine::CheckedDraft::read`): a confirmation saves only while each is still so.
    pub(crate) read: Vec<(RelPath, Option<String>)>,
}

/// One interview.
pub(crate) struct Interview {
    pub(crate) id: String,
    pub(crate) account: AccountId,
    pub(crate) person: String,
    /// The workflow it is about: given when it started, or named by its first valid proposal.
    pub(crate) about: Option<String>,
    /// Each path a proposal writes, as the interview first read it (its hash, `None` for no
    /// file): a confirmation writes only when every one is still so.
    pub(crate) base: Vec<(RelPath, Option<String>)>,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) conversation: Conversation,
    pub(crate) entries: Vec<InterviewEntry>,
    pub(crate) proposal: Option<Shown>,
    pub(crate) proposals: u32,
    pub(crate) saved_version: Option<u32>,
    /// Whether the assistant is answering (one message at a time).
    pub(crate) busy: bool,
    pub(crate) last_used: i64,
}

impl Interview {
    pub(crate) fn push(&mut self, who: &str, text: String, problems: Vec<String>) {
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(InterviewEntry {
            who: who.to_owned(),
            text,
            problems,
        });
    }

    pub(crate) fn view(&self) -> InterviewView {
        InterviewView {
            id: self.id.clone(),
            workflow: self.about.clone().unwrap_or_default(),
            state: if self.saved_version.is_some() {
                "confirmed"
            } else {
                "open"
            }
            .to_owned(),
            assistant: format!("{} (model {})", self.provider, self.model),
            entries: self.entries.clone(),
            proposal: self.proposal.as_ref().map(|shown| shown.view.clone()),
            saved_version: self.saved_version,
        }
    }
}

/// The interviews in progress.
#[derive(Default)]
pub(crate) struct Interviews {
    held: Mutex<HashMap<String, Interview>>,
}

impl Interviews {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Interview>> {
        // Each interview is replaced whole, so a poisoned map still holds whole interviews.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `interview`, ending the least recently used beyond the bounds.
    pub(crate) fn insert(&self, interview: Interview, now: i64) {
        let mut held = self.held();
        held.retain(|_, kept| now - kept.last_used < IDLE_MILLIS);
        loop {
            let of_person: Vec<(&String, i64)> = held
                .iter()
                .filter(|(_, kept)| {
                    kept.account == interview.account && kept.person == interview.person
                })
                .map(|(id, kept)| (id, kept.last_used))
                .collect();
            let oldest = if of_person.len() >= MAX_PER_PERSON {
                of_person.into_iter().min_by_key(|(_, used)| *used)
            } else if held.len() >= MAX_INTERVIEWS {
                held.iter()
                    .map(|(id, kept)| (id, kept.last_used))
                    .min_by_key(|(_, used)| *used)
            } else {
                None
            };
            let Some((id, _)) = oldest else { break };
            let id = id.clone();
            held.remove(&id);
        }
        held.insert(interview.id.clone(), interview);
    }

    /// Runs `with` on the interview `id` of this person, when it is theirs and not idle past
    /// its time.
    pub(crate) fn with<T>(
        &self,
        id: &str,
        account: &AccountId,
        person: &str,
        now: i64,
        with: impl FnOnce(&mut Interview) -> T,
    ) -> Option<T> {
        let mut held = self.held();
        let interview = held.get_mut(id)?;
        if &interview.account != account || interview.person != person {
            return None;
        }
        if now - interview.last_used >= IDLE_MILLIS {
            held.remove(id);
            return None;
        }
        interview.last_used = now;
        Some(with(interview))
    }

    /// The open interviews of this person, most recent first: (id, what it is about).
    pub(crate) fn of_person(&self, account: &AccountId, person: &str) -> Vec<(String, String)> {
        let held = self.held();
        let mut found: Vec<(&Interview, i64)> = held
            .values()
            .filter(|kept| &kept.account == account && kept.person == person)
            .map(|kept| (kept, kept.last_used))
            .collect();
        found.sort_by_key(|(_, used)| std::cmp::Reverse(*used));
        found
            .into_iter()
            .map(|(kept, _)| {
                (
                    kept.id.clone(),
                    kept.about
                        .clone()
                        .unwrap_or_else(|| "a new workflow".to_owned()),
                )
            })
            .collect()
    }
}
