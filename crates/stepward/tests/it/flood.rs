//! An unauthenticated flood of a running `stepward serve`, and what it costs a signed-in
//! client: the test of issue 11's finding 1 (`unauthenticated_flood.rs`) and
//! `scripts/bench`'s figure (`benches/flood.rs` includes this file) run the same code.
//!
//! The flood: from each of a few loopback source addresses (127.0.0.2 and up are loopback
//! too, each standing in for a separate client), many keep-alive connections, each taking a
//! form guard from `GET /signin` and then sending, in turn, `POST /welcome/<random token>`
//! with two equal, long enough passwords, `POST /signin` and `POST /api/signin`, each naming
//! a fresh random account. Before the fix each of these ran argon2id (19 MiB) at once.
//!
//! Meanwhile a signed-in client sends `GET /api/runs` one after another over its own
//! keep-alive connection from 127.0.0.1, first without the flood (the baseline), then during
//! it; a sampler reads the server's `VmRSS` every 20 ms. The flood stops by itself at its
//! deadline, or at once when the server's memory has grown past the stop line (so a server
//! that would exhaust the machine is stopped early). Every packet goes to loopback.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream as AsyncTcpStream};

use crate::http::Server;
use crate::support::Home;

/// A fresh `stepward serve` with its owner signed in, and the plan the issue names: 4
/// loopback addresses (127.0.0.2 to .5) × 64 connections for `flood`, after 2 s without it.
pub fn start_signed_in(home: &Home, flood: Duration) -> (Server, FloodPlan) {
    let mut server = Server::start(home, &["--owner-email", "ada@example.test"]);
    let (address, session, _csrf) = server.first_owner_session();
    let plan = FloodPlan {
        target: address,
        server_pid: server.child.id(),
        session_cookie: session,
        sources: (2..=5).map(|last| Ipv4Addr::new(127, 0, 0, last)).collect(),
        connections_per_source: 64,
        quiet: Duration::from_secs(2),
        flood,
        stop_growth_kib: 256 * 1024,
    };
    (server, plan)
}

/// What to flood and for how long.
pub struct FloodPlan {
    pub target: SocketAddr,
    pub server_pid: u32,
    /// `stepward_session=...` of a signed-in person.
    pub session_cookie: String,
    pub sources: Vec<Ipv4Addr>,
    pub connections_per_source: usize,
    pub quiet: Duration,
    pub flood: Duration,
    /// The flood stops as soon as the server's resident memory grew by this much.
    pub stop_growth_kib: u64,
}

/// What the flood did, and what it cost.
pub struct FloodReport {
    pub quiet_p99: Duration,
    pub quiet_median: Duration,
    pub quiet_samples: usize,
    pub flood_p99: Duration,
    pub flood_median: Duration,
    pub flood_samples: usize,
    /// A signed-in request that failed (anything but 200), during either phase.
    pub signed_in_failures: u64,
    pub rss_before_kib: u64,
    pub peak_rss_kib: u64,
    pub flood_requests: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub stopped_early: bool,
}

impl FloodReport {
    pub fn growth_kib(&self) -> u64 {
        self.peak_rss_kib.saturating_sub(self.rss_before_kib)
    }

