//! `https` for real: a TLS front on 127.0.0.1 (a certificate for `fake-model.test` from a CA
//! made here) before the fake model. The client verifies the certificate for the URL's name
//! while it connects to the address the check resolved; a certificate that does not verify
//! fails once, without retries, and the model never sees the request.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fake_model::{FakeModel, ScriptTurn};
use llm::{Client, Model, Provider, ProviderKind, Recorder, StaticResolver, TurnRequest};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use redact::SecretValue;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::support::{KEY, fake, options};

const NAME: &str = "fake-model.test";

/// A TLS front: each connection's handshake, then its bytes copied to the fake.
struct TlsFront {
    address: SocketAddr,
    root: CertificateDer<'static>,
    /// The server name each completed handshake asked for (SNI).
    handshakes: Arc<Mutex<Vec<String>>>,
    /// Connections accepted, counted before their handshake starts (so before the client can
    /// have seen the certificate).
    connections: Arc<AtomicUsize>,
}

async fn tls_front(fake: &FakeModel) -> TlsFront {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![NAME.to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let backend = fake.address();
    let handshakes = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = handshakes.clone();
    let accepted = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let name = tls.get_ref().1.server_name().unwrap_or_default().to_owned();
                seen.lock().unwrap().push(name);
                let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsFront {
        address,
        root: ca.der().clone(),
        handshakes,
        connections,
    }
}

fn client(front: &TlsFront, roots: Vec<CertificateDer<'static>>) -> Client {
    // The front is on loopback, so the operator exempts it by name; the name resolves only
    // through this table.
    let mut options = options(&[&format!("{NAME}:{}", front.address.port())]);
    options.resolver = Arc::new(StaticResolver::new().with(NAME, &[IpAddr::from([127, 0, 0, 1])]));
    options.extra_roots = roots;
    Client::new(options).unwrap()
}

async fn turn(front: &TlsFront, client: Client) -> Result<llm::Turn, llm::Error> {
    let provider = Provider::new(
        &ids::AccountId::parse("acct").unwrap(),
        ProviderKind::Anthropic,
        Some(&format!("https://{NAME}:{}", front.address.port())),
        SecretValue::new(KEY.to_owned()),
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

#[tokio::test]
async fn https_verifies_the_certificate_for_the_urls_name_at_the_checked_address() {
    let fake = fake(vec![ScriptTurn::text("over TLS")]).await;
    let front = tls_front(&fake).await;
    let turn = turn(&front, client(&front, vec![front.root.clone()]))
        .await
        .unwrap();
    assert_eq!(turn.text, "over TLS");
    assert_eq!(*front.handshakes.lock().unwrap(), [NAME]);
    let received = fake.requests();
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0].header("host"),
        Some(format!("{NAME}:{}", front.address.port()).as_str())
    );
    assert_eq!(received[0].header("x-api-key"), Some(KEY));
}

#[tokio::test]
async fn a_certificate_that_does_not_verify_fails_once_and_the_model_sees_nothing() {
    let fake = fake(vec![ScriptTurn::text("never")]).await;
    let front = tls_front(&fake).await;
    let result = turn(&front, client(&front, Vec::new())).await;
    let error = result.unwrap_err();
    assert_eq!(error.kind(), "tls", "{error}");
    assert!(!error.is_retriable());
    assert_eq!(
        front.connections.load(Ordering::SeqCst),
        1,
        "a failed handshake is not retried"
    );
    assert!(front.handshakes.lock().unwrap().is_empty());
    assert!(fake.requests().is_empty(), "the key went out without TLS");
}
