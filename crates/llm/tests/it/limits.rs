//! What a hostile or broken endpoint cannot do to the platform: make it panic, hold it past
//! the turn's deadline, or make it spend memory and CPU far beyond what a turn needs. Each
//! case runs for both providers, streamed and whole.

use std::time::Duration;

use fake_model::ScriptTurn;
use llm::{Error, Model, ProviderKind, Recorder, TurnRequest};

use crate::support::{fake, provider};

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
