//! What goes into a model turn and what comes out, independent of any provider's wire format.

use std::time::Duration;

/// One request for a turn of the model: the system prompt, the conversation so far, the
/// tools the model may call. Built by the caller; every provider sends exactly this.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The provider's model id (`claude-sonnet-4-5`, `llama-3.1-8b`).
    pub model: String,
    /// The system prompt; empty for none.
    pub system: String,
    /// The conversation, oldest first. It should start with a user message.
    pub messages: Vec<Message>,
    /// The tools offered for this turn; a tool not listed does not exist for the model.
    pub tools: Vec<ToolDefinition>,
    /// The most tokens the answer may have.
    pub max_tokens: u32,
    /// Whether to stream the answer: text then reaches [`Observer::text`] as it arrives.
    /// Tool calls are handed on only with the whole turn either way.
    pub stream: bool,
}

impl TurnRequest {
    /// A request for `model` with one user message and nothing else (no system prompt, no
    /// tools, 1,024 tokens at most, not streamed).
    pub fn new(model: &str, user_text: &str) -> TurnRequest {
        TurnRequest {
            model: model.to_owned(),
            system: String::new(),
            messages: vec![Message::User {
                text: user_text.to_owned(),
            }],
            tools: Vec::new(),
            max_tokens: 1024,
            stream: false,
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Message {
    /// What the person (or the platform on their behalf) says.
    User { text: String },
    /// An earlier answer of the model: its text and the tools it called.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The results of the tool calls of the previous assistant message.
    ToolResults { results: Vec<ToolResult> },
}

/// A tool the model may call: its name, what it does, and its arguments as a JSON Schema
/// object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON Schema of type `object`.
    pub input_schema: serde_json::Value,
}

/// A call the model made: the provider's id for it, the tool's name, and the arguments (a
/// JSON object, parsed and complete).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// The result of one tool call, sent back in the next request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    pub content: String,
    /// The call failed or was refused; `content` says why.
    pub is_error: bool,
}

/// Tokens the provider counted for one turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The answer is complete.
    EndTurn,
    /// The model wants its tool calls run.
    ToolUse,
    /// The answer hit `max_tokens`.
    MaxTokens,
    /// The answer hit a stop sequence.
    StopSequence,
    /// The provider withheld or cut the answer (a content filter, a refusal).
    Refused,
    /// A reason this crate does not know, as the provider wrote it.
    Other(String),
}

impl StopReason {
    /// The reason in words for records and the console (`end_turn`, `tool_use`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refused => "refused",
            StopReason::Other(reason) => reason,
        }
    }
}

/// A whole turn, handed on only once it has fully arrived: a stream that ends before its stop
/// reason is an error, never a turn with part of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The model that answered, as the provider named it.
    pub model: String,
    /// The text of the answer (all text blocks, in order).
    pub text: String,
    /// The tool calls, in the order the model made them; each complete.
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

/// A retry this crate is about to make: the caller records it (it may cost money).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// 1 for the first retry; at most 3.
    pub retry: u32,
    /// How long the crate waits before it sends the request again.
    pub wait: Duration,
    /// Why the previous attempt failed, in words (no key, no prompt).
    pub reason: String,
}

/// What a caller sees while a turn is under way. Text deltas of an attempt that is then
/// retried are void: [`Observer::retry`] comes between them and the next attempt's.
pub trait Observer: Send {
    /// Streamed text as it arrives (only with [`TurnRequest::stream`]).
    fn text(&mut self, delta: &str) {
        let _ = delta;
    }

    /// The previous attempt failed and the request is about to be sent again.
    fn retry(&mut self, notice: &RetryNotice) {
        let _ = notice;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ignore;

impl Observer for Ignore {}

/// An observer that keeps what it saw, for tests and the CLI.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    pub text: String,
    pub retries: Vec<RetryNotice>,
}

impl Observer for Recorder {
    fn text(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    fn retry(&mut self, notice: &RetryNotice) {
        self.text.clear();
        self.retries.push(notice.clone());
    }
}
