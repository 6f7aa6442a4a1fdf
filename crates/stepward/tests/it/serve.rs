//! `stepward serve` as an operator starts it: the real binary on a free loopback port, its
//! printed one-time sign-in link fetched over loopback with a tiny HTTP/1.1 client, the
//! security headers, the OpenAPI document, the server's own key files, and a clean stop on
//! SIGTERM; `stepward accounts create` and `stepward keys rotate-links`; `--tls-cert` and
//! `--tls-key` (HTTPS served by the binary itself, reached by a rustls client that trusts only a
//! certificate made at test time, with HSTS); a second SIGTERM stops a draining server at once.
//!
//! Every request goes to 127.0.0.1 only.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::http::{Answer, Server, connect, csrf_field, get, owner_session, request_text, send};
use crate::support::{Home, stderr, stdout};

/// A self-signed certificate for `localhost` and 127.0.0.1, written as PEM files beside the
/// home (the key file at `key_mode`), and a client that trusts it and nothing else.
struct TestCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    client: Arc<rustls::ClientConfig>,
}

impl TestCertificate {
    fn write(dir: &Path, key_mode: u32) -> TestCertificate {
        let certified = rcgen::generate_simple_self_signed(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .unwrap();
        let cert_path = dir.join("server-cert.pem");
        let key_path = dir.join("server-key.pem");
        std::fs::write(&cert_path, certified.cert.pem()).unwrap();
        std::fs::write(&key_path, certified.signing_key.serialize_pem()).unwrap();
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(key_mode)).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certified.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        TestCertificate {
            cert_path,
            key_path,
            client: Arc::new(client),
        }
    }

    fn serve_args(&self) -> [String; 4] {
        [
            "--tls-cert".to_owned(),
            self.cert_path.display().to_string(),
            "--tls-key".to_owned(),
            self.key_path.display().to_string(),
        ]
    }
}

/// One request over a fresh TLS connection (the certificate checked for `localhost`), read
/// until the server ends the TLS session.
fn send_tls(
    certificate: &TestCertificate,
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let server_name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(certificate.client.clone(), server_name)
        .expect("a client connection");
    let mut stream = rustls::StreamOwned::new(connection, connect(address));
    stream
        .write_all(request_text(address, method, path, headers, body).as_bytes())
        .expect("the TLS handshake succeeds and the request is sent");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .expect("the answer arrives and the TLS session ends cleanly");
    Answer::parse(raw)
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
    // Plain HTTP without `--behind-tls`: no HSTS.
    assert_eq!(welcome.header("strict-transport-security"), None);
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

    // A second start finds the owner, who has not set a password yet, and prints a fresh
    // link: the earlier one stopped working. The keys are the same files.
    let keys_before: Vec<Vec<u8>> = key_files
        .iter()
        .map(|file| std::fs::read(file).unwrap())
        .collect();
    let mut again = Server::start(&home, &[]);
    let address = again.address();
    let said = again.next_line();
    assert!(said.contains("has not set a password yet"), "{said}");
    let fresh = again.next_line();
    let fresh_path = fresh
        .strip_prefix(&format!("http://{address}"))
        .unwrap_or_else(|| panic!("not a link to this server: {fresh}"));
    assert_ne!(fresh_path, path);
    assert_eq!(get(address, path).status, 404, "the earlier link is dead");
    assert_eq!(get(address, fresh_path).status, 200, "the fresh link works");
    assert!(again.terminate().success());
    let keys_after: Vec<Vec<u8>> = key_files
        .iter()
        .map(|file| std::fs::read(file).unwrap())
        .collect();
    assert_eq!(keys_before, keys_after);
}

