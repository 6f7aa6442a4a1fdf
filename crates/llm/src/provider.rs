//! A configured provider: its kind, its base URL and the account's key, behind [`Model`].

use ids::AccountId;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use redact::SecretValue;
use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use zeroize::Zeroizing;

use crate::error::Error;
use crate::http::{Body, Client, Deadline, MAX_RETRIES};
use crate::tools::ToolBudget;
use crate::types::{Observer, RetryNotice, Turn, TurnRequest};
use crate::{Model, TurnFuture, anthropic, openai};

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Anthropic's Messages API (`POST {base}/v1/messages`).
    Anthropic,
    /// The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`): OpenAI,
    /// llama.cpp's server, vLLM, Ollama.
    OpenAi,
}

impl ProviderKind {
    /// The name the CLI and the API use: `anthropic`, `openai`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
        }
    }

    /// The base URL when none is given.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::OpenAi => "https://api.openai.com/v1",
        }
    }

    fn path(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "v1/messages",
            ProviderKind::OpenAi => "chat/completions",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A provider kind that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a provider; write `anthropic` (Anthropic's Messages API) or `openai` (any \
     OpenAI-compatible Chat Completions endpoint: OpenAI, llama.cpp, vLLM, Ollama)"
)]
pub struct UnknownProviderKind(pub String);

impl FromStr for ProviderKind {
    type Err = UnknownProviderKind;

    fn from_str(text: &str) -> Result<ProviderKind, UnknownProviderKind> {
        match text {
            "anthropic" => Ok(ProviderKind::Anthropic),
            "openai" => Ok(ProviderKind::OpenAi),
            other => Err(UnknownProviderKind(other.to_owned())),
        }
    }
}

