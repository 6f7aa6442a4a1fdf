//! An SMTP sink on loopback for the mail tests (issue 41): it speaks enough ESMTP for a real
//! client (EHLO, STARTTLS, MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeps every message it is
//! handed, and plays one of three servers: one that offers STARTTLS, one that speaks TLS from
//! the first byte, and one that offers no TLS at all. Its certificate is for `127.0.0.1` and
//! `localhost`, signed by a CA of its own ([`SmtpSink::ca_pem`]).
//!
//! Bounded: at most 200 connections, lines of 64 KiB and messages of 1 MiB; each connection
//! times out after 30 s of silence. Dropping the sink stops it and joins its thread.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

const MAX_CONNECTIONS: usize = 200;
const MAX_LINE: usize = 64 * 1024;
const MAX_MESSAGE: usize = 1024 * 1024;
const IDLE: Duration = Duration::from_secs(30);

/// Which server the sink plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkTls {
    /// Offers STARTTLS in its EHLO answer and upgrades when asked.
    StartTls,
    /// TLS from the first byte (`smtps://`).
    Implicit,
    /// Offers no TLS: a client that requires it must send nothing.
    None,
}

/// One message as handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent (headers and body), with its line ends.
    pub data: String,
    /// Whether it came over TLS.
    pub over_tls: bool,
}

