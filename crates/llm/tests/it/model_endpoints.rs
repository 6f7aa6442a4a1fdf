//! G11 for model endpoints: a provider's base URL is not a way into the platform's network.
//! Every refusal happens before a single byte is sent; names come from an injected resolver,
//! never from DNS; the only listeners are fake models on 127.0.0.1.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_model::ScriptTurn;
use llm::{
    Client, EndpointPolicy, Error, ExtraRange, Model, Provider, ProviderKind, PublicEndpoints,
    Recorder, Resolve, Resolving, StaticResolver, TurnRequest,
};
use redact::SecretValue;

use crate::support::{KEY, fake, options, provider};

fn key() -> SecretValue {
    SecretValue::new(KEY.to_owned())
}

async fn turn_at(base_url: &str, client: Client) -> Result<llm::Turn, Error> {
    let provider = Provider::new(
        &ids::AccountId::parse("acct").unwrap(),
        ProviderKind::Anthropic,
        Some(base_url),
        key(),
        client,
    )
    .unwrap();
    provider
        .turn(
            &TurnRequest::new("fake-large", "hello"),
            &mut Recorder::default(),
        )
        .await
}

fn refusal(result: Result<llm::Turn, Error>) -> String {
    match result {
        Err(error @ Error::EndpointRefused { .. }) => error.to_string(),
        other => panic!("expected the endpoint to be refused, got {other:?}"),
    }
}

/// A resolver that counts its lookups, over a fixed table.
struct Counting {
    table: StaticResolver,
    lookups: AtomicUsize,
}

impl Resolve for Counting {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.table.resolve(host, port)
    }
}

#[tokio::test]
async fn g11_a_base_url_at_127_0_0_1_without_the_exemption_is_refused() {
    let fake = fake(vec![ScriptTurn::text("must not answer")]).await;
    let port = fake.address().port();
    let client = Client::new(options(&[])).unwrap();
    let https = refusal(turn_at(&format!("https://127.0.0.1:{port}"), client.clone()).await);
    assert!(https.contains("127.0.0.0/8 (loopback)"), "{https}");
    assert!(
        https.contains(&format!("--allow-model-endpoint 127.0.0.1:{port}")),
        "the refusal says how the operator exempts it: {https}"
    );
    let http = refusal(turn_at(&fake.url(), client).await);
    assert!(http.contains("plain `http`"), "{http}");
    assert!(fake.requests().is_empty(), "nothing reached the listener");
}

/// Refusals of addresses outside loopback are checked with `check_endpoint`, which never
/// connects: a broken check must not send a packet to 10.0.0.1 or a public address.
async fn refused_check(client: &Client, url: &str) -> String {
    let url = reqwest_url(url);
    match client.check_endpoint(&url).await {
        Err(error @ Error::EndpointRefused { .. }) => error.to_string(),
        other => panic!("expected {url} to be refused, got {other:?}"),
    }
}

fn reqwest_url(url: &str) -> llm::Url {
    llm::Url::parse(url).unwrap()
}

