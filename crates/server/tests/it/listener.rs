//! The listener under [`server::serve`] (plain HTTP) and [`server::serve_tls`], on loopback
//! ports with short deadlines and small caps: a client that sends nothing, half a request head,
//! nothing more on a keep-alive connection, half a body, or stops reading is closed; one address
//! cannot take every connection or handshake, and connections over a cap are closed at once
//! while accepting goes on; a graceful shutdown drops what is left at its deadline; a listener
//! that fails for good ends serving with the error.
//!
//! Every connection goes to 127.0.0.1 only (from 127.0.0.1 to 127.0.0.4, all loopback).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use auth::TlsMode;
use rustls::pki_types::ServerName;
use server::{AppOptions, ListenerLimits, serve, serve_tls, tls_server_config};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::Harness;
use crate::tls::{HttpAnswer, TestCertificate, connect_from, http_request, request_over};

/// Deadlines far beyond any test's patience, so only the one a test shortens can act.
fn patient_limits() -> ListenerLimits {
    ListenerLimits {
        tls_handshake_timeout: Duration::from_secs(600),
        header_read_timeout: Duration::from_secs(600),
        stall_timeout: Duration::from_secs(600),
        shutdown_deadline: Duration::from_secs(600),
        ..ListenerLimits::with_max_connections(1024)
    }
}

/// How long a test waits for something the server should do at once, or after a short
/// deadline: long enough for a loaded machine, far below the patient deadlines.
const PROMPTLY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Plain,
    Tls,
}

/// `serve` or `serve_tls` over a harness on 127.0.0.1:0, stopped through its shutdown future.
struct Served {
    address: SocketAddr,
    certificate: Option<TestCertificate>,
    stop: Option<oneshot::Sender<()>>,
    serving: JoinHandle<std::io::Result<()>>,
    _harness: Harness,
}

impl Served {
    async fn start(transport: Transport, limits: ListenerLimits) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Served::start_on(listener, transport, limits)
    }

    fn start_on(
        listener: tokio::net::TcpListener,
        transport: Transport,
        limits: ListenerLimits,
    ) -> Served {
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let (harness, certificate, serving) = match transport {
            Transport::Plain => {
                let harness = Harness::new();
                let serving =
                    tokio::spawn(serve(listener, harness.state.clone(), shutdown, limits));
                (harness, None, serving)
            }
            Transport::Tls => {
                let harness = Harness::with_options(AppOptions::new(
                    TlsMode::Tls,
                    server::StepIsolation::Sandboxed,
                ));
                let certificate = TestCertificate::generate();
                let config =
                    tls_server_config(vec![certificate.der.clone()], certificate.key.clone_key())
                        .unwrap();
                let serving = tokio::spawn(serve_tls(
                    listener,
                    config,
                    harness.state.clone(),
                    shutdown,
                    limits,
                ));
                (harness, Some(certificate), serving)
            }
        };
        Served {
            address,
            certificate,
            stop: Some(stop),
            serving,
            _harness: harness,
        }
    }

    /// Starts the graceful shutdown; `serve` must return within `limit`.
    async fn stop_within(mut self, limit: Duration) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(limit, &mut self.serving)
            .await
            .unwrap_or_else(|_| panic!("serve did not return within {limit:?} of the shutdown"))
            .unwrap()
    }

    /// A TCP connection from `local` (an address on loopback, port 0).
    async fn connect_from(&self, local: &str) -> TcpStream {
        connect_from(local, self.address).await
    }

    /// `GET path` with `Connection: close` from `local`, over this server's transport.
    async fn get_from(&self, local: &str, path: &str) -> HttpAnswer {
        let tcp = self.connect_from(local).await;
        let request = http_request("GET", path, &[], "");
        match &self.certificate {
            Some(certificate) => {
                request_over(tcp, &certificate.client(rustls::DEFAULT_VERSIONS), &request)
                    .await
                    .0
            }
            None => {
                let mut tcp = tcp;
                tcp.write_all(request.as_bytes()).await.unwrap();
                let raw = read_until_closed(&mut tcp, PROMPTLY)
                    .await
                    .unwrap_or_else(|| panic!("the answer did not end in time"));
                HttpAnswer::parse(&raw)
            }
        }
    }
}