impl Received {
    /// The body with quoted-printable soft breaks undone and `=XX` escapes decoded, as a
    /// reader's mail program shows it (lettre encodes long lines this way).
    pub fn text(&self) -> String {
        let body = self
            .data
            .split_once("\r\n\r\n")
            .map_or(self.data.as_str(), |(_, body)| body);
        let joined = body.replace("=\r\n", "");
        let mut out = Vec::with_capacity(joined.len());
        let bytes = joined.as_bytes();
        let mut index = 0;
        while index < bytes.len() {
            if bytes[index] == b'='
                && index + 2 < bytes.len()
                && let Ok(byte) = u8::from_str_radix(&joined[index + 1..index + 3], 16)
            {
                out.push(byte);
                index += 3;
                continue;
            }
            out.push(bytes[index]);
            index += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The sink. Dropping it stops it.
pub struct SmtpSink {
    address: SocketAddr,
    ca_pem: String,
    received: Arc<Mutex<Vec<Received>>>,
    connections: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SmtpSink {
    /// A sink on a free port of 127.0.0.1.
    pub fn start(tls: SinkTls) -> SmtpSink {
        SmtpSink::refusing(tls, &[])
    }

    /// A sink that refuses these recipients for good (`550` to their `RCPT TO`).
    pub fn refusing(tls: SinkTls, refused: &[&str]) -> SmtpSink {
        let refused: Arc<Vec<String>> = Arc::new(
            refused
                .iter()
                .map(|address| (*address).to_owned())
                .collect(),
        );
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
            .expect("CA certificate");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("leaf parameters")
            .signed_by(&leaf_key, &ca)
            .expect("leaf certificate");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .expect("TLS configuration");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the SMTP sink");
        let address = listener.local_addr().expect("the sink's address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let received = received.clone();
            let connections = connections.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut served = Vec::new();
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let count = {
                        let mut count = connections.lock().expect("count");
                        *count += 1;
                        *count
                    };
                    if count > MAX_CONNECTIONS {
                        break;
                    }
                    let received = received.clone();
                    let config = config.clone();
                    let refused = refused.clone();
                    served.push(std::thread::spawn(move || {
                        let _ = serve(stream, tls, &config, &received, &refused);
                    }));
                }
                for connection in served {
                    let _ = connection.join();
                }
            })
        };
        SmtpSink {
            address,
            ca_pem: ca.pem(),
            received,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The CA that signed the sink's certificate, as PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Every message so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        *self.connections.lock().expect("count")
    }

    /// Waits up to `within` for at least `count` messages; what arrived by then.
    pub fn wait_for(&self, count: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now().checked_add(within).expect("a deadline");
        loop {
            let received = self.received();
            if received.len() >= count || Instant::now() >= deadline {
                return received;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Conn {
    fn tls(stream: TcpStream, config: &Arc<rustls::ServerConfig>) -> std::io::Result<Conn> {
        let connection = rustls::ServerConnection::new(config.clone())
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(
            connection, stream,
        ))))
    }

    fn is_tls(&self) -> bool {
        matches!(self, Conn::Tls(_))
    }

    fn say(&mut self, line: &str) -> std::io::Result<()> {
        let bytes = format!("{line}\r\n");
        match self {
            Conn::Plain(stream) => stream.write_all(bytes.as_bytes())?,
            Conn::Tls(stream) => {
                stream.write_all(bytes.as_bytes())?;
                stream.flush()?;
            }
        }
        Ok(())
    }

    /// One line without its CRLF, read a byte at a time so nothing is buffered past it (the
    /// STARTTLS upgrade starts at the next byte).
    fn line(&mut self) -> std::io::Result<Option<String>> {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            let read = match self {
                Conn::Plain(stream) => stream.read(&mut byte)?,
                Conn::Tls(stream) => stream.read(&mut byte)?,
            };
            if read == 0 {
                return Ok(None);
            }
            if byte[0] == b'\n' {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            line.push(byte[0]);
            if line.len() > MAX_LINE {
                return Err(std::io::Error::other("line too long"));
            }
        }
    }
}

fn serve(
    stream: TcpStream,
    tls: SinkTls,
    config: &Arc<rustls::ServerConfig>,
    received: &Mutex<Vec<Received>>,
    refused: &[String],
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    stream.set_write_timeout(Some(IDLE))?;
    let mut conn = match tls {
        SinkTls::Implicit => Conn::tls(stream, config)?,
        SinkTls::StartTls | SinkTls::None => Conn::Plain(stream),
    };
    conn.say("220 sink.test ESMTP")?;
    let mut from = String::new();
    let mut to = Vec::new();
    while let Some(line) = conn.line()? {
        let upper = line.to_ascii_uppercase();
        if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            if tls == SinkTls::StartTls && !conn.is_tls() {
                conn.say("250-sink.test")?;
                conn.say("250-8BITMIME")?;
                conn.say("250 STARTTLS")?;
            } else {
                conn.say("250-sink.test")?;
                conn.say("250 8BITMIME")?;
            }
        } else if upper == "STARTTLS" {
            if tls == SinkTls::StartTls && !conn.is_tls() {
                conn.say("220 go ahead")?;
                let Conn::Plain(stream) = conn else {
                    unreachable!("checked above")
                };
                conn = Conn::tls(stream, config)?;
                from.clear();
                to.clear();
            } else {
                conn.say("502 no TLS here")?;
            }
        } else if upper.starts_with("MAIL FROM:") {
            from = address_of(&line);
            to.clear();
            conn.say("250 sender ok")?;
        } else if upper.starts_with("RCPT TO:") {
            let address = address_of(&line);
            if refused.contains(&address) {
                conn.say("550 5.1.1 no such mailbox")?;
            } else {
                to.push(address);
                conn.say("250 recipient ok")?;
            }
        } else if upper == "DATA" {
            conn.say("354 end with <CRLF>.<CRLF>")?;
            let mut data = String::new();
            loop {
                let Some(line) = conn.line()? else {
                    return Ok(());
                };
                if line == "." {
                    break;
                }
                // Dot-stuffing: a line the client began with `.` came with one more.
                let line = line.strip_prefix('.').unwrap_or(&line);
                data.push_str(line);
                data.push_str("\r\n");
                if data.len() > MAX_MESSAGE {
                    conn.say("552 too big")?;
                    return Ok(());
                }
            }
            received.lock().expect("received").push(Received {
                from: std::mem::take(&mut from),
                to: std::mem::take(&mut to),
                data,
                over_tls: conn.is_tls(),
            });
            conn.say("250 kept")?;
        } else if upper == "RSET" {
            from.clear();
            to.clear();
            conn.say("250 reset")?;
        } else if upper == "NOOP" {
            conn.say("250 ok")?;
        } else if upper == "QUIT" {
            conn.say("221 bye")?;
            return Ok(());
        } else {
            conn.say("502 not implemented")?;
        }
    }
    Ok(())
}

/// `MAIL FROM:<a@b> SIZE=1` → `a@b`.
fn address_of(line: &str) -> String {
    line.split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map_or_else(String::new, |(address, _)| address.to_owned())
}
