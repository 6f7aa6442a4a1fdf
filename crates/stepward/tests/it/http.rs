//! A running `stepward serve` for the tests, stopped by its pid when dropped, and a tiny
//! HTTP/1.1 client that only ever talks to loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::support::{Home, repo_root};

/// A running `stepward serve`, stopped by its pid when dropped (also when a check fails).
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) stderr_file: PathBuf,
    pub(crate) lines: Receiver<String>,
    pub(crate) printed: Vec<String>,
}

impl Server {
    pub(crate) fn start(home: &Home, extra: &[&str]) -> Server {
        Server::start_with_env(home, extra, &[])
    }

    /// As [`Server::start`], with these environment variables set too.
    pub(crate) fn start_with_env(home: &Home, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let state_dir = home.dir.path().join("sandbox");
        let mut args = vec![
            "--sandbox-state-dir",
            state_dir.to_str().expect("a UTF-8 path"),
        ];
        args.extend(extra);
        Server::spawn(home, &args, env)
    }

    /// As [`Server::start`], with the sandbox state in its default folder
    /// (`/run/stepward/<id>`).
    pub(crate) fn start_with_default_state_dir(home: &Home) -> Server {
        Server::spawn(home, &[], &[])
    }

    fn spawn(home: &Home, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let stderr_file = home.dir.path().join("serve-stderr.txt");
        let mut child = Command::new(env!("CARGO_BIN_EXE_stepward"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .arg("--data-dir")
            .arg(home.data_dir())
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", home.dir.path().join("config"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).expect("a file for stderr"))
            .spawn()
            .expect("the stepward binary starts");
        let stdout: ChildStdout = child.stdout.take().expect("stdout is piped");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stderr_file,
            lines,
            printed: Vec::new(),
        }
    }

    /// The next printed line, waiting at most a minute (the first start builds the sandbox).
    pub(crate) fn next_line(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the server printed no more; so far: {:?}", self.printed));
        self.printed.push(line.clone());
        line
    }

    /// The first start's address, and a session of its owner (ada@example.test, invited at
    /// that start), who sets a password through the printed link: the session cookie and its
    /// CSRF token.
    pub(crate) fn first_owner_session(&mut self) -> (SocketAddr, String, String) {
        let address = self.address();
        let _first_start = self.next_line();
        let link = self.next_line();
        let path = link
            .strip_prefix(&format!("http://{address}"))
            .expect("a link to this server")
            .to_owned();
        let (session, csrf) = owner_session(address, &path, "local", "ada@example.test");
        (address, session, csrf)
    }

    /// The address from `stepward serves http://<address> ...`.
    pub(crate) fn address(&mut self) -> SocketAddr {
        self.address_after("stepward serves http://")
    }

    /// The address from `stepward serves https://<address> ...`.
    pub(crate) fn https_address(&mut self) -> SocketAddr {
        self.address_after("stepward serves https://")
    }

    pub(crate) fn address_after(&mut self, prefix: &str) -> SocketAddr {
        let line = self.next_line();
        let rest = line
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("not the serving line: {line}"));
        rest.split(' ').next().unwrap().parse().unwrap()
    }

    /// Sends `signal` (`-TERM`, `-INT`) to the server's pid.
    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
    }

    /// How the server exited within `limit` (`None`: still running).
    pub(crate) fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Sends SIGTERM to the server's pid and waits for it to exit.
    pub(crate) fn terminate(&mut self) -> ExitStatus {
        self.signal("-TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// How the server exited by itself within 60 seconds (`None`: still running).
    pub(crate) fn exit_within_a_minute(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_file).unwrap_or_default()
    }

    /// Every line the server printed until its stdout closed.
    pub(crate) fn rest_of_output(&mut self) -> Vec<String> {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.printed.push(line);
        }
        self.printed.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An HTTP/1.1 answer: status, headers (names lower case) and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    /// `name=value` of the cookie `name` this answer sets.
    pub(crate) fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(header, _)| header == "set-cookie")
            .find_map(|(_, value)| {
                let pair = value.split(';').next()?;
                pair.starts_with(&format!("{name}="))
                    .then(|| pair.to_owned())
            })
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }

    /// The whole `Set-Cookie` value (attributes included) of the cookie `name`.
    pub(crate) fn set_cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .filter(|(header, _)| header == "set-cookie")
            .map(|(_, value)| value.as_str())
            .find(|value| value.starts_with(&format!("{name}=")))
    }

    pub(crate) fn parse(raw: Vec<u8>) -> Answer {
        let text = String::from_utf8(raw).expect("the answer is text");
        let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_owned()))
            .collect();
        Answer {
            status,
            headers,
            body: body.to_owned(),
        }
    }
}

