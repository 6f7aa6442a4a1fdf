//! The OpenAI-compatible Chat Completions API (OpenAI, llama.cpp's server, vLLM, Ollama): the
//! request, the whole answer, and the SSE stream of `chat.completion.chunk`s, whose
//! `tool_calls` arrive as deltas by index, then a `finish_reason`, the usage
//! (`stream_options.include_usage`) and `[DONE]`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use redact::SecretValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::http::{Body, ProviderProblem, clean_message};
use crate::sse::EventReader;
use crate::tools::{ToolBudget, json_arguments};
use crate::types::{Message, Observer, StopReason, ToolCall, Turn, TurnRequest, Usage};

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// The arguments as JSON text, as the API wants them.
    arguments: String,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// How the answer's length limit is named: OpenAI itself wants `max_completion_tokens` (its
/// newer models refuse `max_tokens`); the compatible servers (llama.cpp, vLLM, Ollama) all
/// take `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenLimit {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenLimit {
    /// `max_completion_tokens` for `api.openai.com`, `max_tokens` for every other host.
    pub(crate) fn for_host(host: Option<&str>) -> TokenLimit {
        if host.is_some_and(|host| host.eq_ignore_ascii_case("api.openai.com")) {
            TokenLimit::MaxCompletionTokens
        } else {
            TokenLimit::MaxTokens
        }
    }
}

/// The request body. A failed tool result is marked in its text (`Error: ...`): the API has
/// no flag for it.
pub(crate) fn request_body(
    request: &TurnRequest,
    limit: TokenLimit,
) -> serde_json::Result<Vec<u8>> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: &request.system,
        });
    }
    for message in &request.messages {
        match message {
            Message::User { text } => messages.push(WireMessage::User { content: text }),
            Message::Assistant { text, tool_calls } => {
                let mut calls = Vec::with_capacity(tool_calls.len());
                for call in tool_calls {
                    calls.push(WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &call.name,
                            arguments: serde_json::to_string(&call.arguments)?,
                        },
                    });
                }
                messages.push(WireMessage::Assistant {
                    content: (!text.is_empty()).then_some(text.as_str()),
                    tool_calls: calls,
                });
            }
            Message::ToolResults { results } => {
                for result in results {
                    let content = if result.is_error {
                        Cow::Owned(format!("Error: {}", result.content))
                    } else {
                        Cow::Borrowed(result.content.as_str())
                    };
                    messages.push(WireMessage::Tool {
                        tool_call_id: &result.call_id,
                        content,
                    });
                }
            }
        }
    }
    serde_json::to_vec(&Request {
        model: &request.model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect(),
        max_tokens: (limit == TokenLimit::MaxTokens).then_some(request.max_tokens),
        max_completion_tokens: (limit == TokenLimit::MaxCompletionTokens)
            .then_some(request.max_tokens),
        stream: request.stream,
        stream_options: request.stream.then_some(StreamOptions {
            include_usage: true,
        }),
    })
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ResponseToolCall>,
}

#[derive(Deserialize)]
struct ResponseToolCall {
    #[serde(default)]
    id: String,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Usage {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refused,
        other => StopReason::Other(other.to_owned()),
    }
}

/// A call's id: the provider's, or (some local servers send none) one made from its place.
fn call_id(id: String, index: usize) -> String {
    if id.is_empty() {
        format!("call_{index}")
    } else {
        id
    }
}

fn named(name: String) -> Result<String, Error> {
    if name.is_empty() {
        Err(Error::InvalidResponse {
            detail: "a tool call has no function name".to_owned(),
        })
    } else {
        Ok(name)
    }
}

