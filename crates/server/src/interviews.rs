//! The interviews in progress (issue 17 §4), kept in the store for the people who started
//! them.
//!
//! An interview is a conversation, not a record: it is kept in the store's `interviews`
//! (so no one process holds it, and no account's load ends another's), bounded per account,
//! per person, per interview and in bytes by [`QUOTA`] and [`MAX_ENTRY_BYTES`], and only its
//! owner sees it (another person's, or another account's, is the same 404 as a missing one).
//! What the record keeps is the audit entries (started, confirmed, a refused confirmation;
//! names, numbers and reasons, never the chat) and the version a confirmation saved. Every
//! text kept here is scrubbed with the account's values before it is written (G16).

use storage::AccountId;
use storage::interviews::{InterviewQuota, InterviewRefusal, InterviewWrite};

use agent::interview::Conversation;
use api_types::interview::{InterviewEntry, InterviewProposal, InterviewView};
use serde::{Deserialize, Serialize};
use workspace::RelPath;

use crate::error::Error;
use crate::state::Shared;

/// The bounds of the interviews of every account (the store holds them).
pub const QUOTA: InterviewQuota = InterviewQuota {
    per_person: 4,
    per_account: 32,
    bytes_per_interview: 1024 * 1024,
    bytes_per_account: 16 * 1024 * 1024,
    idle_millis: 24 * 60 * 60 * 1000,
};
/// The most entries one interview shows.
pub const MAX_ENTRIES: usize = 200;
/// The most bytes of one entry's text (a question, a note, a platform message); longer ones
/// are cut, and say so.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// A proposal shown to the person, kept for their confirmation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Shown {
    pub(crate) draft: engine::Draft,
    pub(crate) view: InterviewProposal,
    /// Every workspace file its check read to make the reach rows shown, with its hash then
    /// (`engine::CheckedDraft::read`): a confirmation saves only while each is still so.
    #[serde(with = "paths")]
    pub(crate) read: Vec<(RelPath, Option<String>)>,
}

/// Workspace paths with their hashes, kept as text and parsed again when read.
mod paths {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use workspace::RelPath;

    pub(crate) fn serialize<S: Serializer>(
        paths: &[(RelPath, Option<String>)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let text: Vec<(&str, &Option<String>)> = paths
            .iter()
            .map(|(path, hash)| (path.as_str(), hash))
            .collect();
        text.serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(RelPath, Option<String>)>, D::Error> {
        let text: Vec<(String, Option<String>)> = Vec::deserialize(deserializer)?;
        text.into_iter()
            .map(|(path, hash)| {
                RelPath::parse(&path)
                    .map(|path| (path, hash))
                    .map_err(serde::de::Error::custom)
            })
            .collect()
    }
}

/// One interview: its state as the store keeps it (`id`, `account` and `person` are the row's).
#[derive(Serialize, Deserialize)]
pub(crate) struct Interview {
    #[serde(skip)]
    pub(crate) id: String,
    #[serde(skip, default = "no_account")]
    pub(crate) account: AccountId,
    #[serde(skip)]
    pub(crate) person: String,
    /// The workflow it is about: given when it started, or named by its first valid proposal.
    pub(crate) about: Option<String>,
    /// Each path a proposal writes, as the interview first read it (its hash, `None` for no
    /// file): a confirmation writes only when every one is still so.
    #[serde(with = "paths")]
    pub(crate) base: Vec<(RelPath, Option<String>)>,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) conversation: Conversation,
    pub(crate) entries: Vec<InterviewEntry>,
    pub(crate) proposal: Option<Shown>,
    pub(crate) proposals: u32,
    pub(crate) saved_version: Option<u32>,
    /// Since when the assistant is answering (one message at a time); a mark older than the
    /// assistant's own deadline is from a process that stopped and counts as none.
    pub(crate) busy_since: Option<i64>,
    #[serde(skip)]
    pub(crate) last_used: i64,
    /// The interview reached its bound of bytes and takes no more messages.
    #[serde(default)]
    pub(crate) full: bool,
}

/// The placeholder of a deserialized interview's account, replaced by its row's.
fn no_account() -> AccountId {
    AccountId::server_chain()
}

/// How long a busy mark holds: the assistant's deadline for one message, and a minute.
const BUSY_MILLIS: i64 = 11 * 60 * 1000;

impl Interview {
    pub(crate) fn push(&mut self, who: &str, mut text: String, problems: Vec<String>) {
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.remove(0);
        }
        if text.len() > MAX_ENTRY_BYTES {
            let mut end = MAX_ENTRY_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(&format!("… (cut at {MAX_ENTRY_BYTES} bytes)"));
        }
        self.entries.push(InterviewEntry {
            who: who.to_owned(),
            text,
            problems,
        });
    }

    /// Whether the assistant is answering a message now.
    pub(crate) fn is_busy(&self, now: i64) -> bool {
        self.busy_since
            .is_some_and(|since| now.saturating_sub(since) < BUSY_MILLIS)
    }

