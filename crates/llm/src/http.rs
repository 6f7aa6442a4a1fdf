//! The HTTP client of the providers: reqwest over rustls (the ring provider, the platform's
//! root certificates), HTTP/1.1, no proxy, no redirects, no retries of its own, and every
//! connection to the addresses [`crate::endpoint::check`] approved and nothing else.
//! Answers are bounded in bytes and in time.

use ids::AccountId;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use redact::SecretValue;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderValue};
use rustls::pki_types::CertificateDer;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, timeout_at};

use crate::endpoint::{EndpointPolicy, Resolve, SystemResolver, check};
use crate::error::Error;

/// How many times a request is sent again, at most.
pub const MAX_RETRIES: u32 = 3;

/// When to send a failed request again (only rate limits, overload and a connection that
/// failed before any answer; see [`Error::is_retriable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// At most [`MAX_RETRIES`]; a larger number counts as that.
    pub max_retries: u32,
    /// The wait before the first retry when the provider names none; doubled each time.
    pub base_delay: Duration,
    /// A provider's `retry-after` longer than this is not waited for: the error is returned.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: MAX_RETRIES,
            base_delay: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// How the client connects and what it accepts. Set by the operator (the binary's flags),
/// never by an account.
#[derive(Clone)]
pub struct ClientOptions {
    pub endpoints: EndpointPolicy,
    /// Resolves endpoint names; [`SystemResolver`] unless a test injects one.
    pub resolver: Arc<dyn Resolve>,
    /// Resolving and connecting, each.
    pub connect_timeout: Duration,
    /// One whole turn: from the first attempt to the last byte of the answer, every retry
    /// and every wait before one included (600 s). A retry whose wait would end after it is
    /// not made: the error is returned.
    pub turn_timeout: Duration,
    /// The same for a test prompt ([`crate::Provider::probe`]: `stepward models test`, the
    /// server's test route), which should answer quickly or not at all (60 s).
    pub probe_timeout: Duration,
    /// The longest silence between two pieces of an answer.
    pub idle_timeout: Duration,
    /// The most bytes one answer may have: 8 MiB by default, what a turn needs (its text and
    /// tool calls within their own caps) with room to spare. Every byte may be held in memory
    /// while the answer is read, so this is kept well below what a server can afford per call.
    pub max_response_bytes: u64,
    /// The most bytes of JSON one tool call's arguments may have (1 MiB): arguments are
    /// measured before they are parsed, because parsed JSON takes up to 16 times its text.
    pub max_tool_argument_bytes: usize,
    /// The most bytes of arguments all tool calls of one turn may have together (2 MiB).
    pub max_turn_tool_argument_bytes: usize,
    /// The most model turns in flight at once through this client, for every account
    /// together (16); one more is refused at once ([`Error::Busy`]), never queued.
    pub max_concurrent_turns: usize,
    /// The most model turns in flight at once for one account (4); one more is refused at
    /// once.
    pub max_concurrent_turns_per_account: usize,
    pub retries: RetryPolicy,
    /// Root certificates trusted besides the platform's (an operator's own CA, a test's).
    pub extra_roots: Vec<CertificateDer<'static>>,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            endpoints: EndpointPolicy::default(),
            resolver: Arc::new(SystemResolver),
            connect_timeout: Duration::from_secs(10),
            turn_timeout: Duration::from_secs(600),
            probe_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
            max_response_bytes: 8 * 1024 * 1024,
            max_tool_argument_bytes: 1024 * 1024,
            max_turn_tool_argument_bytes: 2 * 1024 * 1024,
            max_concurrent_turns: 16,
            max_concurrent_turns_per_account: 4,
            retries: RetryPolicy::default(),
            extra_roots: Vec::new(),
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ClientOptions")
            .field("endpoints", &self.endpoints)
            .field("connect_timeout", &self.connect_timeout)
            .field("turn_timeout", &self.turn_timeout)
            .field("probe_timeout", &self.probe_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_tool_argument_bytes", &self.max_tool_argument_bytes)
            .field(
                "max_turn_tool_argument_bytes",
                &self.max_turn_tool_argument_bytes,
            )
            .field("max_concurrent_turns", &self.max_concurrent_turns)
            .field(
                "max_concurrent_turns_per_account",
                &self.max_concurrent_turns_per_account,
            )
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

/// The shared machinery every provider sends through. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    options: ClientOptions,
    tls: rustls::ClientConfig,
    /// Turns in flight through this client, every account together.
    in_flight: Arc<Semaphore>,
    /// Turns in flight per account (one entry per account that ever made a call).
    in_flight_per_account: Mutex<HashMap<AccountId, Arc<Semaphore>>>,
}

/// Which bound on concurrent model calls refused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyScope {
    /// The calls of one account.
    Account,
    /// The calls of every account through this server (or process).
    Server,
}