/// Everything `stream` delivers until the server closes it (an end of stream or a reset), or
/// `None` when it is still open after `limit`.
async fn read_until_closed<S: AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 16 * 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_elapsed) => return None,
            Ok(Ok(0) | Err(_)) => return Some(raw),
            Ok(Ok(read)) => raw.extend_from_slice(&buffer[..read]),
        }
    }
}

/// A TLS session to `served` from `local` whose handshake finished.
async fn tls_session_from(
    served: &Served,
    local: &str,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let connector = served
        .certificate
        .as_ref()
        .unwrap()
        .client(rustls::DEFAULT_VERSIONS);
    let tcp = served.connect_from(local).await;
    tokio::time::timeout(
        PROMPTLY,
        connector.connect(ServerName::try_from("localhost").unwrap(), tcp),
    )
    .await
    .unwrap_or_else(|_| panic!("the handshake did not finish in time"))
    .unwrap()
}

/// Whether a connection the server just refused is closed at once: it sees the end of the
/// stream (or a reset) well within [`PROMPTLY`], with patient deadlines all around.
async fn closed_at_once(stream: &mut TcpStream) -> bool {
    read_until_closed(stream, PROMPTLY).await.is_some()
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_silent_half_sent_and_idle_connections_are_closed_at_the_header_deadline() {
    let served = Served::start(
        Transport::Plain,
        ListenerLimits {
            header_read_timeout: Duration::from_millis(300),
            ..patient_limits()
        },
    )
    .await;
    let mut silent = served.connect_from("127.0.0.1:0").await;
    let mut half_head = served.connect_from("127.0.0.1:0").await;
    half_head
        .write_all(b"GET /signin HTTP/1.1\r\nHost: loc")
        .await
        .unwrap();
    // A whole request on a keep-alive connection, then nothing.
    let mut idle = served.connect_from("127.0.0.1:0").await;
    idle.write_all(b"GET /api/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    assert!(read_until_closed(&mut silent, PROMPTLY).await.is_some());
    assert!(read_until_closed(&mut half_head, PROMPTLY).await.is_some());
    let answered = read_until_closed(&mut idle, PROMPTLY)
        .await
        .expect("the idle keep-alive connection was closed");
    assert!(
        answered.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answered[..answered.len().min(200)])
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    served.stop_within(PROMPTLY).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_silent_connection_after_the_handshake_is_closed_at_the_header_deadline() {
    let served = Served::start(
        Transport::Tls,
        ListenerLimits {
            header_read_timeout: Duration::from_millis(300),
            ..patient_limits()
        },
    )
    .await;
    let mut session = tls_session_from(&served, "127.0.0.1:0").await;
    assert!(
        read_until_closed(&mut session, PROMPTLY).await.is_some(),
        "a TLS session that never sent a request is still open"
    );
    served.stop_within(PROMPTLY).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_stalled_handshake_is_closed_at_the_handshake_deadline() {
    let served = Served::start(
        Transport::Tls,
        ListenerLimits {
            tls_handshake_timeout: Duration::from_millis(300),
            ..patient_limits()
        },
    )
    .await;
    let started = Instant::now();
    let mut silent = served.connect_from("127.0.0.1:0").await;
    let said = read_until_closed(&mut silent, PROMPTLY)
        .await
        .expect("the silent connection was closed");
    assert!(said.is_empty(), "{said:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    served.stop_within(PROMPTLY).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn one_address_cannot_take_every_connection() {
    for transport in [Transport::Plain, Transport::Tls] {
        let served = Served::start(
            transport,
            ListenerLimits {
                max_connections_per_address: 3,
                ..patient_limits()
            },
        )
        .await;
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(served.connect_from("127.0.0.1:0").await);
        }
        // Let the server take all three before the fourth comes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut excess = served.connect_from("127.0.0.1:0").await;
        assert!(closed_at_once(&mut excess).await, "{transport:?}");
        // Another address is served, and the held ones are still open.
        let answer = served.get_from("127.0.0.2:0", "/api/openapi.json").await;
        assert_eq!(answer.status, 200, "{transport:?}");
        for connection in &mut held {
            let mut byte = [0_u8; 1];
            assert!(
                tokio::time::timeout(Duration::from_millis(100), connection.read(&mut byte))
                    .await
                    .is_err(),
                "{transport:?}: a connection within the cap was closed"
            );
        }
        // A held connection ends; the address may connect again.
        drop(held.pop());
        let again = wait_until_served(&served, "127.0.0.1:0").await;
        assert_eq!(again.status, 200, "{transport:?}");
        served.stop_within(PROMPTLY).await.unwrap();
    }
}

/// `GET /api/openapi.json` from `local` until it is served: a slot given back is seen by the
/// accept loop a moment after the client closed.
async fn wait_until_served(served: &Served, local: &str) -> HttpAnswer {
    let started = Instant::now();
    loop {
        let mut tcp = served.connect_from(local).await;
        let request = http_request("GET", "/api/openapi.json", &[], "");
        let answer = match &served.certificate {
            Some(certificate) => {
                let connector = certificate.client(rustls::DEFAULT_VERSIONS);
                match connector
                    .connect(ServerName::try_from("localhost").unwrap(), tcp)
                    .await
                {
                    Ok(mut session) => {
                        session.write_all(request.as_bytes()).await.unwrap();
                        read_until_closed(&mut session, PROMPTLY).await
                    }
                    Err(_) => None,
                }
            }
            None => match tcp.write_all(request.as_bytes()).await {
                Ok(()) => read_until_closed(&mut tcp, PROMPTLY).await,
                Err(_) => None,
            },
        };
        if let Some(raw) = answer
            && !raw.is_empty()
        {
            return HttpAnswer::parse(&raw);
        }
        assert!(started.elapsed() < PROMPTLY, "never served again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_over_the_global_cap_are_closed_at_once() {
    let served = Served::start(
        Transport::Plain,
        ListenerLimits {
            max_connections: 2,
            ..patient_limits()
        },
    )
    .await;
    let first = served.connect_from("127.0.0.1:0").await;
    let _second = served.connect_from("127.0.0.2:0").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = served.connect_from("127.0.0.3:0").await;
    assert!(closed_at_once(&mut third).await);
    drop(first);
    let answer = wait_until_served(&served, "127.0.0.3:0").await;
    assert_eq!(answer.status, 200);
    served.stop_within(PROMPTLY).await.unwrap();
}

/// At a cap on handshakes in progress, a new connection is closed at once (the accept loop
/// does not stop to wait for a handshake to end), and once a handshake ends the next client is
/// served without waiting for any deadline.
#[tokio::test(flavor = "multi_thread")]
async fn tls_handshakes_over_the_caps_are_closed_at_once_and_accepting_goes_on() {
    let served = Served::start(
        Transport::Tls,
        ListenerLimits {
            max_handshakes_per_address: 2,
            max_pending_handshakes: 3,
            ..patient_limits()
        },
    )
    .await;
    let mut silent_first = Vec::new();
    for _ in 0..2 {
        silent_first.push(served.connect_from("127.0.0.1:0").await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Over the cap of one address.
    let mut excess = served.connect_from("127.0.0.1:0").await;
    assert!(closed_at_once(&mut excess).await);
    // Another address gets a handshake slot: one address did not take them all.
    let silent_second = served.connect_from("127.0.0.2:0").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Over the global cap now.
    let mut over_global = served.connect_from("127.0.0.3:0").await;
    assert!(closed_at_once(&mut over_global).await);
    drop(silent_second);
    let started = Instant::now();
    let answer = wait_until_served(&served, "127.0.0.3:0").await;
    assert_eq!(answer.status, 200);
    assert!(started.elapsed() < PROMPTLY);
    served.stop_within(PROMPTLY).await.unwrap();
    drop(silent_first);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_drops_stalled_clients_at_its_deadline() {
    for transport in [Transport::Plain, Transport::Tls] {
        let served = Served::start(
            transport,
            ListenerLimits {
                shutdown_deadline: Duration::from_millis(300),
                ..patient_limits()
            },
        )
        .await;
        // One byte of a request head.
        let mut one_byte = served.connect_from("127.0.0.1:0").await;
        one_byte.write_all(b"G").await.unwrap();
        // A whole head and part of the body it announces, over TLS when served so.
        let head = "POST /api/signin HTTP/1.1\r\nHost: localhost\r\n\
                    Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"acc";
        let mut half_body_plain = None;
        let mut half_body_tls = None;
        match transport {
            Transport::Plain => {
                let mut tcp = served.connect_from("127.0.0.2:0").await;
                tcp.write_all(head.as_bytes()).await.unwrap();
                half_body_plain = Some(tcp);
            }
            Transport::Tls => {
                let mut session = tls_session_from(&served, "127.0.0.2:0").await;
                session.write_all(head.as_bytes()).await.unwrap();
                session.flush().await.unwrap();
                half_body_tls = Some(session);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let stopping = Instant::now();
        served.stop_within(PROMPTLY).await.unwrap();
        assert!(
            stopping.elapsed() >= Duration::from_millis(250),
            "{transport:?}"
        );
        assert!(closed_at_once(&mut one_byte).await, "{transport:?}");
        if let Some(mut tcp) = half_body_plain {
            assert!(closed_at_once(&mut tcp).await);
        }
        if let Some(mut session) = half_body_tls {
            assert!(read_until_closed(&mut session, PROMPTLY).await.is_some());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_body_that_stops_arriving_is_cut_off() {
    let served = Served::start(
        Transport::Plain,
        ListenerLimits {
            stall_timeout: Duration::from_millis(300),
            ..patient_limits()
        },
    )
    .await;
    let mut tcp = served.connect_from("127.0.0.1:0").await;
    tcp.write_all(
        b"POST /api/signin HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"acc",
    )
    .await
    .unwrap();
    let said = read_until_closed(&mut tcp, PROMPTLY)
        .await
        .expect("the connection with a stalled body was cut off");
    // Whatever it was told, it was not signed in.
    assert!(!said.starts_with(b"HTTP/1.1 200"), "{said:?}");
    served.stop_within(PROMPTLY).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_stops_reading_is_cut_off() {
    let served = Served::start(
        Transport::Plain,
        ListenerLimits {
            stall_timeout: Duration::from_millis(300),
            ..patient_limits()
        },
    )
    .await;
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let tcp = socket.connect(served.address).await.unwrap();
    let (mut reading, mut writing) = tcp.into_split();
    // Far more answers than the socket buffers hold, asked for at once and not read.
    let writer = tokio::spawn(async move {
        let request = b"GET /api/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n";
        for _ in 0..2000 {
            if writing.write_all(request).await.is_err() {
                break;
            }
        }
        writing
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Reading now gets what was buffered, then the end: the server gave up on this client.
    // Without the stall deadline it would serve every answer and keep the connection idle.
    assert!(
        read_until_closed(&mut reading, PROMPTLY).await.is_some(),
        "the connection that stopped reading is still open"
    );
    writer.abort();
    served.stop_within(PROMPTLY).await.unwrap();
}

/// A listening socket that cannot accept (here: a connected socket in its place, where
/// accept(2) answers EINVAL) ends `serve` with the error instead of leaving it up accepting
/// nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_listener_that_fails_for_good_ends_serving_with_the_error() {
    for transport in [Transport::Plain, Transport::Tls] {
        let helper = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let connected = std::net::TcpStream::connect(helper.local_addr().unwrap()).unwrap();
        let (mut other_end, _) = helper.accept().unwrap();
        let not_listening = std::net::TcpListener::from(std::os::fd::OwnedFd::from(connected));
        not_listening.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(not_listening).unwrap();
        let served = Served::start_on(listener, transport, patient_limits());
        // Data makes the socket readable, so the server tries to accept on it.
        std::io::Write::write_all(&mut other_end, b"x").unwrap();
        let Served { mut serving, .. } = served;
        let ended = tokio::time::timeout(PROMPTLY, &mut serving)
            .await
            .unwrap_or_else(|_| panic!("{transport:?}: serve is still running"))
            .unwrap();
        let error = ended.expect_err("serve ended with the listener's error");
        assert_eq!(error.raw_os_error(), Some(22), "{transport:?}: {error}");
    }
}
