//! The HTTP server of stepward: people sign in, API keys authenticate, every route passes the
//! one policy table of the `auth` crate, and runs, gates and share links are served over a
//! JSON API and a few server-rendered pages (G23, G24, G25, G26).
//!
//! Invariants:
//! - [`router`] registers exactly the routes of [`registered_routes`], and a middleware looks
//!   every matched route up in [`auth::policy_table`]: a route without a policy answers 500,
//!   never runs its handler. Handlers check scope again (the resource's account against the
//!   principal's) and answer a resource of another account exactly as a missing one.
//! - [`Error`] is the one place errors become HTTP: a safe message and a request id go to the
//!   client, the details only to the log.
//! - Every response carries the security headers (CSP without inline script, no framing,
//!   no-sniff, no referrer), and with TLS (`TlsMode::Tls`) `Strict-Transport-Security` too.
//! - An API key never acts as a person: what it does is recorded as the key
//!   (`storage::Actor::ApiKey`).
//! - Every failed share-link fetch answers the same bytes ([`auth::SHARE_NOT_FOUND_BODY`]).
//!
//! This crate owns no SQL and opens no listener itself: the binary opens the store, builds an
//! [`AppState`] and hands a listener to [`serve`] (or, with its certificate, to [`serve_tls`]), or
//! drives [`router`] itself.

#![forbid(unsafe_code)]

mod authn;
mod bootstrap;
mod chrome;
mod error;
mod handlers;
mod html;
mod interviews;
mod layers;
mod listener;
pub mod mail;
mod openapi;
mod password_work;
pub mod reach;
mod return_path;
mod routes;
mod served;
mod state;
mod tallies;
mod text_limits;
mod tls;
mod workspace_recovery;

pub use crate::bootstrap::serve;
pub use crate::error::Error;
pub use crate::layers::{SECURITY_HEADERS, STRICT_TRANSPORT_SECURITY};
pub use crate::listener::{
    HEADER_READ_TIMEOUT, ListenerLimits, MAX_CONNECTIONS_PER_ADDRESS, MAX_HANDSHAKES_PER_ADDRESS,
    MAX_PENDING_HANDSHAKES, SHUTDOWN_DEADLINE, STALL_TIMEOUT, TLS_HANDSHAKE_TIMEOUT,
    raise_open_file_limit,
};
pub use crate::openapi::openapi_document;
pub use crate::password_work::PasswordHashing;
pub use crate::routes::{registered_routes, router};
pub use crate::state::{AppOptions, AppState, Backends, ServerKeys, ServerStore, StepIsolation};
pub use crate::tls::{serve_tls, tls_server_config};
pub use crate::workspace_recovery::recover_workspace_writes;
pub use platform::workflows::{
    AuthoringLints, WorkflowDirectories, WorkflowSource, WorkflowSourceError, WorkflowText,
    WorkspaceWorkflows,
};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