/// A turn's place among those in flight; released when dropped.
pub(crate) struct Admission {
    _server: OwnedSemaphorePermit,
    _account: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Client")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// The most bytes of an error answer that are read, for its message.
const MAX_ERROR_BYTES: usize = 64 * 1024;
/// The longest an error answer is read for its message (the status's error comes after it
/// either way).
const MAX_ERROR_READ: Duration = Duration::from_secs(3);

/// When a turn must be over, and the budget that set it (for the error's words).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) budget: Duration,
}

impl Deadline {
    /// `budget` from now.
    pub(crate) fn after(budget: Duration) -> Deadline {
        Deadline {
            at: Instant::now()
                .checked_add(budget)
                .unwrap_or_else(Instant::now),
            budget,
        }
    }

    /// Whether a wait of `wait` from now would end after the deadline.
    pub(crate) fn passes_before(&self, wait: Duration) -> bool {
        Instant::now()
            .checked_add(wait)
            .is_none_or(|end| end >= self.at)
    }
}
/// The most characters of a provider's message that are kept.
const MAX_MESSAGE_CHARS: usize = 500;

impl Client {
    /// A client with these options; fails when TLS cannot be set up (no root certificates).
    pub fn new(options: ClientOptions) -> Result<Client, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(
            options.extra_roots.clone(),
            provider.clone(),
        )
        .map_err(|error| Error::Setup {
            detail: format!("the platform's root certificates cannot be loaded: {error}"),
        })?;
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| Error::Setup {
                detail: error.to_string(),
            })?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let in_flight = Arc::new(Semaphore::new(options.max_concurrent_turns));
        Ok(Client {
            inner: Arc::new(Inner {
                options,
                tls,
                in_flight,
                in_flight_per_account: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// A place for one turn of `account` among those in flight, or [`Error::Busy`] at once
    /// when the account or the whole client has as many as it may: a caller that fires calls
    /// in parallel is told so quickly and holds no memory for the refused ones.
    pub(crate) fn admit(&self, account: &AccountId) -> Result<Admission, Error> {
        let options = &self.inner.options;
        let account_semaphore = {
            let mut accounts = self
                .inner
                .in_flight_per_account
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(accounts.entry(account.clone()).or_insert_with(|| {
                Arc::new(Semaphore::new(options.max_concurrent_turns_per_account))
            }))
        };
        let account_permit = account_semaphore
            .try_acquire_owned()
            .map_err(|_| Error::Busy {
                scope: BusyScope::Account,
                limit: options.max_concurrent_turns_per_account,
            })?;
        let server_permit = Arc::clone(&self.inner.in_flight)
            .try_acquire_owned()
            .map_err(|_| Error::Busy {
                scope: BusyScope::Server,
                limit: options.max_concurrent_turns,
            })?;
        Ok(Admission {
            _server: server_permit,
            _account: account_permit,
        })
    }

    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Checks `url` against the endpoint rules (G11) without connecting: the scheme, the
    /// exemptions, and every address its host resolves to. Gives the addresses a request
    /// would go to. `stepward models add` uses it to refuse an endpoint at once.
    pub async fn check_endpoint(&self, url: &Url) -> Result<Vec<std::net::SocketAddr>, Error> {
        let options = &self.inner.options;
        check(
            url,
            &options.endpoints,
            options.resolver.as_ref(),
            options.connect_timeout,
        )
        .await
        .map(|checked| checked.addresses)
    }

    /// Checks `url` (G11), then POSTs `body` to the addresses that passed. A success status
    /// gives the answer's body to read; anything else is a typed error, read from a bounded
    /// part of the answer with `key` taken out of the provider's message.
    pub(crate) async fn post(
        &self,
        url: &Url,
        headers: HeaderMap,
        body: Vec<u8>,
        key: &SecretValue,
        deadline: Deadline,
    ) -> Result<Body, Error> {
        let options = &self.inner.options;
        let shown = url.as_str().to_owned();
        let out_of_time = || Error::Timeout {
            url: shown.clone(),
            phase: "answer",
            after: deadline.budget,
        };
        let checked = timeout_at(
            deadline.at,
            check(
                url,
                &options.endpoints,
                options.resolver.as_ref(),
                options.connect_timeout,
            ),
        )
        .await
        .map_err(|_| out_of_time())??;
        let mut builder = reqwest::Client::builder()
            .use_preconfigured_tls(self.inner.tls.clone())
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .no_proxy()
            .referer(false)
            .http1_only()
            .connect_timeout(options.connect_timeout)
            .pool_max_idle_per_host(0)
            .user_agent("stepward")
            // Every name but the checked one fails: nothing is ever resolved a second time.
            .dns_resolver(RefuseEveryName);
        if !checked.is_address {
            builder = builder.resolve_to_addrs(&checked.host, &checked.addresses);
        }
        let client = builder.build().map_err(|error| Error::Setup {
            detail: error.to_string(),
        })?;
        let sending = client.post(url.clone()).headers(headers).body(body).send();
        let response = timeout_at(deadline.at, sending)
            .await
            .map_err(|_| out_of_time())?
            .map_err(|error| {
                if error.is_timeout() {
                    Error::Timeout {
                        url: shown.clone(),
                        phase: "accept the connection",
                        after: options.connect_timeout,
                    }
                } else if is_tls_failure(&error) {
                    Error::Tls {
                        url: shown.clone(),
                        detail: error_chain(&error),
                    }
                } else {
                    Error::Network {
                        url: shown.clone(),
                        detail: error_chain(&error),
                    }
                }
            })?;
        let status = response.status();
        let response_headers = response.headers().clone();
        let mut body = Body {
            stream: Box::pin(response.bytes_stream()),
            read: 0,
            limit: options.max_response_bytes,
            idle: options.idle_timeout,
            deadline,
            url: shown.clone(),
        };
        if status.is_success() {
            return Ok(body);
        }
        if status.is_redirection() {
            let location = response_headers
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(|location| clean_message(location, key))
                .unwrap_or_else(|| "(no Location header)".to_owned());
            return Err(Error::Redirected {
                url: shown,
                status: status.as_u16(),
                location,
            });
        }
        // An error answer is read only for its message, for a few seconds at most; a
        // broken, huge or trickling one still gives the status's error.
        let read_until = Instant::now()
            .checked_add(MAX_ERROR_READ)
            .unwrap_or_else(Instant::now)
            .min(deadline.at);
        body.deadline = Deadline {
            at: read_until,
            budget: MAX_ERROR_READ.min(deadline.budget),
        };
        let bytes = body.read_prefix(MAX_ERROR_BYTES).await;
        let problem = ProviderProblem::from_body(&bytes, key);
        Err(problem.into_error(status.as_u16(), retry_after(&response_headers)))
    }
}

/// The name resolver of the per-request client: it refuses every name, because the one name
/// the request may use was resolved and checked already (`resolve_to_addrs`).
struct RefuseEveryName;

impl reqwest::dns::Resolve for RefuseEveryName {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move {
            Err(
                format!("`{name}` was not checked against the deny list, so it is not resolved")
                    .into(),
            )
        })
    }
}

/// Whether a failed request failed in the TLS handshake: a rustls error somewhere in the
/// chain. hyper-rustls carries it inside an `io::Error` inside another, and an `io::Error`'s
/// `source` skips its own payload, so payloads are looked into as well.
fn is_tls_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    fn holds_rustls(error: &(dyn std::error::Error + 'static)) -> bool {
        if error.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        match error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(payload) => holds_rustls(payload),
            None => false,
        }
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = current {
        if holds_rustls(cause) {
            return true;
        }
        current = cause.source();
    }
    false
}

/// The source chain of a client error in one line (reqwest's top message alone says little).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The body of an answer, read piece by piece under the byte limit, the idle timeout and the
/// attempt's deadline.
pub(crate) struct Body {
    stream: Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    read: u64,
    limit: u64,
    idle: Duration,
    deadline: Deadline,
    url: String,
}

impl Body {
    /// The next piece, `None` at the end.
    pub(crate) async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, Error> {
        let idle_deadline = Instant::now()
            .checked_add(self.idle)
            .unwrap_or_else(Instant::now);
        let (until, phase, after) = if idle_deadline < self.deadline.at {
            (idle_deadline, "keep sending its answer", self.idle)
        } else {
            (self.deadline.at, "finish its answer", self.deadline.budget)
        };
        let next = timeout_at(until, self.stream.next())
            .await
            .map_err(|_| Error::Timeout {
                url: self.url.clone(),
                phase,
                after,
            })?;
        match next {
            None => Ok(None),
            Some(Err(error)) => Err(Error::StreamCut {
                detail: error_chain(&error),
            }),
            Some(Ok(chunk)) => {
                self.read = self.read.saturating_add(chunk.len() as u64);
                if self.read > self.limit {
                    return Err(Error::ResponseTooLarge { limit: self.limit });
                }
                Ok(Some(chunk))
            }
        }
    }

    /// The whole body, at most `limit` bytes (the smaller of this and the client's limit).
    pub(crate) async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, Error> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > limit {
                return Err(Error::ResponseTooLarge {
                    limit: limit as u64,
                });
            }
        }
        Ok(bytes)
    }

    /// At most `limit` bytes of the body, whatever happens while reading (for error
    /// answers, whose message is all that is wanted).
    pub(crate) async fn read_prefix(&mut self, limit: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        while let Ok(Some(chunk)) = self.next_chunk().await {
            let room = limit.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if bytes.len() >= limit {
                break;
            }
        }
        bytes
    }
}

