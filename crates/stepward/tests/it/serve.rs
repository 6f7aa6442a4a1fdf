//! `stepward serve` as an operator starts it: the real binary on a free loopback port, its
//! printed one-time sign-in link fetched over loopback with a tiny HTTP/1.1 client, the
//! security headers, the OpenAPI document, the server's own key files, and a clean stop on
//! SIGTERM; `stepward accounts create` and `stepward keys rotate-links`.
//!
//! Every request goes to 127.0.0.1 only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::support::{Home, repo_root, stderr, stdout};

/// A running `stepward serve`, stopped by its pid when dropped (also when a check fails).
struct Server {
    child: Child,
    stderr_file: PathBuf,
    lines: Receiver<String>,
    printed: Vec<String>,
}

impl Server {
    fn start(home: &Home, extra: &[&str]) -> Server {
        let stderr_file = home.dir.path().join("serve-stderr.txt");
        let mut child = Command::new(env!("CARGO_BIN_EXE_stepward"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .arg("--data-dir")
            .arg(home.data_dir())
            .arg("--sandbox-state-dir")
            .arg(home.dir.path().join("sandbox"))
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", home.dir.path().join("config"))
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
    fn next_line(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the server printed no more; so far: {:?}", self.printed));
        self.printed.push(line.clone());
        line
    }

    /// The address from `stepward serves http://<address> ...`.
    fn address(&mut self) -> SocketAddr {
        let line = self.next_line();
        let rest = line
            .strip_prefix("stepward serves http://")
            .unwrap_or_else(|| panic!("not the serving line: {line}"));
        rest.split(' ').next().unwrap().parse().unwrap()
    }

    /// Sends SIGTERM to the server's pid and waits for it to exit.
    fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
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
    fn exit_within_a_minute(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_file).unwrap_or_default()
    }

    /// Every line the server printed until its stdout closed.
    fn rest_of_output(&mut self) -> Vec<String> {
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
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    /// `name=value` of the cookie `name` this answer sets.
    fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(header, _)| header == "set-cookie")
            .find_map(|(_, value)| {
                let pair = value.split(';').next()?;
                pair.starts_with(&format!("{name}="))
                    .then(|| pair.to_owned())
            })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }
}

/// `GET path` over a fresh loopback connection, read until the server closes it.
fn get(address: SocketAddr, path: &str) -> Answer {
    send(address, "GET", path, &[], "")
}

/// One request over a fresh loopback connection, read until the server closes it.
fn send(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    assert!(address.ip().is_loopback(), "tests only talk to loopback");
    let mut stream = TcpStream::connect(address).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
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
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("the answer arrives");
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

fn server_key_files(home: &Home) -> Vec<PathBuf> {
    let root = home.dir.path().join("config/stepward/server-keys");
    let mut files = Vec::new();
    for install in std::fs::read_dir(&root).expect("the server-keys folder exists") {
        for file in std::fs::read_dir(install.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files.sort();
    files
}

fn assert_security_headers(answer: &Answer) {
    let csp = answer.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
    assert!(answer.header("referrer-policy").is_some());
}

#[test]
fn g24_serve_prints_a_sign_in_link_that_works_over_loopback_and_stops_cleanly_needs_root() {
    let home = Home::new();
    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let address = server.address();
    let first_start = server.next_line();
    assert!(first_start.contains("ada@example.test"), "{first_start}");
    let link = server.next_line();
    let path = link
        .strip_prefix(&format!("http://{address}"))
        .unwrap_or_else(|| panic!("not a link to this server: {link}"));
    assert!(path.starts_with("/welcome/"), "{link}");

    // Opening the link shows the set-password form, with the security headers.
    let welcome = get(address, path);
    assert_eq!(welcome.status, 200, "{}", welcome.body);
    assert!(
        welcome.body.contains("Set your password"),
        "{}",
        welcome.body
    );
    assert_security_headers(&welcome);
    let tampered = get(address, &format!("{path}x"));
    assert_eq!(tampered.status, 404);

    // The OpenAPI document answers JSON to anyone.
    let document = get(address, "/api/openapi.json");
    assert_eq!(document.status, 200);
    assert!(
        document
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/json"))
    );
    assert_security_headers(&document);
    let document: serde_json::Value = serde_json::from_str(&document.body).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"]["/api/runs/{id}"]["get"].is_object());

    // The API asks for credentials; the server's keys are in their own 0600 files outside
    // the data directory.
    assert_eq!(get(address, "/api/runs").status, 401);
    let key_files = server_key_files(&home);
    assert_eq!(key_files.len(), 2, "{key_files:?}");
    for file in &key_files {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
        assert!(!file.starts_with(home.data_dir()));
    }

    // Rotating the link key beside a live server is refused: it would keep the old key.
    let refused = home.stepward(&["keys", "rotate-links"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("stop `stepward serve`"),
        "{}",
        stderr(&refused)
    );

    let status = server.terminate();
    assert!(status.success(), "the server exited with {status}");

    // A second start finds the owner and prints no new link; the keys are the same files.
    let keys_before: Vec<Vec<u8>> = key_files
        .iter()
        .map(|file| std::fs::read(file).unwrap())
        .collect();
    let mut again = Server::start(&home, &[]);
    let address = again.address();
    assert_eq!(
        get(address, path).status,
        200,
        "the unused link still works"
    );
    assert!(again.terminate().success());
    let printed = again.rest_of_output();
    assert!(
        !printed.iter().any(|line| line.contains("/welcome/")),
        "{printed:?}"
    );
    let keys_after: Vec<Vec<u8>> = key_files
        .iter()
        .map(|file| std::fs::read(file).unwrap())
        .collect();
    assert_eq!(keys_before, keys_after);
}

#[test]
fn g24_rotate_links_replaces_only_the_approve_link_key() {
    let home = Home::new();
    let first = home.stepward(&["keys", "rotate-links"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let files = server_key_files(&home);
    let approve = files
        .iter()
        .find(|file| file.ends_with("approve-links.key"))
        .expect("the approve-link key file");
    let before = std::fs::read(approve).unwrap();
    let second = home.stepward(&["keys", "rotate-links"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let after = std::fs::read(approve).unwrap();
    assert_ne!(before, after, "the key was not replaced");
    assert!(
        String::from_utf8(after)
            .unwrap()
            .starts_with("stepward-approve-link-key-v1 ")
    );
    let mode = std::fs::metadata(approve).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(stdout(&second).contains("every earlier approve link stopped working"));
    let audit = home.stepward(&["audit", "verify"]);
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
}

#[test]
fn g26_accounts_create_prints_a_one_time_link_and_unisolated_refuses_a_second_account() {
    let home = Home::new();
    let refused = home.stepward(&[
        "--backend",
        "unisolated",
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "ada@example.test",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("one account"),
        "{}",
        stderr(&refused)
    );

    let created = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "ada@example.test",
        "--base-url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    assert!(
        stdout(&created).contains("http://127.0.0.1:9/welcome/"),
        "{}",
        stdout(&created)
    );
    assert!(home.data_dir().join("accounts/acme/workflows").is_dir());

    let twice = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "bo@example.test",
    ]);
    assert_eq!(
        twice.status.code(),
        Some(2),
        "an account never gets a second owner this way"
    );
    let bad_name = home.stepward(&["accounts", "create", "../x", "--owner-email", "a@b.test"]);
    assert_eq!(bad_name.status.code(), Some(2));

    // With two accounts, the unisolated backend refuses to serve at all.
    let mut serve = Server::start(&home, &["--backend", "unisolated"]);
    let status = serve.exit_within_a_minute();
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(2),
        "{:?}",
        serve.rest_of_output()
    );
    assert!(serve.stderr().contains("one account"), "{}", serve.stderr());
}

/// The value of the hidden `csrf` field of a form page.
fn csrf_field(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let start = page.find(marker).expect("a csrf field") + marker.len();
    page[start..].split('"').next().unwrap().to_owned()
}

#[test]
fn g26_a_second_accounts_owner_signs_in_and_its_steps_are_refused_until_it_has_a_workspace_needs_root()
 {
    let home = Home::new();
    let created = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "ada@example.test",
    ]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    let printed = stdout(&created);
    let path = &printed[printed.find("/welcome/").expect("a link")..]
        .trim()
        .to_owned();
    std::fs::write(
        home.data_dir().join("accounts/acme/workflows/hello.yaml"),
        "name: hello\npython: \"3.11\"\nsteps:\n  - id: build\n    explain: \"Returns one.\"\n    \
         code: |\n      def main():\n          return 1\n",
    )
    .unwrap();

    let mut server = Server::start(&home, &[]);
    let address = server.address();
    // The owner of acme exists, so no first-start link is printed for the local account.
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
        &serde_json::json!({ "account": "acme", "email": "ada@example.test", "password": password })
            .to_string(),
    );
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let session = signed_in.cookie("stepward_session").expect("a session");
    let answer: serde_json::Value = serde_json::from_str(&signed_in.body).unwrap();
    let csrf = answer["csrf_token"].as_str().unwrap().to_owned();
    assert_eq!(answer["role"], "owner");

    let workflows = send(
        address,
        "GET",
        "/api/workflows",
        &[("Cookie", &session)],
        "",
    );
    assert_eq!(workflows.status, 200, "{}", workflows.body);
    assert!(workflows.body.contains("hello"), "{}", workflows.body);

    let started = send(
        address,
        "POST",
        "/api/runs",
        &[
            ("Cookie", &session),
            ("X-CSRF-Token", &csrf),
            ("Content-Type", "application/json"),
        ],
        r#"{"workflow":"hello"}"#,
    );
    assert_eq!(started.status, 201, "{}", started.body);
    let run: serde_json::Value = serde_json::from_str(&started.body).unwrap();
    assert_ne!(run["status"], "succeeded", "{run}");
    let step = &run["steps"][0];
    assert_eq!(step["status"], "refused", "{run}");
    assert!(
        step["reason"]
            .as_str()
            .unwrap()
            .contains("workspace of its own"),
        "{run}"
    );
    assert!(server.terminate().success());
}