    pub(crate) fn view(&self) -> InterviewView {
        InterviewView {
            id: self.id.clone(),
            workflow: self.about.clone().unwrap_or_default(),
            state: if self.saved_version.is_some() {
                "confirmed"
            } else if self.full {
                "full"
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

/// The words of a refusal by the store's bounds.
fn refused(refusal: &InterviewRefusal) -> Error {
    let reason = match refusal {
        InterviewRefusal::PersonFull { max, .. } => format!(
            "you have {max} open interviews, the most one person may; confirm one, or wait until \
             one ends after a day without use"
        ),
        InterviewRefusal::AccountFull { max, .. } => format!(
            "the account has {max} open interviews, the most it may; one ends after a day \
             without use"
        ),
        InterviewRefusal::TooLarge { max, .. } => format!(
            "the interview would hold more than {max} bytes; confirm the proposal or start a new \
             interview"
        ),
        InterviewRefusal::AccountBytes { max, .. } => format!(
            "the account's open interviews would hold more than {max} bytes; one ends after a \
             day without use"
        ),
    };
    Error::InterviewRefused { reason }
}

/// The interviews in progress, in the store.
#[derive(Default)]
pub(crate) struct Interviews;

impl Interviews {
    fn write(shared: &Shared, interview: &Interview, now: i64) -> Result<InterviewWrite, Error> {
        let redactor = crate::handlers::account_redactor(shared, &interview.account)?;
        let state = serde_json::to_value(interview).map_err(|error| Error::InterviewRefused {
            reason: format!("the interview cannot be kept: {error}"),
        })?;
        Ok(InterviewWrite {
            id: interview.id.clone(),
            account: interview.account.clone(),
            person: interview.person.clone(),
            state: redactor.scrub_json(&state),
            at: storage::Timestamp(now),
        })
    }

    /// Keeps `interview`, or refuses it with the bound it would pass; never ends another.
    pub(crate) fn insert(
        &self,
        shared: &Shared,
        interview: Interview,
        now: i64,
    ) -> Result<(), Error> {
        let write = Self::write(shared, &interview, now)?;
        shared
            .store
            .start_interview(&write, &QUOTA)
            .map_err(Error::storage("keep an interview"))?
            .map_err(|refusal| refused(&refusal))
    }

    /// Runs `with` on the interview `id` of this person, when it is theirs and not idle past
    /// its time, and keeps what it changed. An interview that would grow past its bound is
    /// kept full instead: its conversation set aside, a last entry saying so.
    pub(crate) fn with<T>(
        &self,
        shared: &Shared,
        id: &str,
        account: &AccountId,
        person: &str,
        now: i64,
        with: impl FnOnce(&mut Interview) -> T,
    ) -> Result<Option<T>, Error> {
        let Some(record) = shared
            .store
            .interview(account, id, &QUOTA, storage::Timestamp(now))
            .map_err(Error::storage("read an interview"))?
        else {
            return Ok(None);
        };
        if record.person != person {
            return Ok(None);
        }
        let Ok(mut interview) = serde_json::from_value::<Interview>(record.state) else {
            // Written by another version: it cannot be continued; it is as if it had ended.
            return Ok(None);
        };
        interview.id = record.id;
        interview.account = record.account;
        interview.person = record.person;
        interview.last_used = now;
        let answer = with(&mut interview);
        let write = Self::write(shared, &interview, now)?;
        match shared
            .store
            .update_interview(&write, &QUOTA)
            .map_err(Error::storage("keep an interview"))?
        {
            Ok(_) => {}
            Err(
                InterviewRefusal::TooLarge { max, .. } | InterviewRefusal::AccountBytes { max, .. },
            ) => {
                interview.conversation = Conversation::default();
                interview.full = true;
                interview.busy_since = None;
                interview.entries.truncate(MAX_ENTRIES / 4);
                interview.push(
                    "platform",
                    format!(
                        "This interview reached the most it may hold ({max} bytes), so it takes \
                         no more messages. Confirm the proposal shown, or start a new interview."
                    ),
                    Vec::new(),
                );
                let write = Self::write(shared, &interview, now)?;
                if let Err(refusal) = shared
                    .store
                    .update_interview(&write, &QUOTA)
                    .map_err(Error::storage("keep an interview"))?
                {
                    return Err(refused(&refusal));
                }
            }
            Err(other) => return Err(refused(&other)),
        }
        Ok(Some(answer))
    }

    /// The open interviews of this person, most recent first: (id, what it is about).
    pub(crate) fn of_person(
        &self,
        shared: &Shared,
        account: &AccountId,
        person: &str,
        now: i64,
    ) -> Result<Vec<(String, String)>, Error> {
        let records = shared
            .store
            .interviews_of(account, person, &QUOTA, storage::Timestamp(now))
            .map_err(Error::storage("list interviews"))?;
        Ok(records
            .into_iter()
            .map(|record| {
                let about = record
                    .state
                    .get("about")
                    .and_then(serde_json::Value::as_str)
                    .map_or_else(|| "a new workflow".to_owned(), str::to_owned);
                (record.id, about)
            })
            .collect())
    }
}
