//! Serving the router over TLS that this process terminates itself (`stepward serve --tls-cert
//! --tls-key`): the rustls configuration (the `ring` provider, TLS 1.2 and 1.3 only, no client
//! certificates) and a listener that hands axum only connections whose handshake finished.
//!
//! Handshakes run concurrently, one task per connection, each under a deadline
//! ([`TLS_HANDSHAKE_TIMEOUT`]): a client that connects and never speaks (or speaks slowly) holds
//! only its own task, never the accept loop, so it cannot keep anybody else out. Finished
//! streams reach axum through a channel. The remote address travels with each stream, so
//! `ConnectInfo<SocketAddr>` (the per-address sign-in limit) works as over plain HTTP.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::{Listener, ListenerExt};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::{AppState, router};

/// How long a client may take from connecting to a finished TLS handshake before the
/// connection is closed.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// At most this many handshakes are in progress at once; the accept loop waits for one to end
/// (each ends within the deadline) before it takes another connection, so a flood of silent
/// connections costs bounded memory and delays others by at most one deadline.
const MAX_PENDING_HANDSHAKES: usize = 1024;

/// Finished connections waiting for axum to take them. axum takes each at once (it spawns a
/// task per connection), so this only absorbs bursts.
const HANDSHAKEN_QUEUE: usize = 64;

/// The server's TLS configuration: `cert_chain` (the server's certificate first, then its
/// intermediates) and its private `key`, with the `ring` provider, TLS 1.2 and 1.3 only, no
/// client authentication, and HTTP/1.1 offered by ALPN (the only HTTP version served).
///
/// A key that does not belong to the chain's first certificate is
/// `rustls::Error::InconsistentKeys(KeyMismatch)`; a key whose public half cannot be compared
/// is refused too (`InconsistentKeys(Unknown)`), rather than served unchecked.
pub fn tls_server_config(
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<ServerConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let signing_key = provider.key_provider.load_private_key(key)?;
    let certified_key = CertifiedKey::new(cert_chain, signing_key);
    certified_key.keys_match()?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified_key)));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves the router over TLS on `listener` until `shutdown` completes, then lets requests in
/// flight finish, like [`crate::serve`]. Handshakes that have not finished when the shutdown
/// starts are dropped. The remote address of each connection is recorded, so the sign-in
/// limit applies per address.
pub async fn serve_tls(
    listener: TcpListener,
    tls_config: Arc<ServerConfig>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let listener = TlsListener::start(listener, tls_config, TLS_HANDSHAKE_TIMEOUT)?;
    // axum implements `Connected` (what `ConnectInfo<SocketAddr>` is made from) for the
    // address of any tapped listener, while the orphan rule forbids implementing it here for
    // `SocketAddr` and a listener of this crate. The tap itself has nothing to do.
    let listener = listener.tap_io(|_stream: &mut TlsStream<TcpStream>| {});
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// A listener whose connections have finished their TLS handshake. Dropping it (axum does when
/// the shutdown starts) stops the accept loop and every handshake in progress.
pub(crate) struct TlsListener {
    local_address: SocketAddr,
    handshaken: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accept_loop: JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `listener` in a task of the current runtime.
    pub(crate) fn start(
        listener: TcpListener,
        tls_config: Arc<ServerConfig>,
        handshake_timeout: Duration,
    ) -> io::Result<TlsListener> {
        let local_address = listener.local_addr()?;
        let (sender, handshaken) = mpsc::channel(HANDSHAKEN_QUEUE);
        let accept_loop = tokio::spawn(accept_and_handshake(
            listener,
            TlsAcceptor::from(tls_config),
            handshake_timeout,
            sender,
        ));
        Ok(TlsListener {
            local_address,
            handshaken,
            accept_loop,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(connection) => connection,
            None => {
                // The accept loop never returns; it ended only if it panicked. Serving stops
                // taking connections then, which is what an unusable listener should do.
                tracing::error!(
                    address = %self.local_address,
                    "the TLS accept loop ended; no more connections are taken"
                );
                std::future::pending().await
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_address)
    }
}

/// Accepts TCP connections for ever and runs each handshake in a task of its own, under
/// `handshake_timeout`; finished streams go to `handshaken`.
async fn accept_and_handshake(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    handshake_timeout: Duration,
    handshaken: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    // Dropping the set (when this task is aborted) aborts every handshake in it.
    let mut handshakes = JoinSet::new();
    loop {
        while handshakes.try_join_next().is_some() {}
        if handshakes.len() >= MAX_PENDING_HANDSHAKES {
            handshakes.join_next().await;
            continue;
        }
        let (tcp, peer) = match listener.accept().await {
            Ok(connection) => connection,
            Err(error) => {
                wait_after_accept_error(&error).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let handshaken = handshaken.clone();
        handshakes.spawn(async move {
            match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => {
                    // Fails only when the listener is gone (shutting down): the stream is
                    // dropped, which closes it.
                    let _ = handshaken.send((stream, peer)).await;
                }
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                }
                Err(_elapsed) => {
                    tracing::debug!(%peer, "TLS handshake did not finish in time");
                }
            }
        });
    }
}

/// What axum's own TCP listener does after a failed `accept`: a connection that was reset
/// before it was taken is nobody's problem; anything else (such as running out of file
/// descriptors) is logged and followed by a pause, so the loop does not spin while it lasts.
async fn wait_after_accept_error(error: &io::Error) {
    match error.kind() {
        io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset => {}
        _ => {
            tracing::error!(%error, "cannot accept a connection");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::AsyncReadExt;

    use crate::tls::{TlsListener, tls_server_config};

    fn self_signed_config() -> std::sync::Arc<rustls::ServerConfig> {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key =
            rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
        tls_server_config(vec![certified.cert.der().clone()], key).unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn tls_stalled_handshake_is_closed_at_the_deadline() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tls_listener = TlsListener::start(
            listener,
            self_signed_config(),
            std::time::Duration::from_millis(300),
        )
        .unwrap();
        let address = axum::serve::Listener::local_addr(&tls_listener).unwrap();
        let started = Instant::now();
        let mut silent = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut buffer = [0_u8; 16];
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(10), silent.read(&mut buffer))
                .await
                .expect("the server closed the silent connection before the test gave up");
        // Closed: either a clean end of stream or a reset, and nothing was said.
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert!(started.elapsed() >= std::time::Duration::from_millis(250));
        drop(tls_listener);
    }

    #[test]
    fn tls_config_refuses_a_key_of_another_certificate() {
        let first = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let second = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key =
            rustls::pki_types::PrivateKeyDer::Pkcs8(second.signing_key.serialize_der().into());
        let refused = tls_server_config(vec![first.cert.der().clone()], key);
        assert!(
            matches!(
                refused,
                Err(rustls::Error::InconsistentKeys(
                    rustls::InconsistentKeys::KeyMismatch
                ))
            ),
            "{refused:?}"
        );
    }
}