/// Reads a whole (not streamed) answer; the first choice is the turn.
pub(crate) async fn read_whole(
    mut body: Body,
    key: &SecretValue,
    budget: &mut ToolBudget,
) -> Result<Turn, Error> {
    let bytes = body.read_to_end(usize::MAX).await?;
    let response: Response =
        serde_json::from_slice(&bytes).map_err(|error| Error::InvalidResponse {
            detail: clean_message(&format!("not a Chat Completions answer: {error}"), key),
        })?;
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(Error::InvalidResponse {
            detail: "the answer has no choices".to_owned(),
        });
    };
    let Some(reason) = choice.finish_reason else {
        return Err(Error::StreamCut {
            detail: "the answer has no finish_reason".to_owned(),
        });
    };
    let mut tool_calls = Vec::new();
    for (index, call) in choice.message.tool_calls.into_iter().enumerate() {
        let name = named(call.function.name)?;
        tool_calls.push(ToolCall {
            id: call_id(call.id, index),
            arguments: budget.whole_call(&name, &call.function.arguments)?,
            name,
        });
    }
    Ok(Turn {
        model: response.model,
        text: choice.message.content.unwrap_or_default(),
        tool_calls,
        usage: response.usage.map(Usage::from).unwrap_or_default(),
        stop_reason: stop_reason(&reason),
    })
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    delta: ChunkDelta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ChunkDelta {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<DeltaToolCall>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    index: usize,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reads a streamed answer; text goes to `observer` as it arrives, tool calls only with the
/// whole turn, once `[DONE]` came after a finish reason.
pub(crate) async fn read_stream(
    body: Body,
    observer: &mut dyn Observer,
    key: &SecretValue,
    budget: &mut ToolBudget,
) -> Result<Turn, Error> {
    let mut events = EventReader::new(body);
    let mut model = String::new();
    let mut text = String::new();
    let mut calls: BTreeMap<usize, PartialCall> = BTreeMap::new();
    let mut reason: Option<String> = None;
    let mut usage = Usage::default();
    while let Some(event) = events.next().await? {
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            let Some(reason) = reason else {
                return Err(Error::StreamCut {
                    detail: "[DONE] came without a finish_reason".to_owned(),
                });
            };
            let mut tool_calls = Vec::with_capacity(calls.len());
            for (index, call) in calls {
                let name = named(call.name)?;
                tool_calls.push(ToolCall {
                    id: call_id(call.id, index),
                    arguments: json_arguments(&name, &call.arguments)?,
                    name,
                });
            }
            return Ok(Turn {
                model,
                text,
                tool_calls,
                usage,
                stop_reason: stop_reason(&reason),
            });
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| Error::InvalidResponse {
            detail: clean_message(&format!("a chunk is not valid: {error}"), key),
        })?;
        if let Some(error) = chunk.error {
            return Err(ProviderProblem::from_json(&error, key).into_error(0, None));
        }
        if model.is_empty() {
            model = chunk.model;
        }
        if let Some(chunk_usage) = chunk.usage {
            usage = chunk_usage.into();
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            if let Some(part) = choice.delta.content
                && !part.is_empty()
            {
                observer.text(&part);
                text.push_str(&part);
            }
            for delta in choice.delta.tool_calls {
                let call = match calls.entry(delta.index) {
                    Entry::Occupied(call) => call.into_mut(),
                    Entry::Vacant(place) => {
                        let name = delta
                            .function
                            .as_ref()
                            .and_then(|function| function.name.as_deref())
                            .unwrap_or_default();
                        budget.start(name)?;
                        place.insert(PartialCall::default())
                    }
                };
                // The id and name come in a call's first delta; some servers repeat them.
                if let Some(id) = delta.id
                    && call.id.is_empty()
                {
                    call.id = id;
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name
                        && call.name.is_empty()
                    {
                        call.name = name;
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                        budget.charge(&call.name, call.arguments.len(), arguments.len())?;
                    }
                }
            }
            if let Some(finish) = choice.finish_reason {
                reason = Some(finish);
            }
        }
    }
    Err(Error::StreamCut {
        detail: "the stream ended before [DONE]".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_compatible_servers_max_tokens() {
        let request = TurnRequest::new("m", "hi");
        let body = |host| -> Value {
            serde_json::from_slice(&request_body(&request, TokenLimit::for_host(host)).unwrap())
                .unwrap()
        };
        let openai = body(Some("api.openai.com"));
        assert_eq!(openai["max_completion_tokens"], 1024);
        assert!(openai.get("max_tokens").is_none());
        let local = body(Some("127.0.0.1"));
        assert_eq!(local["max_tokens"], 1024);
        assert!(local.get("max_completion_tokens").is_none());
    }
}
