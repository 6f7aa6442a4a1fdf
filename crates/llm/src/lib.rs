//! Model providers behind one trait: Anthropic's Messages API and the OpenAI-compatible Chat
//! Completions API (OpenAI, llama.cpp's server, vLLM, Ollama), streaming and not.
//!
//! A turn goes in as a [`TurnRequest`] (system prompt, messages with tool results, tool
//! definitions as JSON Schema) and comes out as a [`Turn`] (text, tool calls, usage, stop
//! reason). Streamed text reaches an [`Observer`] as it arrives; tool calls are handed on only
//! with the whole turn, once its stop reason came: a cut stream is an error, and no partial
//! call is ever returned.
//!
//! Invariants:
//! - Every address an endpoint resolves to is checked against G11's deny list (`netguard`)
//!   and the host's own addresses before connecting, and the connection goes to exactly the
//!   checked addresses; redirects are never followed; `https` is required. Only the operator
//!   exempts an endpoint ([`EndpointPolicy::exempt`]).
//! - The key is a [`redact::SecretValue`] inside a [`Provider`], which derives nothing; it is
//!   sent only to its provider's URL, in a header marked sensitive, and taken out of any
//!   provider message before that becomes an [`Error`].
//! - A request is sent again only after a rate limit, an overload or a connection that failed
//!   before any answer, at most 3 times, each announced to the caller
//!   ([`Observer::retry`]) so it can be recorded. Nothing else is retried.
//! - Answers are bounded in bytes and time ([`ClientOptions`]); a tool call's arguments are
//!   measured before they are parsed, one call's and the turn's; a request that offered no
//!   tools gets no tool calls; turns in flight are bounded for the client and per account,
//!   and one more is refused at once ([`Error::Busy`]).
//!
//! Providers are built by the caller from an account's settings; nothing here reads
//! configuration, the vault or the environment.

#![forbid(unsafe_code)]

mod anthropic;
mod endpoint;
mod error;
mod http;
mod openai;
mod provider;
mod sse;
mod tools;
mod types;

use std::future::Future;
use std::pin::Pin;

pub use crate::endpoint::{
    Endpoint, EndpointParseError, EndpointPolicy, PublicEndpoints, Resolve, Resolving,
    StaticResolver, SystemResolver, check_unresolved,
};
pub use crate::error::Error;
pub use crate::http::{BusyScope, Client, ClientOptions, MAX_RETRIES, RetryPolicy};
pub use crate::provider::{
    PROBE_PROMPT, Probe, Provider, ProviderKind, UnknownProviderKind, endpoint_url, provider_host,
};
pub use crate::types::{
    Ignore, Message, Observer, Recorder, RetryNotice, StopReason, ToolCall, ToolDefinition,
    ToolResult, Turn, TurnRequest, Usage,
};
// The binary builds the operator's extra ranges without depending on netguard itself.
pub use netguard::{Cidr, ExtraRange, nat64_prefix};
pub use reqwest::Url;

/// A turn in progress.
pub type TurnFuture<'a> = Pin<Box<dyn Future<Output = Result<Turn, Error>> + Send + 'a>>;

/// One model turn: the request in, the whole turn out. Implemented by [`Provider`]; the agent
/// loop holds a `dyn Model`.
pub trait Model: Send + Sync {
    fn turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        observer: &'a mut dyn Observer,
    ) -> TurnFuture<'a>;
}