    pub fn describe(&self) -> String {
        format!(
            "peak RSS growth {} MiB ({} -> {} MiB); signed-in GET /api/runs p99 {:.2} ms under \
             the flood vs {:.2} ms without it ({:.2}x; medians {:.2} vs {:.2} ms; {} and {} \
             requests, {} failed); flood: {} requests, statuses {:?}{}",
            self.growth_kib() / 1024,
            self.rss_before_kib / 1024,
            self.peak_rss_kib / 1024,
            millis(self.flood_p99),
            millis(self.quiet_p99),
            millis(self.flood_p99) / millis(self.quiet_p99).max(0.001),
            millis(self.flood_median),
            millis(self.quiet_median),
            self.flood_samples,
            self.quiet_samples,
            self.signed_in_failures,
            self.flood_requests,
            self.statuses,
            if self.stopped_early {
                ", STOPPED EARLY at the memory stop line"
            } else {
                ""
            }
        )
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * fraction).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Reads one HTTP/1.1 answer (Content-Length or chunked) from `buffer` + `read`, and returns
/// its status, whether the server closes the connection after it, and the whole head and body.
fn parse_answer(bytes: &[u8]) -> Option<(u16, bool, usize, Vec<u8>)> {
    let end = bytes.windows(4).position(|window| window == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&bytes[..end])
        .ok()?
        .to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let close = head.contains("\r\nconnection: close");
    if head.contains("\r\ntransfer-encoding: chunked") {
        let mut at = end;
        let mut body = Vec::new();
        loop {
            let line_end = bytes[at..].windows(2).position(|w| w == b"\r\n")? + at;
            let size =
                usize::from_str_radix(std::str::from_utf8(&bytes[at..line_end]).ok()?, 16).ok()?;
            let data = line_end + 2;
            if bytes.len() < data + size + 2 {
                return None;
            }
            body.extend_from_slice(&bytes[data..data + size]);
            at = data + size + 2;
            if size == 0 {
                return Some((status, close, at, body));
            }
        }
    }
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if bytes.len() < end + length {
        return None;
    }
    Some((
        status,
        close,
        end + length,
        bytes[end..end + length].to_vec(),
    ))
}

/// The signed-in client: `GET /api/runs` one after another until `stop`, each timed.
fn signed_in_client(
    target: SocketAddr,
    cookie: &str,
    until: Instant,
    failures: &AtomicU64,
) -> Vec<Duration> {
    let request = format!(
        "GET /api/runs HTTP/1.1\r\nHost: {target}\r\nCookie: {cookie}\r\nAccept: application/json\r\n\r\n"
    );
    let mut samples = Vec::new();
    let mut stream: Option<TcpStream> = None;
    let mut buffer = Vec::new();
    while Instant::now() < until {
        let connection = match stream.as_mut() {
            Some(connection) => connection,
            None => {
                let Ok(connection) = TcpStream::connect(target) else {
                    failures.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = connection.set_read_timeout(Some(Duration::from_secs(10)));
                let _ = connection.set_nodelay(true);
                stream.insert(connection)
            }
        };
        let started = Instant::now();
        buffer.clear();
        let mut ok = connection.write_all(request.as_bytes()).is_ok();
        let mut answer = None;
        let mut chunk = [0_u8; 16 * 1024];
        while ok && answer.is_none() {
            match connection.read(&mut chunk) {
                Ok(0) | Err(_) => ok = false,
                Ok(read) => {
                    buffer.extend_from_slice(&chunk[..read]);
                    answer = parse_answer(&buffer);
                }
            }
        }
        let elapsed = started.elapsed();
        match answer {
            Some((200, close, _, _)) => {
                samples.push(elapsed);
                if close {
                    stream = None;
                }
            }
            _ => {
                failures.fetch_add(1, Ordering::Relaxed);
                stream = None;
            }
        }
    }
    samples
}

fn random_token() -> String {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).expect("random bytes");
    // base64url without padding, as sign-in link tokens are written.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut text = String::new();
    let mut bits = 0_u32;
    let mut count = 0;
    for byte in bytes {
        bits = (bits << 8) | u32::from(byte);
        count += 8;
        while count >= 6 {
            count -= 6;
            text.push(char::from(ALPHABET[((bits >> count) & 63) as usize]));
        }
    }
    if count > 0 {
        text.push(char::from(ALPHABET[((bits << (6 - count)) & 63) as usize]));
    }
    text
}

struct Tally {
    requests: AtomicU64,
    statuses: std::sync::Mutex<BTreeMap<u16, u64>>,
}

/// One flooding connection's round: a form guard, then the three password doors in turn.
async fn flood_connection(
    target: SocketAddr,
    source: Ipv4Addr,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) {
    let host = target.to_string();
    let mut local = BTreeMap::<u16, u64>::new();
    let mut sent = 0_u64;
    let mut round = 0_u64;
    'connections: while !stop.load(Ordering::Relaxed) {
        let Ok(socket) = TcpSocket::new_v4() else {
            break;
        };
        if socket.bind(SocketAddr::new(source.into(), 0)).is_err() {
            break;
        }
        let mut stream: AsyncTcpStream = match socket.connect(target).await {
            Ok(stream) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let mut guard_cookie = String::new();
        let mut guard_csrf = String::new();
        let mut buffer = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            round += 1;
            let password = "p".repeat(64);
            let account = random_token();
            let (method_path, content_type, body) = if guard_cookie.is_empty() && round % 8 == 1 {
                ("GET /signin".to_owned(), "", String::new())
            } else {
                match round % 3 {
                    0 => (
                        format!("POST /welcome/{}", random_token()),
                        "application/x-www-form-urlencoded",
                        format!("csrf={guard_csrf}&password={password}&password_again={password}"),
                    ),
                    1 => (
                        "POST /signin".to_owned(),
                        "application/x-www-form-urlencoded",
                        format!(
                            "csrf={guard_csrf}&account={account}&email=x%40example.test&password={password}"
                        ),
                    ),
                    _ => (
                        "POST /api/signin".to_owned(),
                        "application/json",
                        format!(
                            "{{\"account\":\"{account}\",\"email\":\"x@example.test\",\"password\":\"{password}\"}}"
                        ),
                    ),
                }
            };
            let mut request = format!("{method_path} HTTP/1.1\r\nHost: {host}\r\n");
            if !guard_cookie.is_empty() {
                request.push_str(&format!("Cookie: {guard_cookie}\r\n"));
            }
            if !content_type.is_empty() {
                request.push_str(&format!("Content-Type: {content_type}\r\n"));
            }
            request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
            if stream.write_all(request.as_bytes()).await.is_err() {
                continue 'connections;
            }
            buffer.clear();
            let mut chunk = [0_u8; 8192];
            let answer = loop {
                let read = tokio::select! {
                    read = stream.read(&mut chunk) => read,
                    () = tokio::time::sleep(Duration::from_millis(200)) => {
                        if stop.load(Ordering::Relaxed) { break 'connections; }
                        continue;
                    }
                };
                match read {
                    Ok(0) | Err(_) => continue 'connections,
                    Ok(count) => {
                        buffer.extend_from_slice(&chunk[..count]);
                        if let Some(answer) = parse_answer(&buffer) {
                            break answer;
                        }
                    }
                }
            };
            sent += 1;
            let (status, close, end, body) = answer;
            *local.entry(status).or_default() += 1;
            if method_path == "GET /signin" && status == 200 {
                let head = String::from_utf8_lossy(&buffer[..end]).to_string();
                if let Some(cookie) = head.lines().find_map(|line| {
                    let lower = line.to_ascii_lowercase();
                    lower
                        .starts_with("set-cookie: stepward_form=")
                        .then(|| {
                            line["set-cookie: ".len()..]
                                .split(';')
                                .next()
                                .map(str::to_owned)
                        })
                        .flatten()
                }) {
                    guard_cookie = cookie;
                }
                let page = String::from_utf8_lossy(&body);
                let marker = "name=\"csrf\" value=\"";
                if let Some(start) = page.find(marker) {
                    guard_csrf = page[start + marker.len()..]
                        .split('"')
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                }
            }
            if close {
                continue 'connections;
            }
        }
    }
    tally.requests.fetch_add(sent, Ordering::Relaxed);
    let mut statuses = tally.statuses.lock().expect("the tally");
    for (status, count) in local {
        *statuses.entry(status).or_default() += count;
    }
}

/// Runs the plan: the quiet baseline, then the flood with the signed-in client beside it.
pub fn run(plan: &FloodPlan) -> FloodReport {
    assert!(
        plan.target.ip().is_loopback(),
        "the flood only goes to loopback"
    );
    assert!(plan.sources.iter().all(Ipv4Addr::is_loopback));
    let failures = Arc::new(AtomicU64::new(0));
    let mut quiet = signed_in_client(
        plan.target,
        &plan.session_cookie,
        Instant::now() + plan.quiet,
        &failures,
    );
    let (rss_before_kib, hwm_before_kib) = memory_kib(plan.server_pid);

    let stop = Arc::new(AtomicBool::new(false));
    let stopped_early = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally {
        requests: AtomicU64::new(0),
        statuses: std::sync::Mutex::new(BTreeMap::new()),
    });
    let deadline = Instant::now() + plan.flood;
    // The sampler: the largest VmRSS seen, and the stop line.
    let sampler = {
        let stop = stop.clone();
        let stopped_early = stopped_early.clone();
        let pid = plan.server_pid;
        let stop_line = rss_before_kib + plan.stop_growth_kib;
        std::thread::spawn(move || {
            let mut peak = rss_before_kib;
            while !stop.load(Ordering::Relaxed) {
                let (rss, _) = memory_kib(pid);
                peak = peak.max(rss);
                if rss > stop_line {
                    stopped_early.store(true, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                }
                if Instant::now() >= deadline {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    // The flood, on a runtime of its own with one worker, so the test's own share of the two
    // cores stays small.
    let flood = {
        let stop = stop.clone();
        let tally = tally.clone();
        let target = plan.target;
        let sources = plan.sources.clone();
        let per_source = plan.connections_per_source;
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for the flood");
            runtime.block_on(async move {
                let mut tasks = Vec::new();
                for source in sources {
                    for _ in 0..per_source {
                        tasks.push(tokio::spawn(flood_connection(
                            target,
                            source,
                            stop.clone(),
                            tally.clone(),
                        )));
                    }
                }
                for task in tasks {
                    let _ = task.await;
                }
            });
        })
    };
    // Let the flood get going before timing the signed-in client under it.
    std::thread::sleep(Duration::from_millis(300));
    let mut flooded = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let slice_end = (Instant::now() + Duration::from_millis(200)).min(deadline);
        flooded.extend(signed_in_client(
            plan.target,
            &plan.session_cookie,
            slice_end,
            &failures,
        ));
        if Instant::now() >= deadline {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let sampled_peak = sampler.join().expect("the sampler");
    flood.join().expect("the flood");
    let (_, hwm_after_kib) = memory_kib(plan.server_pid);
    // The high-water mark is exact but counts from the server's start; it says something about
    // the flood only when it rose during it.
    let peak_rss_kib = if hwm_after_kib > hwm_before_kib {
        hwm_after_kib.max(sampled_peak)
    } else {
        sampled_peak
    };
    quiet.sort();
    flooded.sort();
    let statuses = tally.statuses.lock().expect("the tally").clone();
    FloodReport {
        quiet_p99: percentile(&quiet, 0.99),
        quiet_median: percentile(&quiet, 0.5),
        quiet_samples: quiet.len(),
        flood_p99: percentile(&flooded, 0.99),
        flood_median: percentile(&flooded, 0.5),
        flood_samples: flooded.len(),
        signed_in_failures: failures.load(Ordering::Relaxed),
        rss_before_kib,
        peak_rss_kib,
        flood_requests: tally.requests.load(Ordering::Relaxed),
        statuses,
        stopped_early: stopped_early.load(Ordering::Relaxed),
    }
}
