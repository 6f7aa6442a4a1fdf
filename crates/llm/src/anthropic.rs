//! Anthropic's Messages API: the request, the whole answer, and the SSE stream
//! (`message_start`, `content_block_start`, `content_block_delta` with `text_delta` or
//! `input_json_delta`, `content_block_stop`, `message_delta` with the stop reason and usage,
//! `message_stop`; `ping` and unknown events are skipped, `error` is an error).

use std::collections::BTreeMap;

use redact::SecretValue;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::http::{Body, ProviderProblem, clean_message};
use crate::sse::EventReader;
use crate::tools::{ToolBudget, json_arguments};
use crate::types::{Message, Observer, StopReason, ToolCall, Turn, TurnRequest, Usage};

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Map<String, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// The request body. Consecutive messages of one role are sent as one message (the API
/// wants user and assistant to alternate), and empty text blocks are left out.
pub(crate) fn request_body(request: &TurnRequest) -> serde_json::Result<Vec<u8>> {
    let mut messages: Vec<WireMessage<'_>> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![Block::Text { text }]),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(Block::Text { text });
                }
                blocks.extend(tool_calls.iter().map(|call| Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: &call.arguments,
                }));
                ("assistant", blocks)
            }
            Message::ToolResults { results } => (
                "user",
                results
                    .iter()
                    .map(|result| Block::ToolResult {
                        tool_use_id: &result.call_id,
                        content: &result.content,
                        is_error: result.is_error,
                    })
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    serde_json::to_vec(&Request {
        model: &request.model,
        max_tokens: request.max_tokens,
        system: &request.system,
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect(),
        stream: request.stream,
    })
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    model: String,
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// A content block of a whole answer: its type and the fields of the types read here. Not a
/// tagged enum, which serde would buffer whole, parsed, before looking at the tag; a tool's
/// input stays text until it is measured.
#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    input: Option<Box<RawValue>>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refused,
        other => StopReason::Other(other.to_owned()),
    }
}

fn tool_call(id: String, name: String, input: Value) -> Result<ToolCall, Error> {
    if id.is_empty() || name.is_empty() {
        return Err(Error::InvalidResponse {
            detail: "a tool_use block has no id or no name".to_owned(),
        });
    }
    match input {
        Value::Object(arguments) => Ok(ToolCall {
            id,
            name,
            arguments,
        }),
        _ => Err(Error::InvalidResponse {
            detail: format!("the input of the call to `{name}` is not a JSON object"),
        }),
    }
}

