//! The server's own TLS listener ([`server::serve_tls`]) on a loopback port, with a self-signed
//! certificate for `localhost` made at test time, reached by a rustls client that trusts only
//! that certificate: pages carry the security headers, sessions get `Secure` `__Host-`
//! cookies, plain HTTP gets no HTTP answer, a silent client keeps nobody else out, and the peer
//! address still reaches the sign-in limit. `Strict-Transport-Security` is on every answer
//! in TLS mode (the server's own TLS or `--behind-tls`) and on none over plain HTTP.
//!
//! Every connection goes to 127.0.0.1 only (from 127.0.0.1 or 127.0.0.2, both loopback).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use auth::{RateLimit, Role, TlsMode};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use server::{
    AppOptions, ListenerLimits, SECURITY_HEADERS, STRICT_TRANSPORT_SECURITY, serve_tls,
    tls_server_config,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

use crate::support::{ACCOUNT, Caller, Credentials, Harness, PASSWORD};

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key.
pub(crate) struct TestCertificate {
    pub(crate) der: CertificateDer<'static>,
    pub(crate) key: PrivateKeyDer<'static>,
}

impl TestCertificate {
    pub(crate) fn generate() -> TestCertificate {
        let certified = rcgen::generate_simple_self_signed(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .unwrap();
        TestCertificate {
            der: certified.cert.der().clone(),
            key: PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into()),
        }
    }

    /// A client configuration that trusts this certificate and nothing else, speaking
    /// `versions`.
    pub(crate) fn client(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> TlsConnector {
        let mut roots = RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        let config =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(versions)
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        TlsConnector::from(Arc::new(config))
    }
}

/// `serve_tls` over a harness on 127.0.0.1:0, stopped through its shutdown future.
struct TlsServer {
    address: SocketAddr,
    certificate: TestCertificate,
    stop: Option<oneshot::Sender<()>>,
    serving: JoinHandle<std::io::Result<()>>,
    _harness: Harness,
}

impl TlsServer {
    async fn start(options: AppOptions) -> TlsServer {
        let harness = Harness::with_options(options);
        let certificate = TestCertificate::generate();
        let config =
            tls_server_config(vec![certificate.der.clone()], certificate.key.clone_key()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(serve_tls(
            listener,
            config,
            harness.state.clone(),
            async {
                let _ = stopped.await;
            },
            ListenerLimits::with_max_connections(1024),
        ));
        TlsServer {
            address,
            certificate,
            stop: Some(stop),
            serving,
            _harness: harness,
        }
    }

    /// Starts the graceful shutdown and waits for `serve_tls` to return.
    async fn stop(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), &mut self.serving)
            .await
            .unwrap_or_else(|_| panic!("serve_tls did not return after the shutdown"))
            .unwrap()
    }
}

/// An HTTP/1.1 answer: status, headers (names lower case) and body.
pub(crate) struct HttpAnswer {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpAnswer {
    pub(crate) fn parse(raw: &[u8]) -> HttpAnswer {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no header block: {text}"));
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head}"));
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_owned()))
            .collect();
        HttpAnswer {
            status,
            headers,
            body: body.to_owned(),
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }
}

/// One request over a fresh TLS connection from `tcp`, read until the server closes it.
pub(crate) async fn request_over(
    tcp: TcpStream,
    connector: &TlsConnector,
    request: &str,
) -> (HttpAnswer, rustls::ProtocolVersion) {
    let server_name = ServerName::try_from("localhost").unwrap();
    let mut stream =
        tokio::time::timeout(Duration::from_secs(30), connector.connect(server_name, tcp))
            .await
            .unwrap_or_else(|_| panic!("the handshake did not finish in time"))
            .unwrap_or_else(|error| panic!("the handshake failed: {error}"));
    let version = stream.get_ref().1.protocol_version().unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw))
        .await
        .unwrap_or_else(|_| panic!("the answer did not arrive in time"))
        .unwrap_or_else(|error| panic!("the TLS session did not end cleanly: {error}"));
    (HttpAnswer::parse(&raw), version)
}

