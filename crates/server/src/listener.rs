//! Serving the router on a TCP listener, over plain HTTP or TLS, with every connection bounded
//! in time and in number.
//!
//! One accept loop takes every connection and never waits for anything but `accept`: a
//! connection over a cap is closed at once (a global cap sized from the open-file limit, a cap
//! per remote address, and over TLS caps on handshakes in progress, globally and per address).
//! Each admitted connection runs in a task of its own, served by hyper's HTTP/1.1 connection
//! with a timer, so the header-read deadline is enforced: a client that sends nothing, half a
//! request head, or nothing more on an idle keep-alive connection is closed when it runs out.
//! A request body that stops arriving and an answer the client stops reading are cut off after
//! [`ListenerLimits::stall_timeout`] without progress.
//!
//! On shutdown the listener closes, handshakes in progress are dropped, and connections finish
//! the request they are serving for at most [`ListenerLimits::shutdown_deadline`]; whatever is
//! still open then is dropped and the serve function returns. An `accept` failure that is not
//! about one connection or a passing shortage (the listening socket itself is unusable) ends
//! serving with that error, so the process exits rather than stays up accepting nothing.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use hyper::body::{Body as HttpBody, Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_rustls::TlsAcceptor;
use tower::{Service, ServiceExt};

use crate::{AppState, router};

/// How long a client may take from connecting to a finished TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send a request head, counted from the connection (or the TLS
/// handshake) or from the end of the previous answer on a keep-alive connection.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a request body may stop arriving, or an answer stop being taken, before the
/// connection is closed.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a graceful shutdown lets connections finish before it drops them.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(20);

/// Connections one remote address may hold open at once.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;

/// TLS handshakes one remote address may have in progress at once.
pub const MAX_HANDSHAKES_PER_ADDRESS: usize = 16;

/// TLS handshakes in progress at once, from everybody.
pub const MAX_PENDING_HANDSHAKES: usize = 1024;

/// The bounds of a listener: deadlines and how many connections it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// From connecting to a finished TLS handshake.
    pub tls_handshake_timeout: Duration,
    /// For a whole request head, from the connection (or handshake, or previous answer).
    pub header_read_timeout: Duration,
    /// For a request body, or an answer being written, to make no progress.
    pub stall_timeout: Duration,
    /// For connections to finish once the shutdown started.
    pub shutdown_deadline: Duration,
    /// Open connections in all (each is a file descriptor).
    pub max_connections: usize,
    /// Open connections from one remote address (an IPv6 address counts by its /64).
    pub max_connections_per_address: usize,
    /// TLS handshakes in progress, from everybody.
    pub max_pending_handshakes: usize,
    /// TLS handshakes in progress from one remote address.
    pub max_handshakes_per_address: usize,
}

impl ListenerLimits {
    /// The default deadlines and per-address caps, with at most `max_connections` open.
    pub fn with_max_connections(max_connections: usize) -> ListenerLimits {
        ListenerLimits {
            tls_handshake_timeout: TLS_HANDSHAKE_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            stall_timeout: STALL_TIMEOUT,
            shutdown_deadline: SHUTDOWN_DEADLINE,
            max_connections,
            max_connections_per_address: MAX_CONNECTIONS_PER_ADDRESS,
            max_pending_handshakes: MAX_PENDING_HANDSHAKES,
            max_handshakes_per_address: MAX_HANDSHAKES_PER_ADDRESS,
        }
    }

    /// The defaults, with connections capped at half this process's soft open-file limit: the
    /// other half stays for the store, the sandboxes and everything else the server opens.
    pub fn for_open_file_limit() -> ListenerLimits {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        // No limit at all still gets a cap; the kernel's own ceiling is about a million.
        let soft = soft.unwrap_or(1 << 20);
        let half = usize::try_from(soft / 2).unwrap_or(usize::MAX);
        ListenerLimits::with_max_connections(half.max(1))
    }
}

