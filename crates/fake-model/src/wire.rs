//! The answers of both wire formats, whole and as SSE events, built from a script turn.

use serde_json::{Value, json};

use crate::script::{ScriptError, ScriptTurn, ScriptUsage};

/// Which API a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/chat/completions` (or `/chat/completions`).
    OpenAi,
}

/// A reply turn, made concrete for one request.
pub(crate) struct Reply<'a> {
    pub(crate) turn: &'a ScriptTurn,
    /// 1 for the first answer the fake gives.
    pub(crate) number: usize,
    pub(crate) model: String,
    pub(crate) usage: ScriptUsage,
}

impl Reply<'_> {
    fn call_id(&self, format: Format, index: usize) -> String {
        match self.turn.tool_calls[index].id.clone() {
            Some(id) => id,
            None => match format {
                Format::Anthropic => format!("toolu_fake_{}_{}", self.number, index + 1),
                Format::OpenAi => format!("call_fake_{}_{}", self.number, index + 1),
            },
        }
    }

    fn anthropic_stop_reason(&self) -> String {
        self.turn.stop_reason.clone().unwrap_or_else(|| {
            if self.turn.tool_calls.is_empty() {
                "end_turn".to_owned()
            } else {
                "tool_use".to_owned()
            }
        })
    }

    fn openai_finish_reason(&self) -> String {
        match self.anthropic_stop_reason().as_str() {
            "end_turn" => "stop".to_owned(),
            "tool_use" => "tool_calls".to_owned(),
            "max_tokens" => "length".to_owned(),
            "refusal" => "content_filter".to_owned(),
            other => other.to_owned(),
        }
    }
}

/// The usual error type (Anthropic) or code (OpenAI) of a status.
fn error_kind(format: Format, status: u16) -> &'static str {
    match (format, status) {
        (Format::Anthropic, 400) => "invalid_request_error",
        (Format::Anthropic, 401) => "authentication_error",
        (Format::Anthropic, 403) => "permission_error",
        (Format::Anthropic, 404) => "not_found_error",
        (Format::Anthropic, 413) => "request_too_large",
        (Format::Anthropic, 429) => "rate_limit_error",
        (Format::Anthropic, 529) => "overloaded_error",
        (Format::Anthropic, _) => "api_error",
        (Format::OpenAi, 400) => "invalid_request_error",
        (Format::OpenAi, 401) => "invalid_api_key",
        (Format::OpenAi, 403) => "permission_denied",
        (Format::OpenAi, 404) => "model_not_found",
        (Format::OpenAi, 429) => "rate_limit_exceeded",
        (Format::OpenAi, _) => "server_error",
    }
}

/// The body of an error answer.
pub(crate) fn error_body(format: Format, error: &ScriptError) -> Value {
    let kind = error
        .kind
        .clone()
        .unwrap_or_else(|| error_kind(format, error.status).to_owned());
    match format {
        Format::Anthropic => json!({
            "type": "error",
            "error": { "type": kind, "message": error.message },
        }),
        Format::OpenAi => json!({
            "error": { "message": error.message, "type": kind, "param": null, "code": kind },
        }),
    }
}

/// The whole answer.
pub(crate) fn whole(format: Format, reply: &Reply<'_>) -> Value {
    let turn = reply.turn;
    match format {
        Format::Anthropic => {
            let mut content = Vec::new();
            if !turn.text.is_empty() {
                content.push(json!({ "type": "text", "text": turn.text }));
            }
            for (index, call) in turn.tool_calls.iter().enumerate() {
                content.push(json!({
                    "type": "tool_use",
                    "id": reply.call_id(format, index),
                    "name": call.name,
                    "input": call.arguments,
                }));
            }
            json!({
                "id": format!("msg_fake_{}", reply.number),
                "type": "message",
                "role": "assistant",
                "model": reply.model,
                "content": content,
                "stop_reason": reply.anthropic_stop_reason(),
                "stop_sequence": null,
                "usage": {
                    "input_tokens": reply.usage.input_tokens,
                    "output_tokens": reply.usage.output_tokens,
                },
            })
        }
        Format::OpenAi => {
            let mut message = json!({
                "role": "assistant",
                "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text) },
            });
            if !turn.tool_calls.is_empty() {
                message["tool_calls"] = turn
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(index, call)| {
                        json!({
                            "id": reply.call_id(format, index),
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": Value::Object(call.arguments.clone()).to_string(),
                            },
                        })
                    })
                    .collect();
            }
            json!({
                "id": format!("chatcmpl-fake-{}", reply.number),
                "object": "chat.completion",
                "created": 0,
                "model": reply.model,
                "choices": [{
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.openai_finish_reason(),
                }],
                "usage": {
                    "prompt_tokens": reply.usage.input_tokens,
                    "completion_tokens": reply.usage.output_tokens,
                    "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
                },
            })
        }
    }
}

