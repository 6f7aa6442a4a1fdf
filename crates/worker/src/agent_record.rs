//! What an agent step leaves behind: its loop's events, written through the engine's journal
//! before each call runs; its output (`output: json` parses the answer); and the copy-back of
//! every tree of the step (its agent's and each colleague's).

use std::rc::Rc;

use engine::journal::{AgentLimit, AgentTurn, ToolCalled, ToolFinished, ToolRefused};
use engine::{AgentEvent, FileChange};
use serde_json::Value;
use zeroize::Zeroizing;

use crate::agent_view::View;

/// The largest tool result kept in the journal.
const MAX_JOURNAL_RESULT_BYTES: usize = 16 * 1024;

/// What the copy-back takes from every tree of the step, in the order the agents started. A
/// path two agents changed comes back from the first only; the later one is refused.
pub(crate) fn changes_of(
    views: &[(Rc<View>, spec::Agent, bool)],
    caps: engine::CopyBackCaps,
) -> (Vec<FileChange>, Vec<engine::CopyBackRefusal>) {
    let mut changes: Vec<FileChange> = Vec::new();
    let mut refusals = Vec::new();
    for (view, agent, writable) in views {
        if !writable {
            continue;
        }
        let (more, refused) = view.changes(agent, caps);
        refusals.extend(refused);
        for change in more {
            if changes.iter().any(|known| known.path == change.path) {
                refusals.push(engine::CopyBackRefusal {
                    path: change.path.to_string(),
                    reason: format!(
                        "another agent of this step changed it first; the change of {} is \
                         not kept",
                        agent.name()
                    ),
                });
            } else {
                changes.push(change);
            }
        }
    }
    (changes, refusals)
}

/// The step's output from the agent's answer: a JSON string, or with `output: json` the
/// answer parsed (not JSON: the step fails, with the parser's words and place).
pub(crate) fn answer_output(
    kind: spec::OutputKind,
    text: String,
) -> Result<engine::StepOutput, (&'static str, String)> {
    let json = match kind {
        spec::OutputKind::Text => Value::String(text).to_string(),
        spec::OutputKind::Json => {
            let trimmed = text.trim();
            if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(trimmed) {
                return Err((
                    "OutputNotJson",
                    format!(
                        "the step declares `output: json`, and the agent's answer is not JSON: \
                         {error} (line and column of the answer). The answer began: {}",
                        answer_start(trimmed)
                    ),
                ));
            }
            trimmed.to_owned()
        }
    };
    engine::StepOutput::from_json_text(Zeroizing::new(json)).map_err(|error| {
        (
            "AgentError",
            format!("the answer cannot be kept as the step's output: {error}"),
        )
    })
}

/// The first 200 characters of an answer, for a person reading why it was not JSON.
fn answer_start(text: &str) -> String {
    let mut start: String = text.chars().take(200).collect();
    if start.len() < text.len() {
        start.push('…');
    }
    start
}

/// The loop's journal, written through the engine.
pub(crate) struct Journal<'a> {
    pub(crate) journal: &'a dyn engine::StepJournal,
}

/// The most bytes of a model-chosen name, path or reason the record keeps.
const MAX_JOURNAL_NAME_BYTES: usize = 1024;

/// `text` cut to `max` bytes at a character boundary, marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut at {max} bytes)", &text[..end])
}

/// A call's arguments as the record keeps them: whole up to the result's bound, else their
/// JSON text cut to it.
fn bounded_arguments(arguments: &Value) -> Value {
    let text = arguments.to_string();
    if text.len() <= MAX_JOURNAL_RESULT_BYTES {
        return arguments.clone();
    }
    Value::String(cut(&text, MAX_JOURNAL_RESULT_BYTES))
}

fn bounded(text: &str) -> String {
    if text.len() <= MAX_JOURNAL_RESULT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_JOURNAL_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… (cut at {MAX_JOURNAL_RESULT_BYTES} bytes)",
        &text[..end]
    )
}

impl Journal<'_> {
    /// Records `event` in the step's journal; the loop is told why one was not stored, in
    /// words with every cause (its `LoopJournal` speaks text, scrubbed where it is shown).
    fn record(&self, event: AgentEvent) -> Result<(), agent::NotRecorded> {
        self.journal
            .record(event)
            .map_err(|error| agent::NotRecorded {
                reason: crate::model_client::with_causes(&error),
            })
    }
}

impl agent::LoopJournal for Journal<'_> {
    fn turn(
        &mut self,
        turn: u64,
        usage: llm::Usage,
        stop_reason: &str,
    ) -> Result<(), agent::NotRecorded> {
        self.record(AgentEvent::Turn(AgentTurn {
            step: String::new(),
            attempt: 0,
            turn,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            stop_reason: stop_reason.to_owned(),
        }))
    }

    fn tool_called(
        &mut self,
        turn: u64,
        call_id: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<(), agent::NotRecorded> {
        self.record(AgentEvent::ToolCalled(ToolCalled {
            step: String::new(),
            attempt: 0,
            turn,
            call: cut(call_id, MAX_JOURNAL_NAME_BYTES),
            tool: cut(tool, MAX_JOURNAL_NAME_BYTES),
            arguments: bounded_arguments(arguments),
        }))
    }

    fn tool_finished(
        &mut self,
        call_id: &str,
        tool: &str,
        outcome: agent::CallOutcome,
        result: &str,
        refusal: Option<&agent::PathRefusal>,
    ) -> Result<(), agent::NotRecorded> {
        self.record(AgentEvent::ToolFinished(ToolFinished {
            step: String::new(),
            attempt: 0,
            call: cut(call_id, MAX_JOURNAL_NAME_BYTES),
            tool: cut(tool, MAX_JOURNAL_NAME_BYTES),
            outcome: outcome.as_str().to_owned(),
            result: bounded(result),
            refused_path: refusal.map(|refusal| cut(&refusal.path, MAX_JOURNAL_NAME_BYTES)),
            suggestion: refusal
                .and_then(|refusal| refusal.suggestion.as_deref())
                .map(|suggestion| cut(suggestion, MAX_JOURNAL_NAME_BYTES)),
        }))
    }

    fn call_refused(
        &mut self,
        turn: u64,
        call_id: &str,
        tool: &str,
        reason: &str,
    ) -> Result<(), agent::NotRecorded> {
        self.record(AgentEvent::ToolRefused(ToolRefused {
            step: String::new(),
            attempt: 0,
            turn,
            call: cut(call_id, MAX_JOURNAL_NAME_BYTES),
            tool: cut(tool, MAX_JOURNAL_NAME_BYTES),
            reason: bounded(reason),
        }))
    }

    fn limit(&mut self, limit: &str, detail: &str) -> Result<(), agent::NotRecorded> {
        self.record(AgentEvent::Limit(AgentLimit {
            step: String::new(),
            attempt: 0,
            limit: limit.to_owned(),
            detail: detail.to_owned(),
        }))
    }
}