#[tokio::test]
async fn g11_a_name_resolving_to_10_0_0_1_is_refused() {
    let resolver = Arc::new(Counting {
        table: StaticResolver::new()
            .with("models.example.test", &["10.0.0.1".parse().unwrap()])
            .with(
                "mixed.example.test",
                &[
                    "93.184.215.14".parse().unwrap(),
                    "10.0.0.1".parse().unwrap(),
                ],
            )
            .with(
                "metadata.example.test",
                &["169.254.169.254".parse().unwrap()],
            )
            .with("loopback.example.test", &["127.0.0.2".parse().unwrap()]),
        lookups: AtomicUsize::new(0),
    });
    let mut options = options(&[]);
    options.resolver = resolver.clone();
    let client = Client::new(options).unwrap();
    let private = refused_check(&client, "https://models.example.test/v1/messages").await;
    assert!(
        private.contains("`models.example.test` resolves to 10.0.0.1, which is in 10.0.0.0/8"),
        "{private}"
    );
    // Every address is checked: one private address among public ones is enough to refuse.
    let mixed = refused_check(&client, "https://mixed.example.test/v1/messages").await;
    assert!(mixed.contains("10.0.0.1"), "{mixed}");
    let metadata = refused_check(&client, "https://metadata.example.test/v1").await;
    assert!(metadata.contains("169.254.169.254"), "{metadata}");
    // The same refusal on the way of a real turn (to a loopback address: safe to try).
    let through_a_turn = refusal(turn_at("https://loopback.example.test", client).await);
    assert!(
        through_a_turn.contains("resolves to 127.0.0.2"),
        "{through_a_turn}"
    );
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn g11_a_redirect_to_another_host_is_not_followed_and_its_target_receives_nothing() {
    let target = fake(vec![ScriptTurn::text("the redirect target answered")]).await;
    let redirecting = fake(vec![ScriptTurn::redirect(
        302,
        &format!("{}/v1/messages", target.url()),
    )])
    .await;
    // Both are exempted: the redirect alone must stop the request.
    let client = Client::new(options(&[&redirecting.endpoint(), &target.endpoint()])).unwrap();
    let result = turn_at(&redirecting.url(), client).await;
    match result {
        Err(error @ Error::Redirected { status: 302, .. }) => {
            let shown = error.to_string();
            assert!(shown.contains("redirects are never followed"), "{shown}");
        }
        other => panic!("expected the redirect to be refused, got {other:?}"),
    }
    assert_eq!(redirecting.requests().len(), 1);
    assert!(
        target.requests().is_empty(),
        "the redirect target got a request"
    );
}

#[tokio::test]
async fn g11_an_http_url_of_a_public_host_is_refused_before_any_lookup() {
    let resolver = Arc::new(Counting {
        table: StaticResolver::new()
            .with("models.example.test", &["93.184.215.14".parse().unwrap()]),
        lookups: AtomicUsize::new(0),
    });
    let mut options = options(&[]);
    options.resolver = resolver.clone();
    let client = Client::new(options).unwrap();
    let shown = refused_check(&client, "http://models.example.test/v1").await;
    assert!(shown.contains("use `https://`"), "{shown}");
    let shown = refused_check(&client, "http://93.184.215.14/v1/messages").await;
    assert!(shown.contains("plain `http`"), "{shown}");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 0);
    // The public https form passes the check (it is never connected to here).
    let passed = client
        .check_endpoint(&reqwest_url("https://models.example.test/v1"))
        .await
        .unwrap();
    assert_eq!(passed, ["93.184.215.14:443".parse().unwrap()]);
}

#[tokio::test]
async fn g11_the_fake_model_works_through_the_operators_exemption() {
    let fake = fake(vec![ScriptTurn::text("through the exemption")]).await;
    let provider = provider(ProviderKind::OpenAi, &fake);
    let turn = provider
        .turn(&TurnRequest::new("m", "hi"), &mut Recorder::default())
        .await
        .unwrap();
    assert_eq!(turn.text, "through the exemption");
}

#[tokio::test]
async fn g11_an_exempted_name_is_resolved_once_and_connected_to_as_resolved() {
    // `fake-model.test` exists only in this table: the request can only have reached the
    // listener through the address the check resolved, never through a second lookup.
    let fake = fake(vec![ScriptTurn::text("reached by name")]).await;
    let port = fake.address().port();
    let resolver = Arc::new(Counting {
        table: StaticResolver::new().with("fake-model.test", &[IpAddr::from([127, 0, 0, 1])]),
        lookups: AtomicUsize::new(0),
    });
    let mut options = options(&[&format!("fake-model.test:{port}")]);
    options.resolver = resolver.clone();
    let result = turn_at(
        &format!("http://fake-model.test:{port}"),
        Client::new(options).unwrap(),
    )
    .await;
    assert_eq!(result.unwrap().text, "reached by name");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(
        fake.requests()[0].header("host"),
        Some(format!("fake-model.test:{port}").as_str())
    );
}

#[tokio::test]
async fn g11_a_server_that_reaches_only_exempted_endpoints_refuses_every_other() {
    let resolver = Arc::new(Counting {
        table: StaticResolver::new().with("api.example.test", &["93.184.215.14".parse().unwrap()]),
        lookups: AtomicUsize::new(0),
    });
    let mut options = options(&[]);
    options.resolver = resolver.clone();
    options.endpoints.public = PublicEndpoints::Refused;
    let shown = refused_check(&Client::new(options).unwrap(), "https://api.example.test").await;
    assert!(
        shown.contains("only the model endpoints its operator exempted"),
        "{shown}"
    );
    assert_eq!(
        resolver.lookups.load(Ordering::SeqCst),
        0,
        "not even resolved"
    );
}