/// The path of the first `/welcome/` link in `text`.
fn welcome_path(text: &str) -> String {
    let start = text.find("/welcome/").expect("a sign-in link");
    text[start..]
        .split(|character: char| character.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

/// Issue 12, 1: the owner is never locked out. A first start on a busy port creates nothing;
/// `accounts invite-owner` prints a new link to the address the server served on (the old
/// links die); every start prints a fresh link until the owner sets a password, and none after.
#[test]
fn g26_the_owner_is_never_locked_out_busy_port_invite_owner_and_fresh_links_needs_root() {
    let home = Home::new();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_address = busy.local_addr().unwrap().to_string();
    let refused = home.stepward(&["serve", "--listen", &busy_address]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains(&format!("cannot listen on {busy_address}")),
        "{}",
        stderr(&refused)
    );
    assert!(
        !home.data_dir().exists(),
        "a start that could not listen created the data directory"
    );
    drop(busy);

    // Without a server ever having served, an operator command cannot know the address.
    let no_address = home.stepward(&["accounts", "create", "acme", "--owner-email", "a@b.test"]);
    assert_eq!(no_address.status.code(), Some(2), "{}", stdout(&no_address));
    assert!(
        stderr(&no_address).contains("pass --base-url URL"),
        "{}",
        stderr(&no_address)
    );

    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let address = server.address();
    assert!(server.next_line().starts_with("first start"));
    let first = welcome_path(&server.next_line());
    assert!(server.terminate().success());

    let invited = home.stepward(&["accounts", "invite-owner", "local"]);
    assert_eq!(invited.status.code(), Some(0), "{}", stderr(&invited));
    let printed = stdout(&invited);
    assert!(
        printed.contains(&format!("http://{address}/welcome/"))
            && printed.contains("the earlier link stopped working")
            && printed.contains("last served"),
        "{printed}"
    );
    let second = welcome_path(&printed);
    let unknown = home.stepward(&["accounts", "invite-owner", "nobody"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("there is no account nobody"),
        "{}",
        stderr(&unknown)
    );
    // The address recorded by serve is also what `accounts create` prints its link with.
    let created = home.stepward(&["accounts", "create", "acme", "--owner-email", "bo@b.test"]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    assert!(
        stdout(&created).contains(&format!("http://{address}/welcome/")),
        "{}",
        stdout(&created)
    );

    let mut server = Server::start(&home, &[]);
    let address = server.address();
    assert!(server.next_line().contains("has not set a password yet"));
    let third = welcome_path(&server.next_line());
    assert_eq!(get(address, &first).status, 404, "the first link is dead");
    assert_eq!(
        get(address, &second).status,
        404,
        "the operator's link is dead"
    );
    owner_session(address, &third, "local", "ada@example.test");
    assert!(server.terminate().success());

    // The owner has signed in: no more links.
    let mut server = Server::start(&home, &[]);
    server.address();
    assert!(server.terminate().success());
    let printed = server.rest_of_output();
    assert!(
        !printed.iter().any(|line| line.contains("/welcome/")),
        "{printed:?}"
    );
    let audit = home.stepward(&["audit", "verify"]);
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
}

#[test]
fn g24_rotate_links_replaces_only_the_approve_link_key() {
    let home = Home::new();
    let made = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-value-0000000006\n");
    assert!(made.status.success(), "{}", stderr(&made));
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
        "--base-url",
        "http://127.0.0.1:9",
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
    assert!(home.data_dir().join("accounts/acme/workspace").is_dir());

    let twice = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "bo@example.test",
        "--base-url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(
        twice.status.code(),
        Some(2),
        "an account never gets a second owner this way"
    );
    assert!(stderr(&twice).contains("acme"), "{}", stderr(&twice));
    let bad_name = home.stepward(&[
        "accounts",
        "create",
        "../x",
        "--owner-email",
        "a@b.test",
        "--base-url",
        "http://127.0.0.1:9",
    ]);
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

#[test]
fn g26_a_second_accounts_owner_signs_in_and_its_steps_write_only_its_own_workspace_needs_root() {
    let home = Home::new();
    let created = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "ada@example.test",
        "--base-url",
        "http://127.0.0.1:8080",
    ]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    let printed = stdout(&created);
    let path = &printed[printed.find("/welcome/").expect("a link")..]
        .lines()
        .next()
        .unwrap()
        .to_owned();
    // Laid out as an older data directory keeps workflows: the server's open moves it into
    // acme's workspace (issue 16 §1).
    std::fs::create_dir_all(home.data_dir().join("accounts/acme/workflows")).unwrap();
    std::fs::write(
        home.data_dir().join("accounts/acme/workflows/hello.yaml"),
        "name: hello\npython: \"3.11\"\nsteps:\n  - id: build\n    explain: \"Writes hello.txt.\"\n    \
         code: |\n      def main():\n          with open('/work/hello.txt', 'w') as out:\n              \
         out.write('from acme')\n          return 1\n",
    )
    .unwrap();

    let mut server = Server::start(&home, &[]);
    let address = server.address();
    // The owner of acme exists, so no first-start link is printed for the local account.
    let (session, csrf) = owner_session(address, path, "acme", "ada@example.test");

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
    assert_eq!(started.status, 202, "{}", started.body);
    let run: serde_json::Value = serde_json::from_str(&started.body).unwrap();
    let run = crate::http::until_settled(
        address,
        &[("Cookie", &session)],
        run["run"].as_str().unwrap(),
    );
    assert_eq!(run["status"], "succeeded", "{run}");
    // The step's file is in acme's workspace, authored by the run's step, and nowhere else.
    let accounts = home.data_dir().join("accounts");
    assert_eq!(
        std::fs::read_to_string(accounts.join("acme/workspace/hello.txt")).unwrap(),
        "from acme"
    );
    assert!(!accounts.join("local/workspace/hello.txt").exists());
    let history = send(
        address,
        "GET",
        "/api/workspace/revisions",
        &[("Cookie", &session)],
        "",
    );
    assert_eq!(history.status, 200, "{}", history.body);
    let history: serde_json::Value = serde_json::from_str(&history.body).unwrap();
    assert_eq!(history[0]["author_kind"], "run_step", "{history}");
    assert_eq!(history[0]["changes"][0]["path"], "hello.txt", "{history}");
    assert!(server.terminate().success());
}

/// `args` followed by `more`, as the `&str`s `Server::start` takes.
fn arguments<'a>(args: &'a [String], more: &[&'a str]) -> Vec<&'a str> {
    args.iter()
        .map(String::as_str)
        .chain(more.iter().copied())
        .collect()
}

#[test]
fn g26_serve_with_its_own_certificate_serves_https_with_secure_cookies_needs_root() {
    let home = Home::new();
    let certificate = TestCertificate::write(home.dir.path(), 0o600);
    let tls_args = certificate.serve_args();
    let mut server = Server::start(
        &home,
        &arguments(&tls_args, &["--owner-email", "ada@example.test"]),
    );
    let address = server.https_address();
    let first_start = server.next_line();
    assert!(first_start.contains("ada@example.test"), "{first_start}");
    let link = server.next_line();
    let path = link
        .strip_prefix(&format!("https://{address}"))
        .unwrap_or_else(|| panic!("not an https link to this server: {link}"))
        .to_owned();

    let sign_in_page = send_tls(&certificate, address, "GET", "/signin", &[], "");
    assert_eq!(sign_in_page.status, 200, "{}", sign_in_page.body);
    assert_security_headers(&sign_in_page);
    assert_eq!(
        sign_in_page.header("strict-transport-security"),
        Some("max-age=31536000")
    );

    // The owner sets a password through the printed link; the form's cookie is already a
    // `Secure` `__Host-` cookie.
    let form = send_tls(&certificate, address, "GET", &path, &[], "");
    assert_eq!(form.status, 200, "{}", form.body);
    let form_cookie = form
        .set_cookie("__Host-stepward_form")
        .unwrap_or_else(|| panic!("no __Host- form cookie: {:?}", form.headers));
    assert!(form_cookie.contains("; Secure"), "{form_cookie}");
    let form_cookie = form_cookie.split(';').next().unwrap().to_owned();
    let password = "correct horse battery staple";
    let body = format!(
        "csrf={}&password={password}&password_again={password}",
        csrf_field(&form.body)
    )
    .replace(' ', "+");
    let welcomed = send_tls(
        &certificate,
        address,
        "POST",
        &path,
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

    let signed_in = send_tls(
        &certificate,
        address,
        "POST",
        "/api/signin",
        &[("Content-Type", "application/json")],
        &serde_json::json!({ "account": "local", "email": "ada@example.test", "password": password })
            .to_string(),
    );
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let session = signed_in
        .set_cookie("__Host-stepward_session")
        .unwrap_or_else(|| panic!("no __Host- session cookie: {:?}", signed_in.headers));
    for attribute in ["; Secure", "; HttpOnly", "; SameSite=Strict", "; Path=/"] {
        assert!(
            session.contains(attribute),
            "{attribute} missing: {session}"
        );
    }
    let session = session.split(';').next().unwrap().to_owned();
    let runs = send_tls(
        &certificate,
        address,
        "GET",
        "/api/runs",
        &[("Cookie", &session)],
        "",
    );
    assert_eq!(runs.status, 200, "{}", runs.body);

    // Plain HTTP to the HTTPS port gets no HTTP answer.
    let mut plain = connect(address);
    plain
        .write_all(request_text(address, "GET", "/signin", &[], "").as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    // A reset closes the connection as well as an end of stream does.
    let _ = plain.read_to_end(&mut raw);
    assert!(
        !raw.windows(5).any(|window| window == b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );

    let status = server.terminate();
    assert!(status.success(), "the server exited with {status}");
}

#[test]
fn g26_serve_refuses_a_tls_key_others_may_read_and_tls_behind_tls_needs_root() {
    let home = Home::new();
    let certificate = TestCertificate::write(home.dir.path(), 0o644);
    let tls_args = certificate.serve_args();

    let mut readable = Server::start(&home, &arguments(&tls_args, &[]));
    let status = readable.exit_within_a_minute();
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(2),
        "{:?}",
        readable.rest_of_output()
    );
    let message = readable.stderr();
    assert!(
        message.contains("chmod 600")
            && message.contains(&certificate.key_path.display().to_string()),
        "{message}"
    );
    assert!(
        !readable
            .rest_of_output()
            .iter()
            .any(|line| line.contains("stepward serves")),
        "it listened"
    );

    std::fs::set_permissions(
        &certificate.key_path,
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let mut both = Server::start(&home, &arguments(&tls_args, &["--behind-tls"]));
    let status = both.exit_within_a_minute();
    assert_eq!(status.and_then(|status| status.code()), Some(2));
    let message = both.stderr();
    assert!(
        message.contains("--behind-tls and --tls-cert cannot be used together"),
        "{message}"
    );
    let mut half = Server::start(
        &home,
        &["--tls-cert", &certificate.cert_path.display().to_string()],
    );
    assert_eq!(
        half.exit_within_a_minute().and_then(|status| status.code()),
        Some(2)
    );
    assert!(half.stderr().contains("--tls-key"), "{}", half.stderr());

    // The refused starts set nothing up: the first start that serves still invites the owner.
    let mut server = Server::start(&home, &arguments(&tls_args, &[]));
    server.https_address();
    let first_start = server.next_line();
    assert!(first_start.starts_with("first start"), "{first_start}");
    assert!(server.terminate().success());
}

/// A client that sent one byte holds a graceful shutdown until the header-read deadline; a
/// second SIGTERM (or SIGINT) ends the process at once instead of being ignored.
#[test]
fn serve_stops_at_once_on_a_second_signal_needs_root() {
    let home = Home::new();
    let mut server = Server::start(&home, &[]);
    let address = server.address();
    let mut stalled = connect(address);
    stalled.write_all(b"G").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server.signal("-TERM");
    // Still draining: the stalled client is within the header-read deadline (15 s).
    assert_eq!(
        server.exit_within(Duration::from_secs(1)),
        None,
        "the server did not wait for the stalled client: {}",
        server.stderr()
    );
    server.signal("-TERM");
    let status = server
        .exit_within(Duration::from_secs(5))
        .unwrap_or_else(|| panic!("a second SIGTERM did not stop the server at once"));
    assert_eq!(status.code(), Some(130), "{}", server.stderr());
    assert!(
        server.stderr().contains("second signal"),
        "{}",
        server.stderr()
    );
    drop(stalled);
}

/// G25: whatever the server answered as done survives a SIGKILL: the file written as a
/// revision, the API key created, the run it finished and the audit chain.
#[test]
fn g25_a_killed_server_loses_nothing_it_acknowledged_needs_root() {
    let home = Home::new();
    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let (address, session, csrf) = server.first_owner_session();
    let write = |method: &str, route: &str, body: &str| {
        send(
            address,
            method,
            route,
            &[
                ("Cookie", &session),
                ("X-CSRF-Token", &csrf),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    };
    let revision = write(
        "POST",
        "/api/workspace/revisions",
        r#"{"message":"before the crash","changes":[{"path":"kept.txt","action":"write","content":"acknowledged"}]}"#,
    );
    assert_eq!(revision.status, 201, "{}", revision.body);
    let key = write("POST", "/api/keys", r#"{"name":"ci","role":"viewer"}"#);
    assert_eq!(key.status, 201, "{}", key.body);
    let key_id = serde_json::from_str::<serde_json::Value>(&key.body).unwrap()["key_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let run = write(
        "POST",
        "/api/runs",
        r#"{"workflow":"word_count","inputs":{"text":"a b a","top":1}}"#,
    );
    assert_eq!(run.status, 202, "{}", run.body);
    let run = serde_json::from_str::<serde_json::Value>(&run.body).unwrap();
    let run = crate::http::until_settled(
        address,
        &[("Cookie", &session)],
        run["run"].as_str().unwrap(),
    );
    assert_eq!(run["status"], "succeeded", "{run}");
    let run_id = run["run"].as_str().unwrap().to_owned();

    // Killed (SIGKILL, by its own pid) with no chance to flush anything.
    server.child.kill().unwrap();
    let _ = server.child.wait();

    let mut again = Server::start(&home, &[]);
    let address = again.address();
    let signed_in = send(
        address,
        "POST",
        "/api/signin",
        &[("Content-Type", "application/json")],
        r#"{"account":"local","email":"ada@example.test","password":"correct horse battery staple"}"#,
    );
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let session = signed_in.cookie("stepward_session").expect("a session");
    let file = send(
        address,
        "GET",
        "/api/workspace/file?path=kept.txt",
        &[("Cookie", &session)],
        "",
    );
    assert_eq!(file.status, 200, "{}", file.body);
    assert!(file.body.contains("acknowledged"), "{}", file.body);
    let keys = send(address, "GET", "/api/keys", &[("Cookie", &session)], "");
    assert!(keys.body.contains(&key_id), "{}", keys.body);
    let run = send(
        address,
        "GET",
        &format!("/api/runs/{run_id}"),
        &[("Cookie", &session)],
        "",
    );
    assert!(run.body.contains("\"succeeded\""), "{}", run.body);
    drop(again);
    let verified = home.stepward(&["audit", "verify"]);
    assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));
}
