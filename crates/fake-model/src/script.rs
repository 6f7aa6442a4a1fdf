//! The script a fake model replays: one entry per request it answers, in order.
//!
//! The file format (JSON; documented in `docs/agents.md`):
//!
//! ```json
//! { "repeat": false,
//!   "turns": [
//!     { "text": "Hello." },
//!     { "text": "Let me look.", "tool_calls": [{ "name": "Read", "arguments": { "path": "a.txt" } }] },
//!     { "error": { "status": 429, "retry_after": 1, "message": "slow down" } },
//!     { "text": "slowly", "chunk_delay_ms": 300 },
//!     { "text": "cut short", "cut_after_events": 3 },
//!     { "redirect": { "status": 302, "location": "http://127.0.0.1:9/v1/messages" } },
//!     { "raw": { "parts": [{ "text": "data: x", "repeat": 1000 }, { "bytes": [255] }],
//!                "chunk_bytes": 1024 } }
//!   ] }
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

/// Turns in the order they answer requests; with `repeat`, the script starts over when it
/// ends, otherwise a request past the end gets a 500 that says so.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
    #[serde(default)]
    pub repeat: bool,
}

/// One answer. Either a reply (`text` and/or `tool_calls`), or an `error`, a `redirect` or a
/// `raw` answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// In Anthropic's words (`end_turn`, `tool_use`, `max_tokens`, `stop_sequence`,
    /// `refusal`); mapped for the OpenAI format (`stop`, `tool_calls`, `length`,
    /// `content_filter`). By default `tool_use` with calls, `end_turn` without.
    pub stop_reason: Option<String>,
    /// By default about a token per four bytes of the request and of the answer.
    pub usage: Option<ScriptUsage>,
    /// The model the answer names; by default the one the request asked for.
    pub model: Option<String>,
    /// A pause before each event of a streamed answer (before the whole answer otherwise).
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Break the connection after this many events of a streamed answer (after half the
    /// body of a whole one).
    pub cut_after_events: Option<usize>,
    pub error: Option<ScriptError>,
    pub redirect: Option<ScriptRedirect>,
    pub raw: Option<ScriptRaw>,
}

/// An answer of exactly these bytes, in neither wire format: what a broken or hostile
/// endpoint sends (a line that never ends, bytes that are not UTF-8, an error body that
/// trickles). `chunk_delay_ms` pauses before each piece.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRaw {
    #[serde(default = "ok")]
    pub status: u16,
    #[serde(default = "event_stream")]
    pub content_type: String,
    /// The body: each part in order.
    pub parts: Vec<RawPart>,
    /// Sent in pieces of this many bytes; all at once when absent.
    pub chunk_bytes: Option<usize>,
}

/// A part of a raw body: `text` or `bytes` (numbers 0 to 255), `repeat` times (once by
/// default).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPart {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub bytes: Vec<u8>,
    #[serde(default = "once")]
    pub repeat: usize,
}

impl RawPart {
    /// `text` once.
    pub fn text(text: &str) -> RawPart {
        RawPart {
            text: text.to_owned(),
            repeat: 1,
            ..RawPart::default()
        }
    }

    /// `bytes` once.
    pub fn bytes(bytes: &[u8]) -> RawPart {
        RawPart {
            bytes: bytes.to_vec(),
            repeat: 1,
            ..RawPart::default()
        }
    }

    /// This part `times` times.
    pub fn repeated(mut self, times: usize) -> RawPart {
        self.repeat = times;
        self
    }
}

impl ScriptRaw {
    /// The whole body.
    pub fn body(&self) -> Vec<u8> {
        let mut body = Vec::new();
        for part in &self.parts {
            for _ in 0..part.repeat {
                body.extend_from_slice(part.text.as_bytes());
                body.extend_from_slice(&part.bytes);
            }
        }
        body
    }
}

fn ok() -> u16 {
    200
}

fn event_stream() -> String {
    "text/event-stream".to_owned()
}

fn once() -> usize {
    1
}