/// Reads a whole (not streamed) answer.
pub(crate) async fn read_whole(
    mut body: Body,
    key: &SecretValue,
    budget: &mut ToolBudget,
) -> Result<Turn, Error> {
    let bytes = body.read_to_end(usize::MAX).await?;
    let response: Response =
        serde_json::from_slice(&bytes).map_err(|error| Error::InvalidResponse {
            detail: clean_message(&format!("not a Messages API answer: {error}"), key),
        })?;
    let Some(reason) = response.stop_reason else {
        return Err(Error::StreamCut {
            detail: "the answer has no stop_reason".to_owned(),
        });
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in response.content {
        match block.kind.as_str() {
            "text" => text.push_str(&block.text),
            "tool_use" => {
                let input = block.input.as_deref().map_or("{}", RawValue::get);
                let arguments = budget.whole_call(&block.name, input)?;
                tool_calls.push(tool_call(block.id, block.name, Value::Object(arguments))?);
            }
            _ => {}
        }
    }
    Ok(Turn {
        model: response.model,
        text,
        tool_calls,
        usage: Usage {
            input_tokens: response.usage.input_tokens.unwrap_or(0),
            output_tokens: response.usage.output_tokens.unwrap_or(0),
        },
        stop_reason: stop_reason(&reason),
    })
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        #[serde(rename = "index")]
        _index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Error {
        error: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: String,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the wire's own names: text_delta, input_json_delta
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        start_input: Value,
        json: String,
    },
    Other,
}

/// Reads a streamed answer; text goes to `observer` as it arrives, tool calls only with the
/// whole turn, once `message_stop` came after a stop reason.
pub(crate) async fn read_stream(
    body: Body,
    observer: &mut dyn Observer,
    key: &SecretValue,
    budget: &mut ToolBudget,
) -> Result<Turn, Error> {
    let mut events = EventReader::new(body);
    let mut model = String::new();
    let mut usage = Usage::default();
    let mut blocks: BTreeMap<usize, Partial> = BTreeMap::new();
    let mut reason: Option<String> = None;
    while let Some(event) = events.next().await? {
        if event.data.is_empty() {
            continue;
        }
        let parsed: StreamEvent =
            serde_json::from_str(&event.data).map_err(|error| Error::InvalidResponse {
                detail: clean_message(
                    &format!("a `{}` event is not valid: {error}", event.event),
                    key,
                ),
            })?;
        match parsed {
            StreamEvent::MessageStart { message } => {
                model = message.model;
                usage.input_tokens = message.usage.input_tokens.unwrap_or(0);
                usage.output_tokens = message.usage.output_tokens.unwrap_or(0);
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let partial = match content_block {
                    StartBlock::Text { text } => {
                        if !text.is_empty() {
                            observer.text(&text);
                        }
                        Partial::Text(text)
                    }
                    StartBlock::ToolUse { id, name, input } => {
                        budget.start(&name)?;
                        Partial::Tool {
                            id,
                            name,
                            start_input: input,
                            json: String::new(),
                        }
                    }
                    StartBlock::Other => Partial::Other,
                };
                blocks.insert(index, partial);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let Some(partial) = blocks.get_mut(&index) else {
                    return Err(Error::InvalidResponse {
                        detail: format!("a delta for block {index}, which was never started"),
                    });
                };
                match (partial, delta) {
                    (Partial::Text(text), BlockDelta::TextDelta { text: part }) => {
                        observer.text(&part);
                        text.push_str(&part);
                    }
                    (
                        Partial::Tool { name, json, .. },
                        BlockDelta::InputJsonDelta { partial_json },
                    ) => {
                        json.push_str(&partial_json);
                        budget.charge(name, json.len(), partial_json.len())?;
                    }
                    (_, BlockDelta::Other) | (Partial::Other, _) => {}
                    _ => {
                        return Err(Error::InvalidResponse {
                            detail: format!("block {index} got a delta of another kind"),
                        });
                    }
                }
            }
            StreamEvent::ContentBlockStop { .. } | StreamEvent::Other => {}
            StreamEvent::MessageDelta {
                delta,
                usage: delta_usage,
            } => {
                if let Some(stop) = delta.stop_reason {
                    reason = Some(stop);
                }
                if let Some(input) = delta_usage.input_tokens {
                    usage.input_tokens = input;
                }
                if let Some(output) = delta_usage.output_tokens {
                    usage.output_tokens = output;
                }
            }
            StreamEvent::Error { error } => {
                return Err(ProviderProblem::from_json(&error, key).into_error(0, None));
            }
            StreamEvent::MessageStop => {
                let Some(reason) = reason else {
                    return Err(Error::StreamCut {
                        detail: "message_stop came without a stop reason".to_owned(),
                    });
                };
                return finish(model, usage, blocks, &reason, budget);
            }
        }
    }
    Err(Error::StreamCut {
        detail: "the stream ended before message_stop".to_owned(),
    })
}

fn finish(
    model: String,
    usage: Usage,
    blocks: BTreeMap<usize, Partial>,
    reason: &str,
    budget: &mut ToolBudget,
) -> Result<Turn, Error> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for partial in blocks.into_values() {
        match partial {
            Partial::Text(part) => text.push_str(&part),
            Partial::Tool {
                id,
                name,
                start_input,
                json,
            } => {
                let input = if json.trim().is_empty() {
                    match start_input {
                        Value::Null => Value::Object(Map::new()),
                        other => {
                            // Parsed already (one event, bounded), but still counted.
                            let bytes = other.to_string().len();
                            budget.charge(&name, bytes, bytes)?;
                            other
                        }
                    }
                } else {
                    Value::Object(json_arguments(&name, &json)?)
                };
                tool_calls.push(tool_call(id, name, input)?);
            }
            Partial::Other => {}
        }
    }
    Ok(Turn {
        model,
        text,
        tool_calls,
        usage,
        stop_reason: stop_reason(reason),
    })
}