/// Raises this process's soft open-file limit to its hard limit, so the connection cap of
/// [`ListenerLimits::for_open_file_limit`] is as large as the system allows. Returns the soft
/// limit in force afterwards (`None`: unlimited).
pub fn raise_open_file_limit() -> io::Result<Option<u64>> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limits = getrlimit(Resource::Nofile);
    if limits.current == limits.maximum {
        return Ok(limits.current);
    }
    let raised = Rlimit {
        current: limits.maximum,
        maximum: limits.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => Ok(limits.maximum),
        // An unlimited hard limit is above the kernel's `nr_open`; keep the soft limit then.
        Err(error) if limits.maximum.is_none() => {
            tracing::debug!(%error, "the open-file limit stays where it is");
            Ok(limits.current)
        }
        Err(error) => Err(error.into()),
    }
}

/// Plain HTTP, or TLS terminated here.
#[derive(Clone)]
pub(crate) enum Transport {
    Plain,
    Tls(TlsAcceptor),
}

/// The router's service for one connection, with the remote address as `ConnectInfo`.
type ConnectionService =
    axum::middleware::AddExtension<axum::Router, axum::extract::ConnectInfo<SocketAddr>>;

/// Serves the router over `listener` until `shutdown` completes (or `accept` fails for good),
/// then drains the connections under the shutdown deadline.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    transport: Transport,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ListenerLimits,
) -> io::Result<()> {
    let shared = Arc::clone(&state.shared);
    let mut make_service = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let admission = Arc::new(Admission::new(limits));
    let (draining_sender, draining) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let outcome = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(()),
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(connection) => connection,
                    Err(error) => match classify_accept_error(&error) {
                        AcceptFailure::OneConnection => continue,
                        AcceptFailure::Shortage => {
                            tracing::error!(%error, "cannot accept a connection");
                            // A pause, so the loop does not spin while the shortage lasts.
                            tokio::select! {
                                () = &mut shutdown => break Ok(()),
                                () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                            }
                        }
                        AcceptFailure::Listener => {
                            tracing::error!(%error, "the listener failed; serving stops");
                            break Err(error);
                        }
                    },
                };
                let stage = match transport {
                    Transport::Plain => Stage::Http,
                    Transport::Tls(_) => Stage::TlsHandshake,
                };
                // Over a cap the stream is dropped here, which closes it.
                let Some(admitted) = Admission::admit(&admission, peer.ip(), stage) else {
                    continue;
                };
                let service = match make_service.call(peer).await {
                    Ok(service) => service,
                    Err(never) => match never {},
                };
                connections.spawn(serve_connection(
                    tcp,
                    peer,
                    admitted,
                    transport.clone(),
                    service,
                    limits,
                    draining.clone(),
                ));
            }
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                log_if_panicked(finished);
            }
        }
    };
    drop(listener);
    // Nobody may be listening any more (no connection open): that is fine.
    let _ = draining_sender.send(true);
    drain(&mut connections, limits.shutdown_deadline).await;
    // The counts of refused attempts held for the ticker are written now: a stop that waited
    // for the next tick would lose up to a second of them.
    let flushed = tokio::task::spawn_blocking(move || {
        shared
            .refusals
            .flush_all(shared.store.as_ref(), shared.clock.now().0)
    })
    .await;
    if let Ok(Err(error)) = flushed {
        tracing::error!(%error, "the held counts of refused attempts could not be written");
    }
    outcome
}

/// Waits for every connection to end, for at most `deadline`; drops the rest then.
async fn drain(connections: &mut JoinSet<()>, deadline: Duration) {
    let all_ended = async {
        while let Some(finished) = connections.join_next().await {
            log_if_panicked(finished);
        }
    };
    if tokio::time::timeout(deadline, all_ended).await.is_err() {
        tracing::warn!(
            open = connections.len(),
            "connections still open at the shutdown deadline are dropped"
        );
        connections.shutdown().await;
    }
}

fn log_if_panicked(finished: Result<(), tokio::task::JoinError>) {
    if let Err(error) = finished
        && error.is_panic()
    {
        tracing::error!(%error, "a connection's task panicked");
    }
}

/// What a failed `accept` means for the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptFailure {
    /// Only the connection being taken failed (reset before it was taken, or a network error
    /// Linux reports on the new socket): take the next.
    OneConnection,
    /// Out of file descriptors or memory for a while: pause, then take the next.
    Shortage,
    /// The listening socket itself is unusable: serving ends.
    Listener,
}