/// The host (with its port when not the scheme's) a provider of `kind` at `base_url` (`None`:
/// the kind's default) receives requests on, as the reach panel shows it (G27).
pub fn provider_host(kind: ProviderKind, base_url: Option<&str>) -> Option<String> {
    let url = endpoint_url(kind, base_url.unwrap_or(kind.default_base_url())).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Checks a base URL's form (not its addresses: those are checked at every request) and
/// gives the URL a request of `kind` goes to.
pub fn endpoint_url(kind: ProviderKind, base_url: &str) -> Result<Url, Error> {
    let invalid = |reason: &str| Error::InvalidBaseUrl {
        url: base_url.to_owned(),
        reason: reason.to_owned(),
    };
    let mut base = Url::parse(base_url.trim()).map_err(|error| invalid(&error.to_string()))?;
    if base.scheme() != "https" && base.scheme() != "http" {
        return Err(invalid("only `https://` URLs are used"));
    }
    if base.host_str().is_none() {
        return Err(invalid("it has no host"));
    }
    if !base.username().is_empty() || base.password().is_some() {
        return Err(invalid(
            "it holds a user name or password, which would end up in logs; remove the \
             `user:password@` part",
        ));
    }
    if base.query().is_some() || base.fragment().is_some() {
        return Err(invalid(
            "it has a `?query` or `#fragment`; give the base URL alone",
        ));
    }
    // `name.` is the same name to DNS, but not to TLS certificates, exemptions or the
    // check, which compare names as written. The reason does not repeat the URL (the
    // server shows it to whoever typed it, and logs it).
    if let Some(url::Host::Domain(name)) = base.host()
        && name.ends_with('.')
    {
        return Err(invalid(
            "its host name ends with a dot; write the name without it (`api.example.com`, not \
             `api.example.com.`)",
        ));
    }
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(kind.path())
        .map_err(|error| invalid(&error.to_string()))
}

/// An account's provider: where it is and the key that pays for it. Derives nothing: the
/// key never reaches a `Debug` or a log line.
pub struct Provider {
    /// The account that pays: its turns in flight are bounded together.
    account: AccountId,
    kind: ProviderKind,
    url: Url,
    key: SecretValue,
    client: Client,
}

impl Provider {
    /// A provider of `account`, of `kind` at `base_url` (its kind's default when `None`),
    /// paid with `key`.
    pub fn new(
        account: &AccountId,
        kind: ProviderKind,
        base_url: Option<&str>,
        key: SecretValue,
        client: Client,
    ) -> Result<Provider, Error> {
        let url = endpoint_url(kind, base_url.unwrap_or(kind.default_base_url()))?;
        Ok(Provider {
            account: account.clone(),
            kind,
            url,
            key,
            client,
        })
    }

    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The URL every request goes to.
    pub fn url(&self) -> &Url {
        &self.url
    }

    fn headers(&self) -> Result<HeaderMap, Error> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let key = self.key.dangerously_expose();
        // The header's text is a copy of the key: wiped when it has been made a header value.
        // (The value itself lives in the HTTP client's buffers, beyond reach.)
        let mut value = Zeroizing::new(String::with_capacity(key.len() + 7));
        let name = match self.kind {
            ProviderKind::Anthropic => {
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(anthropic::API_VERSION),
                );
                value.push_str(key);
                HeaderName::from_static("x-api-key")
            }
            ProviderKind::OpenAi => {
                value.push_str("Bearer ");
                value.push_str(key);
                reqwest::header::AUTHORIZATION
            }
        };
        let mut value = HeaderValue::from_str(value.as_str()).map_err(|_| Error::Setup {
            detail: "the stored model key holds characters an HTTP header cannot carry; set \
                     it again with `stepward models add`"
                .to_owned(),
        })?;
        // Sensitive: never printed by the HTTP client's own Debug output.
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(headers)
    }

    async fn attempt(
        &self,
        request: &TurnRequest,
        observer: &mut dyn Observer,
        deadline: Deadline,
    ) -> Result<Turn, Error> {
        let body = match self.kind {
            ProviderKind::Anthropic => anthropic::request_body(request),
            ProviderKind::OpenAi => {
                openai::request_body(request, openai::TokenLimit::for_host(self.url.host_str()))
            }
        }
        .map_err(|error| Error::Setup {
            detail: format!("the request cannot be written: {error}"),
        })?;
        let answer: Body = self
            .client
            .post(&self.url, self.headers()?, body, &self.key, deadline)
            .await?;
        let budget = &mut ToolBudget::new(request, self.client.options());
        let key = &self.key;
        match (self.kind, request.stream) {
            (ProviderKind::Anthropic, false) => anthropic::read_whole(answer, key, budget).await,
            (ProviderKind::Anthropic, true) => {
                anthropic::read_stream(answer, observer, key, budget).await
            }
            (ProviderKind::OpenAi, false) => openai::read_whole(answer, key, budget).await,
            (ProviderKind::OpenAi, true) => {
                openai::read_stream(answer, observer, key, budget).await
            }
        }
    }

    /// The turn and its retries, all before `budget` from now has passed.
    async fn turn_with_retries(
        &self,
        request: &TurnRequest,
        observer: &mut dyn Observer,
        budget: Duration,
    ) -> Result<Turn, Error> {
        let deadline = Deadline::after(budget);
        // Held for the whole turn, retries and waits included.
        let _admission = self.client.admit(&self.account)?;
        let policy = self.client.options().retries;
        let max_retries = policy.max_retries.min(MAX_RETRIES);
        let mut retry = 0;
        loop {
            let error = match self.attempt(request, observer, deadline).await {
                Ok(turn) => return Ok(turn),
                Err(error) => error,
            };
            if retry >= max_retries || !error.is_retriable() {
                return Err(error);
            }
            let backoff = policy.base_delay.saturating_mul(1 << retry);
            let wait = error.retry_after().unwrap_or(backoff);
            // Not waited for: longer than the client waits, or past the turn's deadline.
            if wait > policy.max_wait || deadline.passes_before(wait) {
                return Err(error);
            }
            retry += 1;
            observer.retry(&RetryNotice {
                retry,
                wait,
                reason: error.to_string(),
            });
            tokio::time::sleep(wait).await;
        }
    }
}

impl Model for Provider {
    fn turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        observer: &'a mut dyn Observer,
    ) -> TurnFuture<'a> {
        Box::pin(self.turn_with_retries(request, observer, self.client.options().turn_timeout))
    }
}

/// The prompt of a test turn: short, so it costs a few tokens.
pub const PROBE_PROMPT: &str = "Reply with one short sentence to say you can be reached.";

/// What a test turn gave, with the retries it took.
#[derive(Debug)]
pub struct Probe {
    pub model: String,
    pub result: Result<Turn, Error>,
    pub retries: Vec<RetryNotice>,
}

impl Provider {
    /// Sends one short prompt to `model` (a whole answer, at most 64 tokens, within
    /// [`crate::ClientOptions::probe_timeout`] with its retries): how a person learns that the
    /// key and the endpoint work.
    pub async fn probe(&self, model: &str) -> Probe {
        let mut request = TurnRequest::new(model, PROBE_PROMPT);
        request.max_tokens = 64;
        let mut recorder = crate::types::Recorder::default();
        let budget = self.client.options().probe_timeout;
        let result = self
            .turn_with_retries(&request, &mut recorder, budget)
            .await;
        Probe {
            model: model.to_owned(),
            result,
            retries: recorder.retries,
        }
    }
}
