//! One suite, four runs: Anthropic and OpenAI-compatible, each streamed and whole. Every case
//! is a function of the provider kind and the mode, so both providers pass exactly the same
//! checks.

use std::time::{Duration, Instant};

use fake_model::ScriptTurn;
use llm::{
    Error, Message, Model, ProviderKind, Recorder, StopReason, ToolCall, ToolDefinition,
    ToolResult, Turn, TurnRequest,
};
use serde_json::json;

use crate::support::{KEY, fake, options, provider, provider_with};

/// A request that offers a tool: the model's tool calls are answers to it (a request that
/// offers none gets none, see `limits`).
fn request(stream: bool) -> TurnRequest {
    crate::limits::offering_tools(stream)
}

async fn turn(
    kind: ProviderKind,
    stream: bool,
    turns: Vec<ScriptTurn>,
) -> (Result<Turn, Error>, Recorder, fake_model::FakeModel) {
    let fake = fake(turns).await;
    let provider = provider(kind, &fake);
    let mut recorder = Recorder::default();
    let result = provider.turn(&request(stream), &mut recorder).await;
    (result, recorder, fake)
}

pub async fn text_usage_and_model(kind: ProviderKind, stream: bool) {
    let (result, recorder, _fake) = turn(
        kind,
        stream,
        vec![ScriptTurn::text("Hello there, person of the test.").with_usage(12, 7)],
    )
    .await;
    let turn = result.unwrap();
    assert_eq!(turn.text, "Hello there, person of the test.");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (12, 7));
    assert_eq!(turn.model, "fake-large");
    assert!(turn.tool_calls.is_empty());
    // Streamed text reaches the observer as it arrives; a whole answer sends none.
    let expected_streamed = if stream { turn.text.as_str() } else { "" };
    assert_eq!(recorder.text, expected_streamed);
}

pub async fn one_tool_call(kind: ProviderKind, stream: bool) {
    let (result, _, _fake) = turn(
        kind,
        stream,
        vec![
            ScriptTurn::text("Let me look.")
                .with_call("Read", json!({ "path": "notes.txt", "lines": [1, 20] })),
        ],
    )
    .await;
    let turn = result.unwrap();
    assert_eq!(turn.text, "Let me look.");
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.tool_calls.len(), 1);
    let call = &turn.tool_calls[0];
    assert_eq!(call.name, "Read");
    assert!(!call.id.is_empty());
    assert_eq!(
        serde_json::Value::Object(call.arguments.clone()),
        json!({ "path": "notes.txt", "lines": [1, 20] })
    );
}

pub async fn several_calls_in_one_turn(kind: ProviderKind, stream: bool) {
    let (result, _, _fake) = turn(
        kind,
        stream,
        vec![
            ScriptTurn::call("Read", json!({ "path": "a.txt" }))
                .with_call("Grep", json!({ "pattern": "refund", "path": "shared/" }))
                .with_call("Glob", json!({})),
        ],
    )
    .await;
    let turn = result.unwrap();
    assert_eq!(turn.text, "");
    let names: Vec<&str> = turn
        .tool_calls
        .iter()
        .map(|call| call.name.as_str())
        .collect();
    assert_eq!(names, ["Read", "Grep", "Glob"]);
    let mut ids: Vec<&str> = turn
        .tool_calls
        .iter()
        .map(|call| call.id.as_str())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 3, "every call has its own id");
    assert_eq!(
        turn.tool_calls[1].arguments["pattern"],
        json!("refund"),
        "arguments stay with their call"
    );
    assert!(turn.tool_calls[2].arguments.is_empty());
}

pub async fn stop_reasons(kind: ProviderKind, stream: bool) {
    let (result, _, _fake) = turn(
        kind,
        stream,
        vec![ScriptTurn::text("cut at the lim").with_stop_reason("max_tokens")],
    )
    .await;
    assert_eq!(result.unwrap().stop_reason, StopReason::MaxTokens);
    let (result, _, _fake) = turn(
        kind,
        stream,
        vec![ScriptTurn::text("no").with_stop_reason("refusal")],
    )
    .await;
    assert_eq!(result.unwrap().stop_reason, StopReason::Refused);
}

