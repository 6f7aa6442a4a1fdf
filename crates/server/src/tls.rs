//! Serving the router over TLS that this process terminates itself (`stepward serve --tls-cert
//! --tls-key`): the rustls configuration (the `ring` provider, TLS 1.2 and 1.3 only, no client
//! certificates), and [`serve_tls`], which serves the router over it with the listener of
//! [`crate::listener`].
//!
//! Each handshake runs in its connection's own task, under a deadline
//! ([`crate::TLS_HANDSHAKE_TIMEOUT`] by default), and the accept loop never waits for one: at a
//! cap on handshakes in progress (globally, or for one remote address) a new connection is
//! closed at once, so a client that connects and never speaks holds at most its own slots. A
//! silent client can still hold a few slots of its own address for the deadline, and a flood
//! from many addresses can fill the global cap for as long as it lasts; it cannot hold the
//! accept loop. The remote address travels with each stream, so `ConnectInfo<SocketAddr>` (the
//! per-address sign-in limit) works as over plain HTTP.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::AppState;
use crate::listener::{ListenerLimits, Transport, serve_connections};

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

/// Serves the router over TLS on `listener` until `shutdown` completes, like [`crate::serve`]:
/// the same deadlines and caps, plus the TLS handshake's deadline and the caps on handshakes
/// in progress (see [`ListenerLimits`]). Handshakes that have not finished when the shutdown
/// starts are dropped. The remote address of each connection is recorded, so the sign-in
/// limit applies per address.
pub async fn serve_tls(
    listener: TcpListener,
    tls_config: Arc<ServerConfig>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ListenerLimits,
) -> io::Result<()> {
    serve_connections(
        listener,
        Transport::Tls(TlsAcceptor::from(tls_config)),
        state,
        shutdown,
        limits,
    )
    .await
}

#[cfg(test)]
mod tests {
    use crate::tls::tls_server_config;

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
