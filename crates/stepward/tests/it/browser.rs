//! The console in a real browser (G23, G27): headless Chromium, driven through chromedriver
//! over the W3C WebDriver JSON protocol, signs in with the link `stepward serve` printed, opens
//! an example workflow and reads its reach panel, starts a run with the console's form,
//! approves the parked gate with a note from the run page, and sees the decision there.
//!
//! Everything talks over loopback only: the browser to the server, this test to chromedriver
//! and (for one cross-check) to the server's JSON API, with a tiny HTTP/1.1 client. The server,
//! chromedriver and Chromium are stopped by their pids when the test ends, also on failure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Home, repo_root, stderr};

#[path = "browser_interview.rs"]
mod interview;
#[path = "browser_live.rs"]
mod live;

const SIGNING_KEY: &str = "sk-signing-browser-4e1d7a2c9b";
pub(crate) const PASSWORD: &str = "correct horse battery staple";
const NOTE: &str = "totals checked in the browser";
const REACH_CAPTION: &str =
    "This is what each step is permitted to reach, not a review of what its code does.";
const MONTH: &str = "2026-11";
const LINES: &str = r#"[{"customer":"acme","cents":1250},{"customer":"bolt","cents":990}]"#;
/// The W3C name of an element reference in a WebDriver answer.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a step of the flow may take; a run's sandboxes start within it even on a busy
/// machine.
const PATIENCE: Duration = Duration::from_secs(180);

/// An HTTP/1.1 answer: status and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
    /// The `Content-Type` header, when there is one.
    pub(crate) content_type: Option<String>,
}

/// One request over a fresh loopback connection (`Connection: close`), read to the end.
pub(crate) fn http(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Answer> {
    assert!(address.ip().is_loopback(), "tests only talk to loopback");
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(PATIENCE))?;
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
    stream.write_all(request.as_bytes())?;
    // chromedriver keeps a connection open after its answer, `Connection: close` or not, so
    // the answer is read by its length (or its chunks), not to the end of the stream.
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.clone())
    };
    let mut raw = Vec::new();
    if let Some(length) = header("content-length").and_then(|length| length.parse().ok()) {
        raw.resize(length, 0);
        reader.read_exact(&mut raw)?;
    } else if header("transfer-encoding").is_some_and(|value| value.contains("chunked")) {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line)?;
            let size_text = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            if size == 0 {
                break;
            }
            reader.read_exact(&mut chunk)?;
            raw.extend_from_slice(&chunk[..size]);
        }
    } else {
        reader.read_to_end(&mut raw)?;
    }
    Ok(Answer {
        status,
        body: String::from_utf8_lossy(&raw).into_owned(),
        content_type: header("content-type"),
    })
}

/// Sends SIGKILL to `pid`, which this test started (directly or through chromedriver).
fn kill_pid(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// A child process whose stdout lines arrive on a channel, killed by its pid when dropped.
pub(crate) struct Process {
    child: Child,
    lines: Receiver<String>,
    printed: Vec<String>,
}

impl Process {
    fn spawn(command: &mut Command) -> Process {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the process starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Process {
            child,
            lines,
            printed: Vec::new(),
        }
    }

    /// The first printed line that contains `marker`, waiting at most [`PATIENCE`].
    fn line_containing(&mut self, marker: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no line with {marker:?} was printed; so far: {:?}",
                    self.printed
                )
            });
            self.printed.push(line.clone());
            if line.contains(marker) {
                return line;
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            kill_pid(self.child.id());
            let _ = self.child.wait();
        }
    }
}

/// A WebDriver session of headless Chromium through chromedriver. Dropping it ends the
/// session, kills Chromium (its pid read from the profile's lock) and chromedriver by pid, and
/// then removes the profile folder.
pub(crate) struct Browser {
    driver: Option<Process>,
    driver_address: SocketAddr,
    session: Option<String>,
    profile: Option<tempfile::TempDir>,
}