/// `GET path` over a fresh loopback connection, read until the server closes it.
pub(crate) fn get(address: SocketAddr, path: &str) -> Answer {
    send(address, "GET", path, &[], "")
}

/// One request over a fresh loopback connection, read until the server closes it.
pub(crate) fn send(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = connect(address);
    stream
        .write_all(request_text(address, method, path, headers, body).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("the answer arrives");
    Answer::parse(raw)
}

pub(crate) fn connect(address: SocketAddr) -> TcpStream {
    assert!(address.ip().is_loopback(), "tests only talk to loopback");
    let stream = TcpStream::connect(address).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
}

pub(crate) fn request_text(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\
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

/// The value of the hidden `csrf` field of a form page.
pub(crate) fn csrf_field(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let start = page.find(marker).expect("a csrf field") + marker.len();
    page[start..].split('"').next().unwrap().to_owned()
}

/// Sets the owner's password through the one-time link `path`, signs in with it over the JSON
/// API, and returns the session cookie and its CSRF token.
pub(crate) fn owner_session(
    address: SocketAddr,
    path: &str,
    account: &str,
    email: &str,
) -> (String, String) {
    let (session, csrf, role) = person_session(address, path, account, email);
    assert_eq!(role, "owner");
    (session, csrf)
}

/// As [`owner_session`] for any person invited with the one-time link `path`: the session
/// cookie, its CSRF token and the person's role.
pub(crate) fn person_session(
    address: SocketAddr,
    path: &str,
    account: &str,
    email: &str,
) -> (String, String, String) {
    let form = get(address, path);
    assert_eq!(form.status, 200, "{}", form.body);
    let form_cookie = form.cookie("stepward_form").expect("a form cookie");
    let password = "correct horse battery staple";
    let body = format!(
        "csrf={}&password={password}&password_again={password}",
        csrf_field(&form.body)
    )
    .replace(' ', "+");
    let welcomed = send(
        address,
        "POST",
        path,
        &[
            ("Cookie", &form_cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &body,
    );
    assert!(
        welcomed.status < 400,
        "{} {}",
        welcomed.status,
        welcomed.body
    );
    let signed_in = send(
        address,
        "POST",
        "/api/signin",
        &[("Content-Type", "application/json")],
        &serde_json::json!({ "account": account, "email": email, "password": password })
            .to_string(),
    );
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let session = signed_in.cookie("stepward_session").expect("a session");
    let answer: serde_json::Value = serde_json::from_str(&signed_in.body).unwrap();
    (
        session,
        answer["csrf_token"].as_str().unwrap().to_owned(),
        answer["role"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The run `run` once the server's worker parked or ended it (`202 Accepted` answers before it
/// runs: issue 38), read with `headers` every 20 ms for at most 60 s.
pub(crate) fn until_settled(
    address: SocketAddr,
    headers: &[(&str, &str)],
    run: &str,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = send(address, "GET", &format!("/api/runs/{run}"), headers, "");
        assert_eq!(read.status, 200, "{}", read.body);
        let detail: serde_json::Value = serde_json::from_str(&read.body).unwrap_or_default();
        if !matches!(detail["status"].as_str(), Some("running" | "queued")) {
            return detail;
        }
        assert!(Instant::now() < deadline, "the run never settled: {detail}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