/// The request carries the system prompt, the conversation with a tool's result and the tool
/// definitions in the provider's format; the key is in the provider's auth header only.
pub async fn request_shape_and_key(kind: ProviderKind, stream: bool) {
    let fake = fake(vec![ScriptTurn::text("done")]).await;
    let provider = provider(kind, &fake);
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: "Read".to_owned(),
        arguments: json!({ "path": "notes.txt" }).as_object().unwrap().clone(),
    };
    let request = TurnRequest {
        model: "fake-large".to_owned(),
        system: "You are the refund agent.".to_owned(),
        messages: vec![
            Message::User {
                text: "Refund ticket 7.".to_owned(),
            },
            Message::Assistant {
                text: "Reading.".to_owned(),
                tool_calls: vec![call],
            },
            Message::ToolResults {
                results: vec![ToolResult {
                    call_id: "call_1".to_owned(),
                    content: "ticket 7: 12.50 EUR".to_owned(),
                    is_error: false,
                }],
            },
        ],
        tools: vec![ToolDefinition {
            name: "Read".to_owned(),
            description: "Reads a file of the workspace.".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"],
            }),
        }],
        max_tokens: 300,
        stream,
    };
    provider
        .turn(&request, &mut Recorder::default())
        .await
        .unwrap();
    let received = fake.requests();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    let body = sent.json();
    assert_eq!(body["model"], "fake-large");
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["stream"], stream);
    match kind {
        ProviderKind::Anthropic => {
            assert_eq!(sent.path, "/v1/messages");
            assert_eq!(body["system"], "You are the refund agent.");
            assert_eq!(
                body["tools"][0]["input_schema"]["required"],
                json!(["path"])
            );
            assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
            assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
            assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_1");
            assert_eq!(sent.header("x-api-key"), Some(KEY));
            assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(sent.header("authorization"), None);
        }
        ProviderKind::OpenAi => {
            assert_eq!(sent.path, "/v1/chat/completions");
            assert_eq!(body["messages"][0]["role"], "system");
            assert_eq!(body["messages"][0]["content"], "You are the refund agent.");
            assert_eq!(
                body["tools"][0]["function"]["parameters"]["required"],
                json!(["path"])
            );
            assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_1");
            assert_eq!(body["messages"][3]["role"], "tool");
            assert_eq!(body["messages"][3]["tool_call_id"], "call_1");
            if stream {
                assert_eq!(body["stream_options"]["include_usage"], true);
            }
            assert_eq!(
                sent.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            assert_eq!(sent.header("x-api-key"), None);
        }
    }
    let key_headers = sent
        .headers
        .iter()
        .filter(|(_, value)| value.contains(KEY))
        .count();
    assert_eq!(key_headers, 1, "the key is in one header");
    assert!(
        !String::from_utf8_lossy(&sent.body).contains(KEY),
        "the key is never in a body"
    );
}

/// A stream cut anywhere, even inside a call's arguments, is an error; nothing of it is a
/// turn. A whole answer cut in half is one too.
pub async fn a_cut_answer_is_an_error_with_no_partial_call(kind: ProviderKind, stream: bool) {
    let cuts: &[usize] = if stream { &[1, 3, 5, 7, 9] } else { &[0] };
    for &cut in cuts {
        let (result, _, _fake) = turn(
            kind,
            stream,
            vec![
                ScriptTurn::text("Reading both.")
                    .with_call("Read", json!({ "path": "a.txt" }))
                    .with_call("Read", json!({ "path": "b.txt" }))
                    .cut_after(cut),
            ],
        )
        .await;
        match result {
            Err(Error::StreamCut { .. }) => {}
            other => panic!("cut after {cut}: expected a cut stream, got {other:?}"),
        }
    }
}

