//! The one error type of the crate. Messages name the endpoint and say what would be right;
//! none holds the model key (a provider's own message has it replaced before it gets here).

use std::time::Duration;

use crate::http::BusyScope;

/// Why a model turn failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The base URL is not a URL this crate will send a key to.
    #[error("the model endpoint `{url}` is not usable: {reason}")]
    InvalidBaseUrl { url: String, reason: String },
    /// The endpoint is refused by the platform's network rules (G11): a private or special
    /// address, plain `http` without the operator's exemption, or a server that reaches only
    /// exempted endpoints. Nothing was sent.
    #[error("the model endpoint `{url}` is refused: {reason}")]
    EndpointRefused { url: String, reason: String },
    /// The endpoint's host name did not resolve.
    #[error("the model endpoint's host `{host}` does not resolve: {detail}")]
    Resolve { host: String, detail: String },
    /// The endpoint answered with a redirect, which is never followed.
    #[error(
        "the model endpoint `{url}` answered with a redirect ({status}) to `{location}`; \
         redirects are never followed: set the provider's base URL to the endpoint itself"
    )]
    Redirected {
        url: String,
        status: u16,
        location: String,
    },
    /// 429: the provider wants fewer requests.
    #[error("the provider is rate limiting this key{}: {message}", wait_words(.retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The provider is overloaded (Anthropic's 529, a 503).
    #[error("the provider is overloaded ({status}){}: {message}", wait_words(.retry_after))]
    Overloaded {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// The conversation is longer than the model takes.
    #[error("the conversation is too long for the model: {message}")]
    ContextTooLong { message: String },
    /// The provider refused the request as malformed (400, 404, 422: often a wrong model id).
    #[error("the provider refused the request ({status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The key was refused (401, 403).
    #[error(
        "the provider refused the key ({status}): {message}; check the key with `stepward models test`"
    )]
    Auth { status: u16, message: String },
    /// Another error status of the provider.
    #[error("the provider failed ({status}): {message}")]
    Server { status: u16, message: String },
    /// No answer arrived: the connection failed before a response.
    #[error("cannot reach the model endpoint `{url}`: {detail}")]
    Network { url: String, detail: String },
    /// The TLS handshake failed: the endpoint's certificate does not verify for its name
    /// (or it speaks no TLS). Sending again would fail the same way, so it is not retried.
    #[error("the model endpoint `{url}` failed the TLS handshake: {detail}")]
    Tls { url: String, detail: String },
    /// A deadline passed.
    #[error("the model endpoint `{url}` did not {phase} within {}", seconds(.after))]
    Timeout {
        url: String,
        phase: &'static str,
        after: Duration,
    },
    /// The answer ended before the turn was complete (no stop reason, or a broken
    /// connection): nothing of it is used.
    #[error("the model's answer was cut off before it was complete: {detail}")]
    StreamCut { detail: String },
    /// The answer was larger than the limit.
    #[error("the model's answer is larger than {limit} bytes; it was not read further")]
    ResponseTooLarge { limit: u64 },
    /// A tool call's arguments, or those of all calls of the turn together, are larger than
    /// their cap; they were not parsed, and nothing of the turn is used.
    #[error("{}", argument_words(.tool, *.limit, *.whole_turn))]
    ToolArgumentsTooLarge {
        /// The tool whose call went over (as the model named it, shortened).
        tool: String,
        limit: usize,
        /// The cap of all calls of the turn together, rather than of one call.
        whole_turn: bool,
    },
    /// As many model calls are in flight as may be, for this account or for the whole
    /// server: this one was refused at once and sent nothing.
    #[error("{}", busy_words(*.scope, *.limit))]
    Busy { scope: BusyScope, limit: usize },
    /// The answer is not the provider's wire format.
    #[error("the model's answer is not valid: {detail}")]
    InvalidResponse { detail: String },
    /// The HTTP client itself could not be set up (TLS roots, options).
    #[error("the model client cannot be set up: {detail}")]
    Setup { detail: String },
}

impl Error {
    /// Whether sending the same request again may help: rate limits, overload and a
    /// connection that failed before any answer. A model request has no side effect, so these
    /// are retried (at most 3 times); nothing else is.
    pub fn is_retriable(&self) -> bool {
        matches!(
            self,
            Error::RateLimited { .. } | Error::Overloaded { .. } | Error::Network { .. }
        )
    }

    /// How long the provider asked to wait, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } | Error::Overloaded { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// A short name of the kind of error, for records and the API (`rate_limited`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidBaseUrl { .. } => "invalid_base_url",
            Error::EndpointRefused { .. } => "endpoint_refused",
            Error::Resolve { .. } => "resolve",
            Error::Redirected { .. } => "redirected",
            Error::RateLimited { .. } => "rate_limited",
            Error::Overloaded { .. } => "overloaded",
            Error::ContextTooLong { .. } => "context_too_long",
            Error::BadRequest { .. } => "bad_request",
            Error::Auth { .. } => "auth",
            Error::Server { .. } => "server",
            Error::Network { .. } => "network",
            Error::Tls { .. } => "tls",
            Error::Timeout { .. } => "timeout",
            Error::StreamCut { .. } => "stream_cut",
            Error::ResponseTooLarge { .. } => "response_too_large",
            Error::ToolArgumentsTooLarge { .. } => "tool_arguments_too_large",
            Error::Busy { .. } => "busy",
            Error::InvalidResponse { .. } => "invalid_response",
            Error::Setup { .. } => "setup",
        }
    }
}

fn bytes_words(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

fn argument_words(tool: &str, limit: usize, whole_turn: bool) -> String {
    if whole_turn {
        format!(
            "the model's tool calls in one turn have more than {} of arguments together (at \
             `{tool}`); the turn is not used",
            bytes_words(limit)
        )
    } else {
        format!(
            "the model's call to `{tool}` has more than {} of arguments, the most one call \
             may have; the turn is not used",
            bytes_words(limit)
        )
    }
}

fn busy_words(scope: BusyScope, limit: usize) -> String {
    let whose = match scope {
        BusyScope::Account => "this account",
        BusyScope::Server => "this server, for every account together",
    };
    format!(
        "{limit} model calls are already under way at once for {whose}, the most there may \
         be; this one was not sent. Try again when one has finished"
    )
}

fn wait_words(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(wait) if *wait > Duration::from_secs(24 * 3600) => {
            " (it asks to wait more than a day)".to_owned()
        }
        Some(wait) => format!(" (it asks to wait {})", seconds(wait)),
        None => String::new(),
    }
}

fn seconds(duration: &Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}