fn classify_accept_error(error: &io::Error) -> AcceptFailure {
    use rustix::io::Errno;
    match error.kind() {
        io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::Interrupted
        | io::ErrorKind::WouldBlock => return AcceptFailure::OneConnection,
        io::ErrorKind::OutOfMemory => return AcceptFailure::Shortage,
        _ => {}
    }
    match Errno::from_io_error(error) {
        Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM) => AcceptFailure::Shortage,
        // accept(2): errors already pending on the new socket, to be treated like EAGAIN, and
        // a connection a firewall rule forbids.
        Some(
            Errno::PERM
            | Errno::NETDOWN
            | Errno::PROTO
            | Errno::NOPROTOOPT
            | Errno::HOSTDOWN
            | Errno::NONET
            | Errno::HOSTUNREACH
            | Errno::OPNOTSUPP
            | Errno::NETUNREACH
            | Errno::TIMEDOUT,
        ) => AcceptFailure::OneConnection,
        _ => AcceptFailure::Listener,
    }
}

/// One connection: its TLS handshake (under its deadline, and dropped when the shutdown
/// starts), then HTTP/1.1 until either side closes it.
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    transport: Transport,
    service: ConnectionService,
    limits: ListenerLimits,
    mut draining: watch::Receiver<bool>,
) {
    let Admitted {
        connection: _connection,
        handshake,
    } = admitted;
    match transport {
        Transport::Plain => serve_http(tcp, service, limits, draining).await,
        Transport::Tls(acceptor) => {
            let handshake_deadline =
                tokio::time::timeout(limits.tls_handshake_timeout, acceptor.accept(tcp));
            let stream = tokio::select! {
                finished = handshake_deadline => match finished {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(error)) => {
                        tracing::debug!(%peer, %error, "TLS handshake failed");
                        return;
                    }
                    Err(_elapsed) => {
                        tracing::debug!(%peer, "TLS handshake did not finish in time");
                        return;
                    }
                },
                () = wait_for_drain(&mut draining) => return,
            };
            drop(handshake);
            serve_http(stream, service, limits, draining).await;
        }
    }
}

/// Resolves once the shutdown started (or the server is gone).
async fn wait_for_drain(draining: &mut watch::Receiver<bool>) {
    let _ = draining.wait_for(|draining| *draining).await;
}

/// HTTP/1.1 over `io` with the header-read deadline enforced (hyper's timer), keep-alive, the
/// stall deadline on the request body and on writing, and a graceful close when the shutdown
/// starts.
async fn serve_http<I>(
    io: I,
    service: ConnectionService,
    limits: ListenerLimits,
    mut draining: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let stall_timeout = limits.stall_timeout;
    let service = service.map_request(move |request: Request<Incoming>| {
        request.map(|body| Body::new(StallTimeoutBody::new(body, stall_timeout)))
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let io = TokioIo::new(WriteStallGuard::new(io, stall_timeout));
    let mut connection = pin!(builder.serve_connection(io, TowerToHyperService::new(service)));
    let mut closing = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            () = wait_for_drain(&mut draining), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A request body that fails once no frame arrived for `timeout` while somebody waited.
struct StallTimeoutBody {
    inner: Incoming,
    timeout: Duration,
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl StallTimeoutBody {
    fn new(inner: Incoming, timeout: Duration) -> StallTimeoutBody {
        StallTimeoutBody {
            inner,
            timeout,
            stalled_since: None,
        }
    }
}

/// The error of a request body that stopped arriving.
#[derive(Debug, thiserror::Error)]
#[error("the request body stopped arriving for {} s", timeout.as_secs())]
struct BodyStalled {
    timeout: Duration,
}

impl HttpBody for StallTimeoutBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.stalled_since = None;
                Poll::Ready(frame.map(|frame| frame.map_err(Into::into)))
            }
            Poll::Pending => {
                let timeout = this.timeout;
                let sleep = this
                    .stalled_since
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                ready!(sleep.as_mut().poll(cx));
                Poll::Ready(Some(Err(Box::new(BodyStalled { timeout }))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A stream whose writes fail once they made no progress for `timeout`: a client that stops
/// reading its answer does not hold the connection for ever.
struct WriteStallGuard<I> {
    inner: I,
    timeout: Duration,
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl<I> WriteStallGuard<I> {
    fn new(inner: I, timeout: Duration) -> WriteStallGuard<I> {
        WriteStallGuard {
            inner,
            timeout,
            stalled_since: None,
        }
    }

    /// Passes a finished write through; on a pending one, fails once the stall lasted.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(result) => {
                self.stalled_since = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let sleep = self
                    .stalled_since
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                ready!(sleep.as_mut().poll(cx));
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client took no data for the stall deadline",
                )))
            }
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteStallGuard<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteStallGuard<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, polled)
    }
}

/// What a new connection starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Http,
    TlsHandshake,
}

