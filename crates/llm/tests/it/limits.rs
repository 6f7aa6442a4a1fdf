//! What a hostile or broken endpoint cannot do to the platform: make it panic, hold it past
//! the turn's deadline, or make it spend memory and CPU far beyond what a turn needs. Each
//! case runs for both providers, streamed and whole.

use std::sync::Arc;
use std::time::Duration;

use fake_model::{RawPart, ScriptTurn};
use llm::{
    ClientOptions, Error, Model, ProviderKind, Recorder, StaticResolver, ToolDefinition, Turn,
    TurnRequest,
};
use serde_json::{Value, json};

use crate::support::{fake, options, provider, provider_with};

/// Both providers, streamed and whole.
pub const MODES: [(ProviderKind, bool); 4] = [
    (ProviderKind::Anthropic, true),
    (ProviderKind::Anthropic, false),
    (ProviderKind::OpenAi, true),
    (ProviderKind::OpenAi, false),
];

pub fn request(stream: bool) -> TurnRequest {
    TurnRequest {
        stream,
        ..TurnRequest::new("fake-large", "What is in notes.txt?")
    }
}

/// A `retry-after` of 1e20 seconds (finite, but more than a `Duration` holds) is a wait
/// longer than the client ever waits: the error comes back at once, nothing panics, nothing
/// is sent again. The same for `retry-after-ms: 1e30`.
#[tokio::test]
async fn a_huge_retry_after_is_longer_than_any_wait_and_panics_nothing() {
    for (kind, stream) in MODES {
        for limited in [
            ScriptTurn::error(429, "slow down").retry_after_secs_f64(1e20),
            ScriptTurn::error(429, "slow down").retry_after_ms_f64(1e30),
        ] {
            let fake = fake(vec![limited, ScriptTurn::text("never")]).await;
            let provider = provider(kind, &fake);
            let mut recorder = Recorder::default();
            let started = std::time::Instant::now();
            let result = provider.turn(&request(stream), &mut recorder).await;
            match result {
                Err(Error::RateLimited { retry_after, .. }) => {
                    assert!(retry_after.is_some_and(|wait| wait > Duration::from_secs(3600)))
                }
                other => panic!("{kind} stream={stream}: expected a rate limit, got {other:?}"),
            }
            assert!(recorder.retries.is_empty());
            assert_eq!(fake.requests().len(), 1);
            assert!(started.elapsed() < Duration::from_secs(2));
        }
    }
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "Read".to_owned(),
        description: "Reads a file of the workspace.".to_owned(),
        input_schema: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
    }
}

/// A request that offers the `Read` tool.
pub fn offering_tools(stream: bool) -> TurnRequest {
    TurnRequest {
        tools: vec![read_tool()],
        ..request(stream)
    }
}

/// `{"a":[0,0,...]}` of about `bytes` bytes: 2 bytes an element on the wire, a 32-byte
/// `serde_json::Value` each once parsed (16 times the memory).
fn zeros(bytes: usize) -> Value {
    json!({ "a": vec![0; bytes / 2] })
}

/// Options whose whole-answer cap is no obstacle, so the arguments' own caps are what refuse.
fn roomy(fake: &fake_model::FakeModel) -> ClientOptions {
    ClientOptions {
        max_response_bytes: 8 * 1024 * 1024,
        ..options(&[&fake.endpoint()])
    }
}

/// A tool call's arguments are at most 1 MiB of JSON: more is refused before it is parsed
/// into memory 16 times its size, and names the tool. Just under passes.
#[tokio::test]
async fn a_tool_call_with_more_than_1_mib_of_arguments_is_refused() {
    for (kind, stream) in MODES {
        let fake = fake(vec![
            ScriptTurn::call("Read", zeros(1_200 * 1024)),
            ScriptTurn::call("Read", zeros(900 * 1024)),
        ])
        .await;
        let provider = provider_with(kind, &fake, roomy(&fake));
        let error = provider
            .turn(&offering_tools(stream), &mut Recorder::default())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            "tool_arguments_too_large",
            "{kind} stream={stream}: {error}"
        );
        assert!(error.to_string().contains("`Read`"), "{error}");
        let turn = provider
            .turn(&offering_tools(stream), &mut Recorder::default())
            .await
            .unwrap();
        assert_eq!(turn.tool_calls.len(), 1, "{kind} stream={stream}");
    }
}

/// The calls of one turn have at most 2 MiB of arguments together: three calls of 900 KiB
/// each are refused although each alone would pass.
#[tokio::test]
async fn the_calls_of_one_turn_have_at_most_2_mib_of_arguments_together() {
    for (kind, stream) in MODES {
        let fake = fake(vec![
            ScriptTurn::call("Read", zeros(900 * 1024))
                .with_call("Read", zeros(900 * 1024))
                .with_call("Read", zeros(900 * 1024)),
        ])
        .await;
        let provider = provider_with(kind, &fake, roomy(&fake));
        let error = provider
            .turn(&offering_tools(stream), &mut Recorder::default())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            "tool_arguments_too_large",
            "{kind} stream={stream}: {error}"
        );
    }
}