/// The most characters of one piece: real providers send small deltas, and clients bound the
/// size of one event.
const MAX_PIECE_CHARS: usize = 16 * 1024;

/// Splits text into about three pieces (at character boundaries), so that a client must put
/// deltas together; a long text into pieces of at most 16 Ki characters.
fn pieces(text: &str) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    if characters.is_empty() {
        return Vec::new();
    }
    let size = characters.len().div_ceil(3).clamp(1, MAX_PIECE_CHARS);
    characters
        .chunks(size)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn data(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The streamed answer, one string per SSE event.
pub(crate) fn events(format: Format, reply: &Reply<'_>) -> Vec<String> {
    match format {
        Format::Anthropic => anthropic_events(reply),
        Format::OpenAi => openai_events(reply),
    }
}

fn anthropic_events(reply: &Reply<'_>) -> Vec<String> {
    let turn = reply.turn;
    let mut events = vec![
        event(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": format!("msg_fake_{}", reply.number),
                    "type": "message",
                    "role": "assistant",
                    "model": reply.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": { "input_tokens": reply.usage.input_tokens, "output_tokens": 1 },
                },
            }),
        ),
        event("ping", &json!({ "type": "ping" })),
    ];
    let mut index = 0;
    if !turn.text.is_empty() {
        events.push(event(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": { "type": "text", "text": "" },
            }),
        ));
        for piece in pieces(&turn.text) {
            events.push(event(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": { "type": "text_delta", "text": piece },
                }),
            ));
        }
        events.push(event(
            "content_block_stop",
            &json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    }
    for (call_index, call) in turn.tool_calls.iter().enumerate() {
        events.push(event(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": reply.call_id(Format::Anthropic, call_index),
                    "name": call.name,
                    "input": {},
                },
            }),
        ));
        for piece in pieces(&Value::Object(call.arguments.clone()).to_string()) {
            events.push(event(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": { "type": "input_json_delta", "partial_json": piece },
                }),
            ));
        }
        events.push(event(
            "content_block_stop",
            &json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    }
    events.push(event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": { "stop_reason": reply.anthropic_stop_reason(), "stop_sequence": null },
            "usage": { "output_tokens": reply.usage.output_tokens },
        }),
    ));
    events.push(event("message_stop", &json!({ "type": "message_stop" })));
    events
}

fn openai_events(reply: &Reply<'_>) -> Vec<String> {
    let turn = reply.turn;
    let chunk = |delta: Value, finish: Value| {
        data(&json!({
            "id": format!("chatcmpl-fake-{}", reply.number),
            "object": "chat.completion.chunk",
            "created": 0,
            "model": reply.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        }))
    };
    let mut events = vec![chunk(
        json!({ "role": "assistant", "content": "" }),
        Value::Null,
    )];
    for piece in pieces(&turn.text) {
        events.push(chunk(json!({ "content": piece }), Value::Null));
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        events.push(chunk(
            json!({ "tool_calls": [{
                "index": index,
                "id": reply.call_id(Format::OpenAi, index),
                "type": "function",
                "function": { "name": call.name, "arguments": "" },
            }] }),
            Value::Null,
        ));
        for piece in pieces(&Value::Object(call.arguments.clone()).to_string()) {
            events.push(chunk(
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!(reply.openai_finish_reason())));
    events.push(data(&json!({
        "id": format!("chatcmpl-fake-{}", reply.number),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": reply.model,
        "choices": [],
        "usage": {
            "prompt_tokens": reply.usage.input_tokens,
            "completion_tokens": reply.usage.output_tokens,
            "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
        },
    })));
    events.push("data: [DONE]\n\n".to_owned());
    events
}
