//! What the tests share: a client that may reach the fake (the operator's exemption), a
//! provider of either kind over it, and the key every test pays with.

use std::sync::Arc;
use std::time::Duration;

use fake_model::{FakeModel, Format, Script, ScriptTurn};
use llm::{
    Client, ClientOptions, Endpoint, EndpointPolicy, Provider, ProviderKind, PublicEndpoints,
    RetryPolicy, StaticResolver,
};
use redact::SecretValue;

/// The model key of every test; it must reach the provider's auth header and nothing else.
pub const KEY: &str = "sk-test-0123456789-abcdefghij-key";

/// The account every test's provider belongs to.
pub const ACCOUNT: &str = "acct";

/// Short waits, so the retry and timeout tests stay quick.
pub fn options(exempt: &[&str]) -> ClientOptions {
    ClientOptions {
        endpoints: EndpointPolicy {
            exempt: exempt
                .iter()
                .map(|endpoint| endpoint.parse::<Endpoint>().unwrap())
                .collect(),
            public: PublicEndpoints::Allowed,
            denied: Vec::new(),
        },
        // No test resolves a name through the system: names are in this table or nowhere.
        resolver: Arc::new(StaticResolver::new()),
        connect_timeout: Duration::from_secs(5),
        turn_timeout: Duration::from_secs(20),
        probe_timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(5),
        max_response_bytes: 1024 * 1024,
        max_tool_argument_bytes: 1024 * 1024,
        max_turn_tool_argument_bytes: 2 * 1024 * 1024,
        max_concurrent_turns: 16,
        max_concurrent_turns_per_account: 4,
        retries: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(20),
            max_wait: Duration::from_secs(5),
        },
        extra_roots: Vec::new(),
    }
}

pub fn format_of(kind: ProviderKind) -> Format {
    match kind {
        ProviderKind::Anthropic => Format::Anthropic,
        ProviderKind::OpenAi => Format::OpenAi,
    }
}

/// A provider of `kind` over `fake`, reached through the exemption.
pub fn provider(kind: ProviderKind, fake: &FakeModel) -> Provider {
    provider_with(kind, fake, options(&[&fake.endpoint()]))
}

pub fn provider_with(kind: ProviderKind, fake: &FakeModel, options: ClientOptions) -> Provider {
    Provider::new(
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        kind,
        Some(&fake.base_url(format_of(kind))),
        SecretValue::new(KEY.to_owned()),
        Client::new(options).unwrap(),
    )
    .unwrap()
}

pub async fn fake(turns: Vec<ScriptTurn>) -> FakeModel {
    FakeModel::start(Script::new(turns)).await.unwrap()
}