/// A request that offered no tools gets no tool calls: an answer with one is refused.
#[tokio::test]
async fn a_tool_call_in_answer_to_a_request_that_offered_no_tools_is_refused() {
    for (kind, stream) in MODES {
        let fake = fake(vec![ScriptTurn::call("Read", json!({ "path": "a.txt" }))]).await;
        let provider = provider(kind, &fake);
        let error = provider
            .turn(&request(stream), &mut Recorder::default())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            "invalid_response",
            "{kind} stream={stream}: {error}"
        );
        assert!(error.to_string().contains("offered no tools"), "{error}");
    }
}

/// By default an answer is at most 8 MiB (what a turn needs: text and tool calls within
/// their caps), not 32.
#[tokio::test]
async fn by_default_an_answer_is_at_most_8_mib() {
    for (kind, stream) in MODES {
        let fake = fake(vec![ScriptTurn::text(&"x".repeat(9 * 1024 * 1024))]).await;
        let defaults = ClientOptions {
            endpoints: options(&[&fake.endpoint()]).endpoints,
            resolver: Arc::new(StaticResolver::new()),
            ..ClientOptions::default()
        };
        let provider = provider_with(kind, &fake, defaults);
        match provider
            .turn(&request(stream), &mut Recorder::default())
            .await
        {
            Err(Error::ResponseTooLarge { limit }) => assert_eq!(limit, 8 * 1024 * 1024),
            other => panic!("{kind} stream={stream}: expected too large, got {other:?}"),
        }
    }
}

/// Turns in flight are bounded per account and for the whole client: one more is refused at
/// once with [`Error::Busy`] and sends nothing; a finished turn frees its place.
#[tokio::test]
async fn turns_in_flight_are_bounded_per_account_and_for_the_client() {
    let fake = fake_model::FakeModel::start(fake_model::Script {
        turns: vec![ScriptTurn::text("slowly").slow(400)],
        repeat: true,
    })
    .await
    .unwrap();
    let client = llm::Client::new(ClientOptions {
        max_concurrent_turns: 3,
        max_concurrent_turns_per_account: 2,
        ..options(&[&fake.endpoint()])
    })
    .unwrap();
    let of = |account: &str| {
        Arc::new(
            llm::Provider::new(
                &ids::AccountId::parse(account).unwrap(),
                ProviderKind::Anthropic,
                Some(&fake.url()),
                redact::SecretValue::new(crate::support::KEY.to_owned()),
                client.clone(),
            )
            .unwrap(),
        )
    };
    let spawn = |provider: Arc<llm::Provider>| {
        tokio::spawn(async move {
            provider
                .turn(&request(false), &mut Recorder::default())
                .await
        })
    };
    let (first, second, other) = (of("a"), of("a"), of("b"));
    let running = [spawn(first.clone()), spawn(second), spawn(other.clone())];
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    match first.turn(&request(false), &mut Recorder::default()).await {
        Err(error @ Error::Busy { .. }) => {
            assert!(error.to_string().contains("for this account"), "{error}");
        }
        other => panic!("expected busy for the account, got {other:?}"),
    }
    match of("c")
        .turn(&request(false), &mut Recorder::default())
        .await
    {
        Err(error @ Error::Busy { .. }) => {
            assert!(error.to_string().contains("this server"), "{error}");
        }
        other => panic!("expected busy for the client, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_millis(200));
    assert_eq!(fake.requests().len(), 3);
    for turn in running {
        turn.await.unwrap().unwrap();
    }
    first
        .turn(&request(false), &mut Recorder::default())
        .await
        .unwrap();
}

/// A streamed answer of `body` in raw bytes, in 1 KiB pieces.
async fn raw_stream_turn(
    kind: ProviderKind,
    parts: Vec<RawPart>,
) -> (Result<Turn, Error>, Duration) {
    let fake = fake(vec![ScriptTurn::raw(parts, Some(1024))]).await;
    let roomy = ClientOptions {
        max_response_bytes: 64 * 1024 * 1024,
        turn_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(30),
        ..options(&[&fake.endpoint()])
    };
    let provider = provider_with(kind, &fake, roomy);
    let started = std::time::Instant::now();
    let mut recorder = Recorder::default();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        provider.turn(&request(true), &mut recorder),
    )
    .await
    .unwrap_or_else(|_| panic!("{kind}: still reading the stream after 20 s"));
    (result, started.elapsed())
}

/// The event stream is read in time linear in its size: 32 MiB without a line break, in
/// 1 KiB pieces, is refused once the line passes 1 MiB, quickly, instead of being scanned
/// again from its start at every piece.
#[tokio::test]
async fn a_line_that_never_ends_is_refused_at_1_mib_in_bounded_time() {
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let (result, took) = raw_stream_turn(
            kind,
            vec![
                RawPart::text("data: "),
                RawPart::text(&"x".repeat(1024)).repeated(32 * 1024),
            ],
        )
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.kind(), "invalid_response", "{kind}: {error}");
        assert!(error.to_string().contains("line"), "{kind}: {error}");
        // Loosely: the old parser took minutes; a linear one takes a fraction of a second.
        assert!(took < Duration::from_secs(5), "{kind}: {took:?}");
    }
}

