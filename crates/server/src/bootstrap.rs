//! What the binary needs around the router: serving it on a listener with the remote address
//! recorded, bounded connections and a graceful shutdown with a deadline; and a person's
//! one-time sign-in link as every door makes it (`platform::accounts`).

use std::future::Future;

use auth::SignInLinkToken;
use storage::Timestamp;
use storage::people::NewSignInLink;

use crate::listener::{ListenerLimits, Transport, serve_connections};
use crate::{AppState, Error};

/// A fresh one-time sign-in link for `person_id` (`platform::accounts::new_sign_in_link`).
pub(crate) fn new_sign_in_link(
    person_id: &str,
    now: Timestamp,
    lifetime_millis: i64,
) -> Result<(SignInLinkToken, NewSignInLink), Error> {
    platform::accounts::new_sign_in_link(person_id, now, lifetime_millis)
        .map_err(Error::auth("create a sign-in link"))
}

/// Serves the router over plain HTTP on `listener` until `shutdown` completes (or the listener
/// fails for good: that error is returned), then lets requests in flight finish for at most
/// `limits.shutdown_deadline` and drops what is still open. Every connection is bounded (see
/// [`ListenerLimits`]): a request head must arrive within the header-read deadline (also on an
/// idle keep-alive connection), and connections over the global or per-address cap are closed
/// at once. The remote address of each connection is recorded, so the sign-in limit applies
/// per address.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ListenerLimits,
) -> std::io::Result<()> {
    serve_connections(listener, Transport::Plain, state, shutdown, limits).await
}