/// Who holds how many connections and handshakes. Counted under one lock, so every cap is
/// checked and taken at once.
struct Admission {
    limits: ListenerLimits,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    open_connections: usize,
    pending_handshakes: usize,
    peers: HashMap<PeerKey, PeerCounts>,
    refused_since_warning: u64,
    last_warning: Option<Instant>,
}

#[derive(Default)]
struct PeerCounts {
    connections: usize,
    handshakes: usize,
}

/// A remote address as the caps count it: an IPv4 address, or an IPv6 address's /64 (one
/// host usually holds a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PeerKey(IpAddr);

impl PeerKey {
    fn of(address: IpAddr) -> PeerKey {
        match address.to_canonical() {
            IpAddr::V4(v4) => PeerKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let prefix = v6.to_bits() & !u128::from(u64::MAX);
                PeerKey(IpAddr::V6(Ipv6Addr::from_bits(prefix)))
            }
        }
    }
}

/// The slots an admitted connection holds; dropping them gives them back.
struct Admitted {
    connection: ConnectionSlot,
    handshake: Option<HandshakeSlot>,
}

struct ConnectionSlot {
    admission: Arc<Admission>,
    peer: PeerKey,
}

struct HandshakeSlot {
    admission: Arc<Admission>,
    peer: PeerKey,
}