/// Many lines of one event count together: an event is at most 1 MiB too.
#[tokio::test]
async fn an_event_of_many_lines_is_refused_at_1_mib() {
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let (result, took) = raw_stream_turn(
            kind,
            vec![RawPart::text(&format!("data: {}\n", "y".repeat(1000))).repeated(4 * 1024)],
        )
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.kind(), "invalid_response", "{kind}: {error}");
        assert!(error.to_string().contains("event"), "{kind}: {error}");
        assert!(took < Duration::from_secs(5), "{kind}: {took:?}");
    }
}

/// A complete, valid stream of `kind` whose text is `hi`.
fn valid_stream(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        ),
        ProviderKind::OpenAi => concat!(
            "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        ),
    }
}

/// A stream that is not UTF-8 is an error where the bad byte is, even in a comment line
/// before a complete turn: no byte is read past it, and nothing of the turn is used.
#[tokio::test]
async fn a_byte_that_is_not_utf_8_early_in_the_stream_is_an_error() {
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let (result, took) = raw_stream_turn(
            kind,
            vec![
                RawPart::text(": comment "),
                RawPart::bytes(&[0xFF]),
                RawPart::text("\n\n"),
                RawPart::text(valid_stream(kind)),
            ],
        )
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.kind(), "invalid_response", "{kind}: {error}");
        assert!(error.to_string().contains("UTF-8"), "{kind}: {error}");
        assert!(took < Duration::from_secs(5), "{kind}: {took:?}");
        // The same stream without the bad byte is a turn.
        let (result, _) = raw_stream_turn(kind, vec![RawPart::text(valid_stream(kind))]).await;
        assert_eq!(result.unwrap().text, "hi", "{kind}");
    }
}

/// One deadline holds for the whole turn, retries and their waits included: three 429s that
/// each ask for 1 s, under a 1.5 s turn, end in the rate limit once the next wait would pass
/// the deadline, not after 3 s with the fourth attempt's answer.
#[tokio::test]
async fn one_deadline_holds_for_the_whole_turn_retries_included() {
    for (kind, stream) in MODES {
        let limited = || ScriptTurn::error(429, "slow down").retry_after(1);
        let fake = fake(vec![
            limited(),
            limited(),
            limited(),
            ScriptTurn::text("late"),
        ])
        .await;
        let short = ClientOptions {
            turn_timeout: Duration::from_millis(1_500),
            ..options(&[&fake.endpoint()])
        };
        let provider = provider_with(kind, &fake, short);
        let started = std::time::Instant::now();
        let result = provider
            .turn(&request(stream), &mut Recorder::default())
            .await;
        let took = started.elapsed();
        let error = result.expect_err("the turn outlived its deadline");
        assert!(
            ["rate_limited", "timeout"].contains(&error.kind()),
            "{kind} stream={stream}: {error}"
        );
        assert!(
            took < Duration::from_millis(1_700),
            "{kind} stream={stream}: {took:?}"
        );
        assert!(fake.requests().len() <= 2, "{kind} stream={stream}");
    }
}

/// An error answer is read for its message for a few seconds at most: a body that trickles
/// a byte a second (never silent long enough for the idle timeout) still gives its error
/// within 5 s.
#[tokio::test]
async fn an_error_body_that_trickles_is_read_for_a_few_seconds_at_most() {
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let fake = fake(vec![
            ScriptTurn::raw(
                vec![
                    RawPart::text("{\"error\":{\"message\":\""),
                    RawPart::text("x").repeated(30),
                    RawPart::text("\"}}"),
                ],
                Some(1),
            )
            .raw_status(500, "application/json")
            .slow(1_000),
        ])
        .await;
        let provider = provider(kind, &fake);
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(
            Duration::from_secs(10),
            provider.turn(&request(false), &mut Recorder::default()),
        )
        .await
        .unwrap_or_else(|_| panic!("{kind}: still reading the error body after 10 s"));
        let error = result.unwrap_err();
        assert_eq!(error.kind(), "server", "{kind}: {error}");
        assert!(started.elapsed() < Duration::from_secs(5), "{kind}");
    }
}

/// A test prompt (`stepward models test`, the server's test route) has a short budget of
/// its own (`probe_timeout`, 60 s by default), not a whole turn's 600 s.
#[tokio::test]
async fn a_test_prompt_has_a_short_budget_of_its_own() {
    assert_eq!(
        ClientOptions::default().probe_timeout,
        Duration::from_secs(60)
    );
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let fake = fake(vec![ScriptTurn::text("slow").slow(2_500)]).await;
        let short = ClientOptions {
            probe_timeout: Duration::from_millis(500),
            ..options(&[&fake.endpoint()])
        };
        let provider = provider_with(kind, &fake, short);
        let started = std::time::Instant::now();
        let probe = provider.probe("fake-large").await;
        let error = probe.result.unwrap_err();
        assert_eq!(error.kind(), "timeout", "{kind}: {error}");
        assert!(started.elapsed() < Duration::from_secs(1), "{kind}");
    }
}