impl Browser {
    pub(crate) fn start() -> Browser {
        let profile = tempfile::tempdir().expect("a profile folder");
        let driver_log = profile.path().join("chromedriver.log");
        let mut driver = Process::spawn(
            Command::new("chromedriver")
                .arg("--port=0")
                .arg(format!("--log-path={}", driver_log.display()))
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", profile.path())
                // Chromium and chromedriver make their scoped folders under TMPDIR: inside
                // the profile, they go with it.
                .env("TMPDIR", profile.path())
                // A time zone that is not UTC, so a page that shows the viewer's own is seen
                // to (issue 42, point 3).
                .env("TZ", "Asia/Tokyo"),
        );
        let line = driver.line_containing("started successfully on port");
        let port: u16 = line
            .trim_end_matches('.')
            .rsplit(' ')
            .next()
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let mut browser = Browser {
            driver: Some(driver),
            driver_address: SocketAddr::from(([127, 0, 0, 1], port)),
            session: None,
            profile: None,
        };
        let user_data_dir = profile.path().join("chromium");
        browser.profile = Some(profile);
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "pageLoadStrategy": "normal",
                "timeouts": { "pageLoad": 300_000, "script": 30_000, "implicit": 0 },
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": [
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-quic",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        // A container's /dev/shm is often too small for Chromium.
                        "--disable-dev-shm-usage",
                        format!("--user-data-dir={}", user_data_dir.display()),
                    ],
                },
            }},
        });
        let created = browser.command("POST", "/session", Some(capabilities));
        let session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_owned();
        browser.session = Some(session);
        browser
    }

    fn user_data_dir(&self) -> Option<PathBuf> {
        self.profile
            .as_ref()
            .map(|profile| profile.path().join("chromium"))
    }

    /// One WebDriver command; its `value`, or the driver's error.
    fn try_command(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let body_text = body.map(|body| body.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if body_text.is_empty() {
            &[]
        } else {
            &[("Content-Type", "application/json; charset=utf-8")]
        };
        let answer = http(self.driver_address, method, path, headers, &body_text)
            .map_err(|error| format!("chromedriver did not answer {method} {path}: {error}"))?;
        let parsed: Value = serde_json::from_str(&answer.body).map_err(|error| {
            format!(
                "chromedriver answered {method} {path} with no JSON ({error}): {}",
                answer.body
            )
        })?;
        if answer.status != 200 {
            return Err(format!(
                "chromedriver refused {method} {path} ({}): {parsed}",
                answer.status
            ));
        }
        Ok(parsed["value"].clone())
    }

    /// One WebDriver command; its `value`, or a panic with the driver's error.
    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_command(method, path, body)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    fn session_path(&self, rest: &str) -> String {
        format!(
            "/session/{}{rest}",
            self.session.as_deref().expect("a live session")
        )
    }

    pub(crate) fn open(&self, url: &str) {
        self.command(
            "POST",
            &self.session_path("/url"),
            Some(json!({ "url": url })),
        );
    }

    pub(crate) fn current_url(&self) -> String {
        self.command("GET", &self.session_path("/url"), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub(crate) fn page_source(&self) -> String {
        self.command("GET", &self.session_path("/source"), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The elements `css` selects in the current page.
    pub(crate) fn find_all(&self, css: &str) -> Vec<String> {
        let found = self.command(
            "POST",
            &self.session_path("/elements"),
            Some(json!({ "using": "css selector", "value": css })),
        );
        found
            .as_array()
            .map(|elements| {
                elements
                    .iter()
                    .filter_map(|element| element[ELEMENT_KEY].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The one element `css` selects; a panic with the page when there is none.
    pub(crate) fn find(&self, css: &str) -> String {
        self.find_all(css).into_iter().next().unwrap_or_else(|| {
            panic!(
                "nothing matches {css:?} on {}:\n{}",
                self.current_url(),
                self.page_source()
            )
        })
    }

    pub(crate) fn text(&self, element: &str) -> String {
        self.command(
            "GET",
            &self.session_path(&format!("/element/{element}/text")),
            None,
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    pub(crate) fn type_into(&self, element: &str, text: &str) {
        self.command(
            "POST",
            &self.session_path(&format!("/element/{element}/clear")),
            Some(json!({})),
        );
        self.command(
            "POST",
            &self.session_path(&format!("/element/{element}/value")),
            Some(json!({ "text": text })),
        );
    }

    /// Runs `script` in the page (WebDriver's execution is not subject to the page's CSP) and
    /// answers what it returned.
    pub(crate) fn execute(&self, script: &str) -> Value {
        self.command(
            "POST",
            &self.session_path("/execute/sync"),
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// Runs `script`, whose last argument is the callback it answers through.
    fn execute_async(&self, script: &str) -> Value {
        self.command(
            "POST",
            &self.session_path("/execute/async"),
            Some(json!({ "script": script, "args": [] })),
        )
    }

    fn set_size(&self, width: u32, height: u32) {
        self.command(
            "POST",
            &self.session_path("/window/rect"),
            Some(json!({ "width": width, "height": height })),
        );
    }

    /// A PNG of the page as shown.
    fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let encoded = self.command("GET", &self.session_path("/screenshot"), None);
        base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_default())
            .unwrap()
    }

    pub(crate) fn click(&self, element: &str) {
        self.command(
            "POST",
            &self.session_path(&format!("/element/{element}/click")),
            Some(json!({})),
        );
    }

    /// The current page's address and source, or `None` while the browser cannot tell (in the
    /// middle of a navigation).
    fn try_page(&self) -> Option<(String, String)> {
        let url = self
            .try_command("GET", &self.session_path("/url"), None)
            .ok()?;
        let source = self
            .try_command("GET", &self.session_path("/source"), None)
            .ok()?;
        Some((url.as_str()?.to_owned(), source.as_str()?.to_owned()))
    }

    /// Waits until `ready` holds for the current page's address and source; a form post may
    /// still be navigating, and a run's sandboxes take a while on a busy machine.
    /// Opens a one-time sign-in link (`url`), sets [`PASSWORD`], and waits for the home page
    /// it signs in to, which names the person as `signed_in_as` (`ada (owner)`).
    pub(crate) fn sign_in_with_link(&self, url: &str, signed_in_as: &str) {
        self.open(url);
        self.type_into(&self.find("input[name=password]"), PASSWORD);
        self.type_into(&self.find("input[name=password_again]"), PASSWORD);
        self.click(&self.find("button[type=submit]"));
        let expected = format!("Signed in as {signed_in_as}");
        self.wait_for("the signed-in home page", |_, source| {
            source.contains(&expected)
        });
    }

    pub(crate) fn wait_for(&self, what: &str, ready: impl Fn(&str, &str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let page = self.try_page();
            if let Some((url, source)) = &page
                && ready(url, source)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "waited in vain for {what}; the page: {page:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The value of the cookie `name` the browser holds for the current page.
    pub(crate) fn cookie(&self, name: &str) -> String {
        let cookie = self.command("GET", &self.session_path(&format!("/cookie/{name}")), None);
        cookie["value"]
            .as_str()
            .unwrap_or_else(|| panic!("no cookie {name}: {cookie}"))
            .to_owned()
    }
}

/// The pid in a Chromium profile's `SingletonLock` (a symlink to `<host>-<pid>`), if that
/// process still runs with this profile, so only our own browser is ever killed.
fn chromium_pid(user_data_dir: &Path) -> Option<u32> {
    let target = std::fs::read_link(user_data_dir.join("SingletonLock")).ok()?;
    let pid: u32 = target.to_str()?.rsplit('-').next()?.parse().ok()?;
    let command_line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let ours = format!("--user-data-dir={}", user_data_dir.display());
    command_line
        .split(|byte| *byte == 0)
        .any(|argument| argument == ours.as_bytes())
        .then_some(pid)
}

impl Drop for Browser {
    fn drop(&mut self) {
        let chromium = self.user_data_dir().and_then(|dir| chromium_pid(&dir));
        if let Some(session) = self.session.take() {
            // Ending the session closes Chromium; the kills below cover a driver that hangs.
            let _ = http(
                self.driver_address,
                "DELETE",
                &format!("/session/{session}"),
                &[],
                "",
            );
        }
        if let Some(pid) = chromium
            && let Some(dir) = self.user_data_dir()
            && chromium_pid(&dir) == Some(pid)
        {
            kill_pid(pid);
        }
        // Stops chromedriver by its pid, then removes the profile folder.
        self.driver.take();
        self.profile.take();
    }
}

/// Starts `stepward serve` on a free loopback port over `home`; its address and the path of
/// the owner's one-time sign-in link.
pub(crate) fn start_server(home: &Home) -> (Process, SocketAddr, String) {
    start_server_with(home, &[])
}

/// As [`start_server`], with these flags too.
pub(crate) fn start_server_with(home: &Home, extra: &[&str]) -> (Process, SocketAddr, String) {
    let stderr_file = home.dir.path().join("serve-stderr.txt");
    let mut server = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_stepward"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(["--owner-email", "ada@example.test"])
            .arg("--data-dir")
            .arg(home.data_dir())
            .arg("--sandbox-state-dir")
            .arg(home.dir.path().join("sandbox"))
            .args(extra)
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", home.dir.path().join("config"))
            .stderr(std::fs::File::create(&stderr_file).expect("a file for stderr")),
    );
    let serving = server.line_containing("stepward serves http://");
    let address: SocketAddr = serving
        .trim_start_matches("stepward serves http://")
        .split(' ')
        .next()
        .and_then(|address| address.parse().ok())
        .unwrap_or_else(|| panic!("no address in {serving:?}"));
    let link = server.line_containing("/welcome/");
    let path = link
        .strip_prefix(&format!("http://{address}"))
        .unwrap_or_else(|| panic!("not a link to this server: {link}"))
        .to_owned();
    (server, address, path)
}

/// The widths a page is looked at: a laptop's and a phone's.
const WIDTHS: &[(&str, u32, u32)] = &[("laptop", 1280, 900), ("phone", 390, 844)];

/// Where the screenshots go (printed, so a person can open them).
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Looks at the page shown as a person would at each width: a screenshot of it, no sideways
/// scrolling on a phone, and no accessibility violation of impact `serious` or `critical`
/// (axe-core, run in the same browser).
pub(crate) fn look_at(browser: &Browser, name: &str) {
    let axe_path =
        repo_root().join("crates/stepward/tests/browser/node_modules/axe-core/axe.min.js");
    let axe = std::fs::read_to_string(&axe_path).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; scripts/setup installs axe-core (npm ci in crates/stepward/tests/browser)",
            axe_path.display()
        )
    });
    for &(width_name, width, height) in WIDTHS {
        browser.set_size(width, height);
        let path = screenshot_dir().join(format!("{name}-{width_name}.png"));
        std::fs::write(&path, browser.screenshot()).unwrap();
        println!("screenshot: {}", path.display());
        // README's images are these screenshots: `STEPWARD_WRITE_SCREENSHOTS=1` puts the
        // laptop's of the run, workflow, approve and home pages there.
        if width_name == "laptop"
            && matches!(name, "run" | "workflow" | "approve" | "home")
            && std::env::var_os("STEPWARD_WRITE_SCREENSHOTS").is_some()
        {
            let readme_image = repo_root().join(format!("docs/images/{name}-page.png"));
            std::fs::copy(&path, &readme_image).unwrap();
            println!("README image: {}", readme_image.display());
        }
        let overflow = browser.execute(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
        );
        assert!(
            overflow.as_i64().unwrap_or(0) <= 1,
            "{name} scrolls sideways by {overflow} px at {width} px wide ({})",
            path.display()
        );
        // A list keeps its columns (issue 42, point 9): no cell with a word in it is squeezed
        // narrower than a few letters, which is where text wraps letter by letter.
        let squeezed = browser.execute(
            "return [...document.querySelectorAll('td, th')]
               .filter(cell => cell.textContent.trim().length > 3)
               .filter(cell => cell.getBoundingClientRect().width < 40)
               .map(cell => cell.textContent.trim().slice(0, 40));",
        );
        assert_eq!(
            squeezed,
            json!([]),
            "{name} at {width} px squeezes these cells ({})",
            path.display()
        );
        browser.execute(&format!("{axe}\nreturn true;"));
        let violations = browser.execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, { resultTypes: ['violations'] }).then(result => done(
               result.violations
                 .filter(v => v.impact === 'serious' || v.impact === 'critical')
                 .map(v => v.impact + ' ' + v.id + ': ' + v.help + ' at ' +
                      v.nodes.map(n => n.target.join(' ')).join(', '))
             )).catch(error => done(['axe failed: ' + error]));",
        );
        assert_eq!(
            violations,
            json!([]),
            "{name} at {width} px has accessibility violations"
        );
    }
    browser.set_size(WIDTHS[0].1, WIDTHS[0].2);
}

#[test]
fn g23_console_in_a_real_browser_approves_a_gate_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        &format!("{SIGNING_KEY}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    // Nothing is put into the account's folder: the first start brings the examples.
    let (server, address, sign_in_path) = start_server(&home);
    assert_eq!(
        std::fs::read(
            home.data_dir()
                .join("accounts/local/workspace/workflows/monthly_invoices.yaml")
        )
        .unwrap(),
        std::fs::read(repo_root().join("examples/workflows/monthly_invoices.yaml")).unwrap()
    );
    let base = format!("http://{address}");
    let browser = Browser::start();

    // The one-time link: set a password, which signs the owner in.
    browser.sign_in_with_link(&format!("{base}{sign_in_path}"), "ada (owner)");

    // The workflows list links to the example; its page shows the reach panel (G27).
    browser.open(&format!("{base}/workflows"));
    browser.click(&browser.find("a[href='/workflows/monthly_invoices']"));
    browser.wait_for("the workflow page", |url, source| {
        url == format!("{base}/workflows/monthly_invoices") && source.contains("id=\"reach\"")
    });
    let caption = browser.text(&browser.find("#reach > p"));
    assert_eq!(caption, REACH_CAPTION);
    let rows: Vec<Vec<String>> = browser
        .find_all("#reach tr")
        .iter()
        .skip(1)
        .map(|row| {
            browser
                .command(
                    "POST",
                    &browser.session_path(&format!("/element/{row}/elements")),
                    Some(json!({ "using": "css selector", "value": "td" })),
                )
                .as_array()
                .unwrap()
                .iter()
                .map(|cell| browser.text(cell[ELEMENT_KEY].as_str().unwrap()))
                .collect()
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![
                "total".to_owned(),
                "no".to_owned(),
                "none".to_owned(),
                "none".to_owned()
            ],
            vec![
                "file_summary".to_owned(),
                "no".to_owned(),
                "signing".to_owned(),
                "none".to_owned()
            ],
        ],
        "a row for every step that runs code"
    );

    look_at(&browser, "workflow");

    // The console's start form, one field per declared input: a JSON field that is not JSON
    // answers the page again with the error beside it and what was typed kept.
    browser.type_into(&browser.find("input[name='input.month']"), MONTH);
    browser.type_into(&browser.find("textarea[name='input.lines']"), "[not json");
    browser.click(&browser.find("form[action='/runs'] button[type=submit]"));
    browser.wait_for("the form with its error", |_, source| {
        source.contains("id=\"error-lines\"")
    });
    assert!(
        browser
            .text(&browser.find("#error-lines"))
            .starts_with("This is not JSON"),
        "the error is beside its field"
    );
    assert_eq!(
        browser.execute("return document.querySelector(\"input[name='input.month']\").value;"),
        json!(MONTH),
        "nothing typed is lost on an error"
    );
    // Then the run, until it parks at the gate.
    browser.type_into(&browser.find("textarea[name='input.lines']"), LINES);
    browser.click(&browser.find("form[action='/runs'] button[type=submit]"));
    browser.wait_for("the new run's page", |url, source| {
        url.starts_with(&format!("{base}/runs/run_")) && source.contains("<h2>Timeline</h2>")
    });
    let run_url = browser.current_url();
    let run_id = run_url
        .trim_start_matches(&format!("{base}/runs/"))
        .to_owned();
    // The form answered at once (issue 38); the server's worker parks the run meanwhile.
    let deadline = Instant::now() + PATIENCE;
    while browser.text(&browser.find("#run-status")) != "waiting for approval" {
        assert!(Instant::now() < deadline, "the run never parked");
        std::thread::sleep(Duration::from_millis(100));
        browser.open(&run_url);
    }
    assert_eq!(
        browser.text(&browser.find("#gate-title")),
        "Waiting for a decision on file_summary"
    );
    let gate = browser.text(&browser.find("#gate"));
    for seen in [
        REACH_CAPTION,
        "signing",
        "month (the run's input month)\n2026-11",
        "totals (what the step total produced)",
    ] {
        assert!(gate.contains(seen), "the gate shows {seen:?}: {gate}");
    }
    assert!(!browser.page_source().contains(SIGNING_KEY));
    // The run's header leads with its workflow and its number (issue 42, point 3).
    assert_eq!(
        browser.text(&browser.find("main h1")),
        "monthly_invoices #1"
    );
    look_at(&browser, "run-waiting");

    // The approve link opens a page that says what is approved beside its buttons (issue 42,
    // point 1): the explanation, who started the run and when, the pinned version, the reach
    // row and each input with where it comes from.
    // The link reads whole, with a copy button the console's script shows (issue 42, point 6).
    let link =
        browser.execute("return document.getElementById('approve-link').getAttribute('href');");
    let link = link.as_str().unwrap().to_owned();
    assert!(link.starts_with(&format!("{base}/approve/")), "{link}");
    assert_eq!(
        browser.execute("return document.querySelector('#gate button.copy').hidden;"),
        json!(false),
        "the copy button shows where the script runs"
    );
    browser.open(&link);
    browser.wait_for("the approve page", |_, source| {
        source.contains("id=\"gate-started\"")
    });
    for (element, seen) in [
        (
            "#gate-explain",
            "Writes the month's summary to reports/MONTH.txt",
        ),
        ("main h1", "of monthly_invoices #1"),
        ("#gate-started", "ada started the run"),
        (
            "#gate-pinned",
            "version 1 of workflows/monthly_invoices.yaml",
        ),
        ("#gate-reach", "signing"),
        ("#gate-inputs", "month (the run's input month)\n2026-11"),
        ("#gate-inputs", "totals (what the step total produced)"),
    ] {
        let text = browser.text(&browser.find(element));
        assert!(text.contains(seen), "{element} shows {seen:?}: {text}");
    }
    assert!(
        browser
            .find_all("button[name=decision][value=approve]")
            .len()
            == 1
    );
    assert!(!browser.page_source().contains(SIGNING_KEY));
    look_at(&browser, "approve");

    // The home page leads with what needs me, then recent runs (issue 42, point 3).
    browser.open(&format!("{base}/"));
    browser.wait_for("the home page", |_, source| {
        source.contains("id=\"home-recent\"")
    });
    assert!(
        browser
            .text(&browser.find("#home-waiting-section"))
            .contains("monthly_invoices #1 waits for a decision at file_summary"),
        "the gate waiting for me leads"
    );
    assert!(
        browser
            .text(&browser.find("#home-recent-section"))
            .contains("monthly_invoices #1, started by ada"),
        "the recent runs lead to the run"
    );
    look_at(&browser, "home");
    browser.open(&run_url);

    // Approve with a note from the run page.
    browser.type_into(&browser.find("textarea[name=note]"), NOTE);
    browser.click(&browser.find("button[name=decision][value=approve]"));
    browser.wait_for("the run page after the decision", |url, source| {
        url == run_url && source.contains("id=\"run-status\">succeeded<")
    });
    let timeline = browser.text(&browser.find("ol.timeline"));
    assert!(
        timeline.contains(&format!(
            "ada approved “file_summary” from the console: “{NOTE}”"
        )),
        "the timeline in words: {timeline}"
    );
    look_at(&browser, "run");
    let decisions: Vec<String> = browser
        .find_all("li")
        .iter()
        .map(|item| browser.text(item))
        .filter(|text| text.starts_with("approve "))
        .collect();
    assert_eq!(
        decisions,
        vec![format!(
            "approve file_summary by ada through the console: {NOTE}"
        )],
        "the decision with who, door and note"
    );
    assert!(
        browser.find_all("textarea[name=note]").is_empty(),
        "a decided gate offers no second decision"
    );

    // The JSON API, with the browser's session, records the same decision.
    let session = format!("stepward_session={}", browser.cookie("stepward_session"));
    let answer = http(
        address,
        "GET",
        &format!("/api/runs/{run_id}"),
        &[("Cookie", &session)],
        "",
    )
    .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    let detail: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(detail["status"], "succeeded", "{detail}");
    let decision = &detail["decisions"][0];
    assert_eq!(decision["door"], "console", "{detail}");
    assert_eq!(decision["actor_kind"], "person", "{detail}");
    assert_eq!(decision["note"], NOTE, "{detail}");
    assert!(
        !answer.body.contains(SIGNING_KEY),
        "the connection's value never reaches the record"
    );

    // The runs list: the run, newest first, with its status in words.
    browser.open(&format!("{base}/runs"));
    browser.wait_for("the runs list", |_, source| {
        source.contains("<h1>Runs</h1>")
    });
    // The workflow's name leads; the status, how long it took, who started it (issue 42,
    // point 3).
    let row = browser.text(&browser.find("tbody tr"));
    assert!(
        row.starts_with(&format!("monthly_invoices #1\n{run_id} succeeded"))
            && row.contains(" ada "),
        "{row}"
    );
    look_at(&browser, "runs");
    browser.open(&format!("{base}/approvals"));
    browser.wait_for("the approvals", |_, source| {
        source.contains("Nothing is waiting for a decision.")
    });
    look_at(&browser, "approvals");

    // The gate's step filed the summary: the account's files show it, written by the run.
    browser.open(&format!("{base}/files"));
    browser.wait_for("the files page", |_, source| {
        source.contains("<h1>Files</h1>")
    });
    let files = browser.page_source();
    assert!(files.contains("reports/2026-11.txt"), "{files}");
    assert!(
        files.contains(&format!("by run step {run_id}/file_summary/1")),
        "the revision's author is the run's step: {files}"
    );

    // Every action is in the audit log: the sign-in, the start, the decision.
    browser.open(&format!("{base}/audit"));
    browser.wait_for("the audit log", |_, source| {
        source.contains("<h1>Audit log</h1>")
    });
    // One sentence per entry (issue 42, point 7), the action's name in its folded details.
    let sentences: Vec<String> = browser
        .find_all("td.audit-entry .sentence")
        .iter()
        .map(|cell| browser.text(cell))
        .collect();
    for sentence in [
        "ada signed in",
        "ada started a run of monthly_invoices",
        "ada approved file_summary",
    ] {
        assert!(
            sentences.iter().any(|seen| seen == sentence),
            "{sentence:?} in {sentences:?}"
        );
    }
    let actions = browser.execute(
        "return [...document.querySelectorAll('dd.action')].map(cell => cell.textContent);",
    );
    for action in ["session.sign_in", "run.start", "run.approve"] {
        assert!(
            actions
                .as_array()
                .unwrap()
                .iter()
                .any(|seen| seen == action),
            "{action} in {actions}"
        );
    }
    look_at(&browser, "audit");
    assert!(!browser.page_source().contains(SIGNING_KEY));

    drop(browser);
    drop(server);
}