/// A provider's message, fit for an error: the key taken out, control characters dropped,
/// at most 500 characters.
pub(crate) fn clean_message(text: &str, key: &SecretValue) -> String {
    let exposed = key.dangerously_expose();
    let without_key = if exposed.is_empty() {
        text.to_owned()
    } else {
        text.replace(exposed, redact::MASK)
    };
    let mut cleaned: String = without_key
        .chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .take(MAX_MESSAGE_CHARS)
        .collect();
    if without_key.chars().count() > MAX_MESSAGE_CHARS {
        cleaned.push('…');
    }
    cleaned.trim().to_owned()
}

/// What a provider said about a failure: its error type or code and its message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ProviderProblem {
    /// `rate_limit_error`, `overloaded_error`, `context_length_exceeded`, ...
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl ProviderProblem {
    /// Reads an error body of either provider (`{"type":"error","error":{...}}` or
    /// `{"error":{...}}`), or takes the text as it is.
    pub(crate) fn from_body(bytes: &[u8], key: &SecretValue) -> ProviderProblem {
        let text = String::from_utf8_lossy(bytes);
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return ProviderProblem {
                kind: String::new(),
                message: clean_message(&text, key),
            };
        };
        ProviderProblem::from_json(value.get("error").unwrap_or(&value), key)
    }

    /// Reads an `error` object: `type` or `code`, and `message`.
    pub(crate) fn from_json(error: &serde_json::Value, key: &SecretValue) -> ProviderProblem {
        let field = |name: &str| error.get(name).and_then(serde_json::Value::as_str);
        let kind = field("code")
            .filter(|code| !code.is_empty())
            .or_else(|| field("type"))
            .unwrap_or_default();
        let message = match (field("message"), error.as_str()) {
            (Some(message), _) | (None, Some(message)) => message.to_owned(),
            (None, None) => error.to_string(),
        };
        ProviderProblem {
            kind: clean_message(kind, key),
            message: clean_message(&message, key),
        }
    }

    fn mentions_context_length(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        self.kind == "context_length_exceeded"
            || self.kind == "request_too_large"
            || [
                "context length",
                "context_length",
                "context window",
                "maximum context",
                "prompt is too long",
                "too many tokens",
            ]
            .iter()
            .any(|phrase| message.contains(phrase))
    }

    /// The error for an answer with `status` (or, in a stream, status 0 and the error's
    /// type alone).
    pub(crate) fn into_error(self, status: u16, retry_after: Option<Duration>) -> Error {
        let message = if self.message.is_empty() {
            "(no message)".to_owned()
        } else {
            self.message.clone()
        };
        let kind = self.kind.as_str();
        match (status, kind) {
            (429, _) | (_, "rate_limit_error" | "rate_limit_exceeded") => Error::RateLimited {
                retry_after,
                message,
            },
            (529 | 503, _) | (_, "overloaded_error") => Error::Overloaded {
                status: if status == 0 { 529 } else { status },
                retry_after,
                message,
            },
            (413, _) => Error::ContextTooLong { message },
            (400 | 0, _) if self.mentions_context_length() => Error::ContextTooLong { message },
            (401 | 403, _) | (0, "authentication_error" | "permission_error") => Error::Auth {
                status: if status == 0 { 401 } else { status },
                message,
            },
            (400 | 404 | 422, _) | (0, "invalid_request_error" | "not_found_error") => {
                Error::BadRequest {
                    status: if status == 0 { 400 } else { status },
                    message,
                }
            }
            _ => Error::Server {
                status: if status == 0 { 500 } else { status },
                message,
            },
        }
    }
}

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`); an HTTP date is not used. A
/// finite number too large for a [`Duration`] (`1e20`) is read as [`Duration::MAX`]: longer
/// than any wait the client makes, so the error is returned at once.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value: &HeaderValue| value.to_str().ok())
            .map(str::trim)
    };
    let wait = |seconds: f64| Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
    if let Some(millis) = text("retry-after-ms").and_then(|value| value.parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(wait(millis / 1000.0));
    }
    text("retry-after")
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn a_retry_after_beyond_a_duration_is_the_longest_wait_not_a_panic() {
        for (name, value) in [
            ("retry-after", "1e20"),
            ("retry-after-ms", "1e30"),
            ("retry-after", "1.7e308"),
        ] {
            assert_eq!(
                retry_after(&headers(name, value)),
                Some(Duration::MAX),
                "{name}: {value}"
            );
        }
        assert_eq!(
            retry_after(&headers("retry-after", "1.5")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers("retry-after-ms", "250")),
            Some(Duration::from_millis(250))
        );
        for (name, value) in [
            ("retry-after", "-1"),
            ("retry-after", "inf"),
            ("retry-after", "NaN"),
            ("retry-after-ms", "1e400"),
        ] {
            assert_eq!(retry_after(&headers(name, value)), None, "{name}: {value}");
        }
    }
}