#[tokio::test]
async fn g11_the_platforms_own_endpoints_and_the_hosts_addresses_are_refused() {
    let mut options = options(&[]);
    options.endpoints = EndpointPolicy {
        exempt: Vec::new(),
        public: PublicEndpoints::Allowed,
        denied: vec![ExtraRange {
            range: "93.184.215.14".parse().unwrap(),
            why: "the platform's API".to_owned(),
        }],
    };
    let client = Client::new(options).unwrap();
    let shown = refused_check(&client, "https://93.184.215.14/v1/messages").await;
    assert!(shown.contains("the platform's API"), "{shown}");
    // Every address of this host's interfaces, loopback or not.
    let addresses: Vec<IpAddr> = if_addrs_of_this_host();
    assert!(!addresses.is_empty());
    for address in addresses {
        let url = match address {
            IpAddr::V4(v4) => format!("https://{v4}"),
            IpAddr::V6(v6) => format!("https://[{v6}]"),
        };
        let shown = refused_check(&client, &url).await;
        assert!(shown.contains(&address.to_string()), "{shown}");
    }
}

fn if_addrs_of_this_host() -> Vec<IpAddr> {
    // The same source the check uses, read here independently through the OS: every address
    // `ip addr` would list.
    std::fs::read_to_string("/proc/net/fib_trie")
        .ok()
        .map(|text| {
            let mut locals = Vec::new();
            let lines: Vec<&str> = text.lines().collect();
            for pair in lines.windows(2) {
                if pair[1].contains("/32 host LOCAL")
                    && let Some(address) = pair[0].trim().strip_prefix("|-- ")
                    && let Ok(address) = address.parse::<IpAddr>()
                    && !locals.contains(&address)
                {
                    locals.push(address);
                }
            }
            locals
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn g16_the_key_reaches_no_request_but_the_providers() {
    let target = fake(vec![ScriptTurn::text("never")]).await;
    let provider_fake = fake(vec![
        ScriptTurn::text("first"),
        ScriptTurn::redirect(307, &format!("{}/v1/messages", target.url())),
    ])
    .await;
    let client = Client::new(options(&[&provider_fake.endpoint(), &target.endpoint()])).unwrap();
    let provider = Provider::new(
        &ids::AccountId::parse("acct").unwrap(),
        ProviderKind::Anthropic,
        Some(&provider_fake.url()),
        key(),
        client,
    )
    .unwrap();
    let request = TurnRequest::new("fake-large", "hello");
    provider
        .turn(&request, &mut Recorder::default())
        .await
        .unwrap();
    let redirected = provider.turn(&request, &mut Recorder::default()).await;
    assert!(matches!(
        redirected,
        Err(Error::Redirected { status: 307, .. })
    ));
    assert!(
        target.requests().is_empty(),
        "the key went to the redirect target"
    );
    for received in provider_fake.requests() {
        let holding: Vec<&str> = received
            .headers
            .iter()
            .filter(|(_, value)| value.contains(KEY))
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(holding, ["x-api-key"]);
        assert!(!String::from_utf8_lossy(&received.body).contains(KEY));
    }
}

/// A base URL whose host ends with a dot (`api.anthropic.com.`) is refused when the provider
/// is set up, with words that say what to write instead; not left to fail at the first
/// request with a message about names that were not checked.
#[tokio::test]
async fn a_host_with_a_trailing_dot_is_refused_with_a_clear_error() {
    for (kind, base_url) in [
        (ProviderKind::Anthropic, "https://api.anthropic.com./"),
        (ProviderKind::OpenAi, "http://llm.internal.:8081/v1"),
    ] {
        let client = Client::new(options(&["llm.internal:8081"])).unwrap();
        let error = match Provider::new(
            &ids::AccountId::parse("acct").unwrap(),
            kind,
            Some(base_url),
            key(),
            client,
        ) {
            Err(error) => error,
            Ok(_) => panic!("{base_url} accepted"),
        };
        assert_eq!(error.kind(), "invalid_base_url", "{error}");
        let words = error.to_string();
        assert!(words.contains("ends with a dot"), "{words}");
        assert!(words.contains("write the name without it"), "{words}");
    }
}