pub(crate) fn http_request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    request
}

pub(crate) async fn connect_from(local: &str, server: SocketAddr) -> TcpStream {
    assert!(server.ip().is_loopback(), "tests only talk to loopback");
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(local.parse().unwrap()).unwrap();
    socket.connect(server).await.unwrap()
}

fn sign_in_json(account: &str, email: &str, password: &str) -> String {
    serde_json::json!({ "account": account, "email": email, "password": password }).to_string()
}

async fn sign_in_from(
    local: &str,
    server: &TlsServer,
    account: &str,
    email: &str,
    password: &str,
) -> HttpAnswer {
    let connector = server.certificate.client(rustls::DEFAULT_VERSIONS);
    let tcp = connect_from(local, server.address).await;
    let request = http_request(
        "POST",
        "/api/signin",
        &[("Content-Type", "application/json")],
        &sign_in_json(account, email, password),
    );
    request_over(tcp, &connector, &request).await.0
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_tls_listener_sets_secure_cookies() {
    let server = TlsServer::start(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ))
    .await;
    let connector = server.certificate.client(rustls::DEFAULT_VERSIONS);

    let (page, _) = request_over(
        connect_from("127.0.0.1:0", server.address).await,
        &connector,
        &http_request("GET", "/signin", &[], ""),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(page.header(name), Some(value), "{name}");
    }

    let signed_in = sign_in_from(
        "127.0.0.1:0",
        &server,
        ACCOUNT,
        "member@example.test",
        PASSWORD,
    )
    .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let set_cookie = signed_in
        .headers
        .iter()
        .find(|(name, value)| name == "set-cookie" && value.contains("stepward_session="))
        .map(|(_, value)| value.clone())
        .expect("a session cookie");
    assert!(
        set_cookie.starts_with("__Host-stepward_session="),
        "{set_cookie}"
    );
    let attributes: Vec<String> = set_cookie
        .split(';')
        .skip(1)
        .map(|attribute| attribute.trim().to_lowercase())
        .collect();
    for expected in ["secure", "httponly", "samesite=strict", "path=/"] {
        assert!(
            attributes.iter().any(|attribute| attribute == expected),
            "{expected} missing: {set_cookie}"
        );
    }
    assert!(
        !attributes
            .iter()
            .any(|attribute| attribute.starts_with("domain")),
        "a __Host- cookie names no domain: {set_cookie}"
    );

    // The session works over the same listener.
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let (home, _) = request_over(
        connect_from("127.0.0.1:0", server.address).await,
        &connector,
        &http_request("GET", "/api/runs", &[("Cookie", &cookie)], ""),
    )
    .await;
    assert_eq!(home.status, 200, "{}", home.body);

    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_listener_speaks_tls12_and_tls13_only() {
    let server = TlsServer::start(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ))
    .await;
    for (version, expected) in [
        (&rustls::version::TLS12, rustls::ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, rustls::ProtocolVersion::TLSv1_3),
    ] {
        let connector = server.certificate.client(&[version]);
        let (answer, negotiated) = request_over(
            connect_from("127.0.0.1:0", server.address).await,
            &connector,
            &http_request("GET", "/api/openapi.json", &[], ""),
        )
        .await;
        assert_eq!(negotiated, expected);
        assert_eq!(answer.status, 200);
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_plain_http_to_the_tls_port_gets_no_http_answer() {
    let server = TlsServer::start(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ))
    .await;
    let mut plain = connect_from("127.0.0.1:0", server.address).await;
    plain
        .write_all(http_request("GET", "/signin", &[], "").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    // The server answers with a TLS alert at most and closes; a reset is a close too.
    let _ = tokio::time::timeout(Duration::from_secs(30), plain.read_to_end(&mut raw))
        .await
        .expect("the server closed the connection");
    assert!(
        !raw.windows(5).any(|window| window == b"HTTP/"),
        "plain HTTP got an HTTP answer: {:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!String::from_utf8_lossy(&raw).contains("Sign in"));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_stalled_handshake_does_not_block_others() {
    let server = TlsServer::start(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ))
    .await;
    // Silent clients: connected, never a byte. One more sends half a ClientHello header.
    let mut stalled = Vec::new();
    for _ in 0..3 {
        stalled.push(connect_from("127.0.0.1:0", server.address).await);
    }
    let mut half_hello = connect_from("127.0.0.1:0", server.address).await;
    half_hello.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    stalled.push(half_hello);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Well within the handshake deadline, so nobody was served only because a stalled
    // handshake timed out.
    let started = Instant::now();
    let connector = server.certificate.client(rustls::DEFAULT_VERSIONS);
    let (answer, _) = request_over(
        connect_from("127.0.0.1:0", server.address).await,
        &connector,
        &http_request("GET", "/api/openapi.json", &[], ""),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert!(
        started.elapsed() < server::TLS_HANDSHAKE_TIMEOUT / 2,
        "served only after {:?}",
        started.elapsed()
    );
    // A graceful shutdown does not wait for the stalled handshakes (still connected here).
    let stopping = Instant::now();
    server.stop().await.unwrap();
    assert!(stopping.elapsed() < server::TLS_HANDSHAKE_TIMEOUT / 2);
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_tls_listener_keeps_the_peer_address_for_the_sign_in_limit() {
    let options = AppOptions::new(TlsMode::Tls, server::StepIsolation::Sandboxed);
    let burst = options.address_sign_in_limit.burst;
    let server = TlsServer::start(AppOptions {
        // Only the per-address limit is under test here.
        account_sign_in_limit: RateLimit {
            burst: 1000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        ..options
    })
    .await;
    for index in 0..burst {
        let answer = sign_in_from(
            "127.0.0.1:0",
            &server,
            &format!("account-{index}"),
            "x@example.test",
            "guess",
        )
        .await;
        assert_eq!(answer.status, 401, "attempt {index}: {}", answer.body);
    }
    let limited = sign_in_from(
        "127.0.0.1:0",
        &server,
        ACCOUNT,
        "member@example.test",
        PASSWORD,
    )
    .await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    // Another address is not limited: the limit saw the real peer address, not one shared
    // by every connection.
    let other_address = sign_in_from(
        "127.0.0.2:0",
        &server,
        ACCOUNT,
        "member@example.test",
        PASSWORD,
    )
    .await;
    assert_eq!(other_address.status, 200, "{}", other_address.body);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_tls_mode_answers_carry_hsts_and_plain_mode_answers_do_not() {
    let (name, value) = STRICT_TRANSPORT_SECURITY;
    assert_eq!(
        (name, value),
        ("strict-transport-security", "max-age=31536000")
    );
    let tls = Harness::with_options(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ));
    let plain = Harness::new();
    for (harness, expected) in [(&tls, Some(value.to_owned())), (&plain, None)] {
        let member = harness.credentials(Caller::Person(Role::Member));
        let answers = [
            harness
                .call("GET", "/signin", &Credentials::None, None)
                .await,
            harness.call("GET", "/api/runs", &member, None).await,
            harness
                .call("GET", "/api/runs", &Credentials::None, None)
                .await,
            harness
                .call("GET", "/no/such/page", &Credentials::None, None)
                .await,
            harness
                .call("GET", "/s/nothing", &Credentials::None, None)
                .await,
        ];
        for answer in &answers {
            assert_eq!(answer.header(name), expected, "a {} answer", answer.status);
        }
    }

    // And over the server's own TLS listener.
    let server = TlsServer::start(AppOptions::new(
        TlsMode::Tls,
        server::StepIsolation::Sandboxed,
    ))
    .await;
    let connector = server.certificate.client(rustls::DEFAULT_VERSIONS);
    let (page, _) = request_over(
        connect_from("127.0.0.1:0", server.address).await,
        &connector,
        &http_request("GET", "/signin", &[], ""),
    )
    .await;
    assert_eq!(page.header(name), Some(value));
    server.stop().await.unwrap();
}