/// A 429 with `retry-after` is sent again after the wait it names, at most 3 times, each
/// retry told to the caller; the fourth 429 is the error.
pub async fn rate_limits_are_retried_at_most_three_times(kind: ProviderKind, stream: bool) {
    let limited = || ScriptTurn::error(429, "slow down").retry_after_ms(60);
    let (result, recorder, fake) = turn(
        kind,
        stream,
        vec![limited(), limited(), limited(), ScriptTurn::text("finally")],
    )
    .await;
    assert_eq!(result.unwrap().text, "finally");
    assert_eq!(fake.requests().len(), 4);
    let waits: Vec<Duration> = recorder.retries.iter().map(|retry| retry.wait).collect();
    assert_eq!(waits, [Duration::from_millis(60); 3]);
    assert_eq!(
        recorder
            .retries
            .iter()
            .map(|retry| retry.retry)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(recorder.retries[0].reason.contains("rate limiting"));

    let (result, recorder, fake) = turn(
        kind,
        stream,
        vec![
            limited(),
            limited(),
            limited(),
            limited(),
            ScriptTurn::text("never"),
        ],
    )
    .await;
    match result {
        Err(Error::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Some(Duration::from_millis(60)))
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
    assert_eq!(
        fake.requests().len(),
        4,
        "one request and 3 retries, no more"
    );
    assert_eq!(recorder.retries.len(), 3);
}

/// `retry-after` in seconds is waited for.
pub async fn retry_after_seconds_is_honoured(kind: ProviderKind, stream: bool) {
    let started = Instant::now();
    let (result, recorder, _fake) = turn(
        kind,
        stream,
        vec![
            ScriptTurn::error(429, "later").retry_after(1),
            ScriptTurn::text("ok"),
        ],
    )
    .await;
    assert_eq!(result.unwrap().text, "ok");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(recorder.retries[0].wait, Duration::from_secs(1));
}

/// Every other failure has its own type and is not retried (overload is, like a rate limit).
pub async fn other_errors_are_typed(kind: ProviderKind, stream: bool) {
    let once = |turn: ScriptTurn| vec![turn, ScriptTurn::text("a retry happened")];
    let cases: Vec<(ScriptTurn, &str)> = vec![
        (
            ScriptTurn::error(400, "model: unknown field"),
            "bad_request",
        ),
        (ScriptTurn::error(404, "model not found"), "bad_request"),
        (
            ScriptTurn::error(400, "prompt is too long: 250000 tokens > 200000 maximum"),
            "context_too_long",
        ),
        (
            ScriptTurn::error(400, "too long").error_kind("context_length_exceeded"),
            "context_too_long",
        ),
        (ScriptTurn::error(401, "invalid x-api-key"), "auth"),
        (ScriptTurn::error(403, "not allowed"), "auth"),
        (ScriptTurn::error(500, "internal"), "server"),
    ];
    for (error_turn, expected) in cases {
        let shown = format!("{error_turn:?}");
        let (result, recorder, fake) = turn(kind, stream, once(error_turn)).await;
        let error = result.unwrap_err();
        assert_eq!(error.kind(), expected, "{shown}: {error}");
        assert!(recorder.retries.is_empty(), "{shown} was retried");
        assert_eq!(fake.requests().len(), 1);
    }
    let (result, recorder, _fake) = turn(
        kind,
        stream,
        vec![
            ScriptTurn::error(529, "overloaded").retry_after_ms(10),
            ScriptTurn::text("recovered"),
        ],
    )
    .await;
    assert_eq!(result.unwrap().text, "recovered");
    assert_eq!(recorder.retries.len(), 1);
}

/// A provider's message is shown without the key, even when it quotes it.
pub async fn errors_never_hold_the_key(kind: ProviderKind, stream: bool) {
    let (result, _, _fake) = turn(
        kind,
        stream,
        vec![ScriptTurn::error(
            401,
            &format!("Incorrect API key provided: {KEY}. Find your key at the console."),
        )],
    )
    .await;
    let error = result.unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("Incorrect API key provided"), "{shown}");
}

/// A stream that stalls longer than the idle timeout is a timeout, not a hang.
pub async fn a_stalled_answer_times_out(kind: ProviderKind, stream: bool) {
    let fake = fake(vec![ScriptTurn::text("slow").slow(1_500)]).await;
    let mut short = options(&[&fake.endpoint()]);
    short.idle_timeout = Duration::from_millis(300);
    short.turn_timeout = Duration::from_millis(600);
    let provider = provider_with(kind, &fake, short);
    let started = Instant::now();
    let result = provider
        .turn(&request(stream), &mut Recorder::default())
        .await;
    assert_eq!(result.unwrap_err().kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A larger answer than the limit is refused, not read into memory.
pub async fn an_oversized_answer_is_refused(kind: ProviderKind, stream: bool) {
    let fake = fake(vec![ScriptTurn::text(&"x".repeat(300_000))]).await;
    let mut small = options(&[&fake.endpoint()]);
    small.max_response_bytes = 64 * 1024;
    let provider = provider_with(kind, &fake, small);
    let result = provider
        .turn(&request(stream), &mut Recorder::default())
        .await;
    assert_eq!(result.unwrap_err().kind(), "response_too_large");
}

macro_rules! suite {
    ($module:ident, $kind:expr, $stream:expr) => {
        mod $module {
            use llm::ProviderKind;

            const KIND: ProviderKind = $kind;
            const STREAM: bool = $stream;

            #[tokio::test]
            async fn text_usage_and_model() {
                super::text_usage_and_model(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn one_tool_call() {
                super::one_tool_call(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn several_calls_in_one_turn() {
                super::several_calls_in_one_turn(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn stop_reasons() {
                super::stop_reasons(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn g16_request_shape_and_the_key_in_the_auth_header_only() {
                super::request_shape_and_key(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn a_cut_answer_is_an_error_with_no_partial_call() {
                super::a_cut_answer_is_an_error_with_no_partial_call(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn rate_limits_are_retried_at_most_three_times() {
                super::rate_limits_are_retried_at_most_three_times(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn retry_after_seconds_is_honoured() {
                super::retry_after_seconds_is_honoured(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn other_errors_are_typed() {
                super::other_errors_are_typed(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn g16_errors_never_hold_the_key() {
                super::errors_never_hold_the_key(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn a_stalled_answer_times_out() {
                super::a_stalled_answer_times_out(KIND, STREAM).await;
            }
            #[tokio::test]
            async fn an_oversized_answer_is_refused() {
                super::an_oversized_answer_is_refused(KIND, STREAM).await;
            }
        }
    };
}

suite!(anthropic_streamed, ProviderKind::Anthropic, true);
suite!(anthropic_whole, ProviderKind::Anthropic, false);
suite!(openai_streamed, ProviderKind::OpenAi, true);
suite!(openai_whole, ProviderKind::OpenAi, false);