/// A tool call the model makes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// By default `toolu_fake_<turn>_<n>` (Anthropic) or `call_fake_<turn>_<n>` (OpenAI).
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// Token counts an answer reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// An error answer in the provider's format.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    pub status: u16,
    #[serde(default)]
    pub message: String,
    /// The error's `type` (Anthropic) or `code` (OpenAI); by default the status's usual one.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// A `retry-after` header, in seconds (a fraction or a huge number too: clients must
    /// cope with what a provider may send).
    pub retry_after: Option<f64>,
    /// A `retry-after-ms` header.
    pub retry_after_ms: Option<f64>,
}

/// A redirect answer (`Location` set); a client must not follow it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRedirect {
    #[serde(default = "found")]
    pub status: u16,
    pub location: String,
}

fn found() -> u16 {
    302
}

/// A script file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptFileError {
    #[error("the script is not valid JSON of the script format")]
    Json(#[from] serde_json::Error),
    #[error("turn {turn} of the script: {problem}")]
    Turn { turn: usize, problem: &'static str },
}

impl Script {
    /// A script of these turns, not repeating.
    pub fn new(turns: Vec<ScriptTurn>) -> Script {
        Script {
            turns,
            repeat: false,
        }
    }

    /// Reads and checks a script file's text.
    pub fn from_json(text: &str) -> Result<Script, ScriptFileError> {
        let script: Script = serde_json::from_str(text)?;
        for (index, turn) in script.turns.iter().enumerate() {
            let reply = !turn.text.is_empty() || !turn.tool_calls.is_empty();
            let kinds = usize::from(reply)
                + usize::from(turn.error.is_some())
                + usize::from(turn.redirect.is_some())
                + usize::from(turn.raw.is_some());
            let problem = if kinds > 1 {
                Some(
                    "a turn is a reply (text, tool_calls), an error, a redirect or a raw answer, \
                     not several",
                )
            } else if turn
                .raw
                .as_ref()
                .is_some_and(|raw| raw.chunk_bytes == Some(0))
            {
                Some("a raw answer's chunk_bytes is 1 or more")
            } else if turn.error.as_ref().is_some_and(|error| error.status < 400) {
                Some("an error's status is 400 or more")
            } else if turn
                .redirect
                .as_ref()
                .is_some_and(|redirect| !(300..400).contains(&redirect.status))
            {
                Some("a redirect's status is from 300 to 399")
            } else if turn.tool_calls.iter().any(|call| call.name.is_empty()) {
                Some("every tool call has a name")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(ScriptFileError::Turn {
                    turn: index + 1,
                    problem,
                });
            }
        }
        Ok(script)
    }
}

impl ScriptTurn {
    /// A reply with this text.
    pub fn text(text: &str) -> ScriptTurn {
        ScriptTurn {
            text: text.to_owned(),
            ..ScriptTurn::default()
        }
    }

    /// A reply with one tool call and no text.
    pub fn call(name: &str, arguments: Value) -> ScriptTurn {
        ScriptTurn::default().with_call(name, arguments)
    }

    /// An error answer with this status.
    pub fn error(status: u16, message: &str) -> ScriptTurn {
        ScriptTurn {
            error: Some(ScriptError {
                status,
                message: message.to_owned(),
                ..ScriptError::default()
            }),
            ..ScriptTurn::default()
        }
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> ScriptTurn {
        ScriptTurn {
            redirect: Some(ScriptRedirect {
                status,
                location: location.to_owned(),
            }),
            ..ScriptTurn::default()
        }
    }

    /// A raw answer: status 200, `text/event-stream`, these parts in pieces of
    /// `chunk_bytes`.
    pub fn raw(parts: Vec<RawPart>, chunk_bytes: Option<usize>) -> ScriptTurn {
        ScriptTurn {
            raw: Some(ScriptRaw {
                status: 200,
                content_type: event_stream(),
                parts,
                chunk_bytes,
            }),
            ..ScriptTurn::default()
        }
    }

    /// Sets a raw answer's status and content type.
    pub fn raw_status(mut self, status: u16, content_type: &str) -> ScriptTurn {
        if let Some(raw) = &mut self.raw {
            raw.status = status;
            raw.content_type = content_type.to_owned();
        }
        self
    }

    /// Adds a tool call (`arguments` must be a JSON object; anything else counts as `{}`).
    pub fn with_call(mut self, name: &str, arguments: Value) -> ScriptTurn {
        self.tool_calls.push(ScriptCall {
            id: None,
            name: name.to_owned(),
            arguments: match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            },
        });
        self
    }

    /// Gives the last tool call this id instead of the generated one.
    pub fn with_call_id(mut self, id: &str) -> ScriptTurn {
        if let Some(call) = self.tool_calls.last_mut() {
            call.id = Some(id.to_owned());
        }
        self
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> ScriptTurn {
        self.usage = Some(ScriptUsage {
            input_tokens,
            output_tokens,
        });
        self
    }

    pub fn with_stop_reason(mut self, reason: &str) -> ScriptTurn {
        self.stop_reason = Some(reason.to_owned());
        self
    }

    pub fn with_model(mut self, model: &str) -> ScriptTurn {
        self.model = Some(model.to_owned());
        self
    }

    /// Pauses this long before each streamed event.
    pub fn slow(mut self, chunk_delay_ms: u64) -> ScriptTurn {
        self.chunk_delay_ms = chunk_delay_ms;
        self
    }

    /// Breaks the connection after `events` streamed events.
    pub fn cut_after(mut self, events: usize) -> ScriptTurn {
        self.cut_after_events = Some(events);
        self
    }

    /// Sets the error's `retry-after` (seconds).
    pub fn retry_after(mut self, seconds: u64) -> ScriptTurn {
        if let Some(error) = &mut self.error {
            error.retry_after = Some(seconds as f64);
        }
        self
    }

    /// Sets the error's `retry-after` to any number of seconds (`1e20`).
    pub fn retry_after_secs_f64(mut self, seconds: f64) -> ScriptTurn {
        if let Some(error) = &mut self.error {
            error.retry_after = Some(seconds);
        }
        self
    }

    /// Sets the error's `retry-after-ms`.
    pub fn retry_after_ms(mut self, millis: u64) -> ScriptTurn {
        if let Some(error) = &mut self.error {
            error.retry_after_ms = Some(millis as f64);
        }
        self
    }

    /// Sets the error's `retry-after-ms` to any number (`1e30`).
    pub fn retry_after_ms_f64(mut self, millis: f64) -> ScriptTurn {
        if let Some(error) = &mut self.error {
            error.retry_after_ms = Some(millis);
        }
        self
    }

    /// Sets the error's type or code.
    pub fn error_kind(mut self, kind: &str) -> ScriptTurn {
        if let Some(error) = &mut self.error {
            error.kind = Some(kind.to_owned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script format's example in docs/agents.md is a script this crate reads.
    #[test]
    fn the_documented_example_script_parses() {
        let docs = include_str!("../../../docs/agents.md");
        let start = docs
            .find("### The script format")
            .and_then(|at| {
                docs[at..]
                    .find("```json")
                    .map(|offset| at + offset + "```json".len())
            })
            .unwrap();
        let end = start + docs[start..].find("```").unwrap();
        let script = Script::from_json(&docs[start..end]).unwrap();
        assert_eq!(script.turns.len(), 8);
        assert_eq!(script.turns[1].tool_calls.len(), 2);
        assert_eq!(
            script.turns[3].error.as_ref().unwrap().retry_after,
            Some(1.0)
        );
        assert_eq!(script.turns[7].redirect.as_ref().unwrap().status, 302);
    }

    #[test]
    fn a_turn_that_is_two_things_or_an_unknown_field_is_refused() {
        for bad in [
            r#"{"turns":[{"text":"x","redirect":{"location":"http://127.0.0.1:9"}}]}"#,
            r#"{"turns":[{"error":{"status":200}}]}"#,
            r#"{"turns":[{"redirect":{"status":200,"location":"x"}}]}"#,
            r#"{"turns":[{"tool_calls":[{"name":""}]}]}"#,
            r#"{"turns":[{"txt":"typo"}]}"#,
            r#"{"turns":[{"text":"x","raw":{"parts":[]}}]}"#,
            r#"{"turns":[{"raw":{"parts":[],"chunk_bytes":0}}]}"#,
        ] {
            assert!(Script::from_json(bad).is_err(), "{bad}");
        }
    }
}
