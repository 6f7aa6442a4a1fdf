//! The interview with the assistant (issue 17 §4): `/api/interviews`. The person's messages
//! and the assistant's answers are untrusted text, scrubbed of the account's values before
//! they are answered; a proposal is shown only once it passed the parser (G1), with its reach
//! rows (G27) and the authoring lints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Diagnostic, ReachReport, WorkflowVersionView, limits};

/// The body of `POST /api/interviews`: the person's first message, and the workflow the
/// interview is about (empty: a new one, named by the assistant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartInterviewRequest {
    #[serde(default)]
    #[schemars(length(max = limits::NAME_CHARS))]
    pub workflow: String,
    #[schemars(length(max = limits::INTERVIEW_MESSAGE_CHARS))]
    pub message: String,
}

/// The body of `POST /api/interviews/{id}/messages`: the person's next message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterviewMessageRequest {
    #[schemars(length(max = limits::INTERVIEW_MESSAGE_CHARS))]
    pub message: String,
}

/// The body of `POST /api/interviews/{id}/confirm`: the person accepts the shown proposal
/// (its number, so a proposal made meanwhile is never the one saved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmInterviewRequest {
    /// The number of the proposal shown (an interview holds far fewer: its entries are bounded
    /// by the interview's size).
    #[schemars(range(min = 1, max = limits::PROPOSAL_NUMBER_MAX))]
    pub proposal: u32,
    #[serde(default)]
    #[schemars(length(max = limits::NOTE_CHARS))]
    pub note: String,
}

/// One entry of the interview as the person sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewEntry {
    /// `person`, `assistant` or `platform` (the checks' and the save's words).
    #[schemars(extend("enum" = ["person", "assistant", "platform"]))]
    pub who: String,
    pub text: String,
    /// The diagnostics of a refused proposal (file:line:col, what is wrong).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// A file of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedFile {
    pub path: String,
    pub text: String,
}

/// The proposal shown: it passed the parser with its agents; its reach and lints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewProposal {
    /// Counts the proposals shown in this interview, from 1.
    pub number: u32,
    pub workflow: String,
    pub note: String,
    /// The workflow's file first, then each agent file and script.
    pub files: Vec<ProposedFile>,
    pub reach: ReachReport,
    /// The authoring lints (warnings); empty when none fired.
    pub lints: Vec<Diagnostic>,
    /// Whether the lints could be run here (they read the code with the server's Python).
    pub lints_checked: bool,
}

/// An interview (`GET /api/interviews/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewView {
    pub id: String,
    /// The workflow it is about; empty until a proposal names one.
    pub workflow: String,
    /// `open` or `confirmed`.
    #[schemars(extend("enum" = ["open", "confirmed"]))]
    pub state: String,
    /// The assistant: provider and model.
    pub assistant: String,
    pub entries: Vec<InterviewEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<InterviewProposal>,
    /// The version the confirmed proposal became.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_version: Option<u32>,
}

/// The answer of a confirmation: the version saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewConfirmed {
    pub interview: String,
    pub version: WorkflowVersionView,
}