impl Admission {
    fn new(limits: ListenerLimits) -> Admission {
        Admission {
            limits,
            counts: Mutex::new(Counts::default()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent whatever panicked while they were held: each change is
        // one statement.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a connection slot (and a handshake slot for TLS) for `address`, or refuses when
    /// any cap is reached.
    fn admit(admission: &Arc<Admission>, address: IpAddr, stage: Stage) -> Option<Admitted> {
        let limits = &admission.limits;
        let peer = PeerKey::of(address);
        let mut counts = admission.counts();
        let peer_counts = counts.peers.get(&peer);
        let peer_connections = peer_counts.map_or(0, |counts| counts.connections);
        let peer_handshakes = peer_counts.map_or(0, |counts| counts.handshakes);
        let refusal = if counts.open_connections >= limits.max_connections {
            Some("the server holds as many connections as it may")
        } else if peer_connections >= limits.max_connections_per_address {
            Some("the address holds as many connections as one address may")
        } else if stage == Stage::TlsHandshake
            && counts.pending_handshakes >= limits.max_pending_handshakes
        {
            Some("as many TLS handshakes are in progress as may be")
        } else if stage == Stage::TlsHandshake
            && peer_handshakes >= limits.max_handshakes_per_address
        {
            Some("the address has as many TLS handshakes in progress as one address may")
        } else {
            None
        };
        if let Some(reason) = refusal {
            counts.refused_since_warning = counts.refused_since_warning.saturating_add(1);
            // One warning a minute at most: a flood must not flood the log too.
            let now = Instant::now();
            if counts
                .last_warning
                .is_none_or(|last| now.duration_since(last) >= Duration::from_secs(60))
            {
                tracing::warn!(
                    %address,
                    reason,
                    refused = counts.refused_since_warning,
                    "connection closed at once: a connection cap is reached"
                );
                counts.last_warning = Some(now);
                counts.refused_since_warning = 0;
            }
            return None;
        }
        counts.open_connections += 1;
        let entry = counts.peers.entry(peer).or_default();
        entry.connections += 1;
        let handshake = if stage == Stage::TlsHandshake {
            entry.handshakes += 1;
            counts.pending_handshakes += 1;
            Some(HandshakeSlot {
                admission: Arc::clone(admission),
                peer,
            })
        } else {
            None
        };
        Some(Admitted {
            connection: ConnectionSlot {
                admission: Arc::clone(admission),
                peer,
            },
            handshake,
        })
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut counts = self.admission.counts();
        counts.open_connections = counts.open_connections.saturating_sub(1);
        if let Some(peer) = counts.peers.get_mut(&self.peer) {
            peer.connections = peer.connections.saturating_sub(1);
            if peer.connections == 0 {
                counts.peers.remove(&self.peer);
            }
        }
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut counts = self.admission.counts();
        counts.pending_handshakes = counts.pending_handshakes.saturating_sub(1);
        if let Some(peer) = counts.peers.get_mut(&self.peer) {
            peer.handshakes = peer.handshakes.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::Arc;

    use crate::listener::{
        AcceptFailure, Admission, ListenerLimits, PeerKey, Stage, classify_accept_error,
        raise_open_file_limit,
    };

    #[test]
    fn only_an_unusable_listening_socket_ends_the_accept_loop() {
        use rustix::io::Errno;
        let cases = [
            (Errno::INVAL, AcceptFailure::Listener),
            (Errno::BADF, AcceptFailure::Listener),
            (Errno::NOTSOCK, AcceptFailure::Listener),
            (Errno::MFILE, AcceptFailure::Shortage),
            (Errno::NFILE, AcceptFailure::Shortage),
            (Errno::NOMEM, AcceptFailure::Shortage),
            (Errno::CONNABORTED, AcceptFailure::OneConnection),
            (Errno::PROTO, AcceptFailure::OneConnection),
            (Errno::PERM, AcceptFailure::OneConnection),
        ];
        for (errno, expected) in cases {
            let error = std::io::Error::from(errno);
            assert_eq!(classify_accept_error(&error), expected, "{errno:?}");
        }
    }

    /// Raising the soft open-file limit to the hard one (this test process's own limit), and
    /// the connection cap is half of it.
    #[test]
    fn the_connection_cap_is_half_the_raised_open_file_limit() {
        use rustix::process::{Resource, getrlimit};
        let raised = raise_open_file_limit().unwrap();
        let limits = getrlimit(Resource::Nofile);
        assert_eq!(raised, limits.current);
        if limits.maximum.is_some() {
            assert_eq!(limits.current, limits.maximum);
        }
        let soft = limits.current.unwrap_or(1 << 20);
        assert_eq!(
            ListenerLimits::for_open_file_limit().max_connections as u64,
            soft / 2
        );
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        let first: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same_prefix: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let other_prefix: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(PeerKey::of(first), PeerKey::of(same_prefix));
        assert_ne!(PeerKey::of(first), PeerKey::of(other_prefix));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(
            PeerKey::of(mapped),
            PeerKey::of("192.0.2.7".parse().unwrap())
        );
    }

    #[test]
    fn slots_come_back_when_dropped() {
        let limits = ListenerLimits {
            max_connections_per_address: 2,
            max_handshakes_per_address: 1,
            ..ListenerLimits::with_max_connections(3)
        };
        let admission = Arc::new(Admission::new(limits));
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        let two: IpAddr = "192.0.2.2".parse().unwrap();
        let first = Admission::admit(&admission, one, Stage::TlsHandshake).unwrap();
        // One handshake per address: refused until the first handshake ends.
        assert!(Admission::admit(&admission, one, Stage::TlsHandshake).is_none());
        drop(first.handshake);
        let second = Admission::admit(&admission, one, Stage::TlsHandshake).unwrap();
        // Two connections per address.
        assert!(Admission::admit(&admission, one, Stage::Http).is_none());
        let third = Admission::admit(&admission, two, Stage::Http).unwrap();
        // Three in all.
        assert!(Admission::admit(&admission, two, Stage::Http).is_none());
        drop(third);
        assert!(Admission::admit(&admission, two, Stage::Http).is_some());
        drop(second);
        drop(first.connection);
        assert!(admission.counts().peers.is_empty());
        assert_eq!(admission.counts().open_connections, 0);
        assert_eq!(admission.counts().pending_handshakes, 0);
    }
}
