//! G14 for agent steps, with a real SIGKILL: the platform is killed while a networked custom
//! tool runs, after its script sent one request to a listener in a test "internet" namespace
//! (203.0.113.1, DESIGN §7). After restart the step is `unknown`, the run needs a person, and
//! the listener counted exactly one request, also after the recovery sweep ran again and the
//! engine was asked to go on. Needs root (network namespaces).
//!
//! Everything runs in namespaces this test makes: the platform, its fake model and the tool's
//! script in a "host" namespace (loopback and a veth), the listener in the "internet" one.
//! No packet leaves them. Both namespaces and every process are removed on drop, also on
//! failure, and a namespace a killed test left behind is swept at the next start.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::agents::put;
use crate::support::{Home, repo_root, stderr, stdout};

const PREFIX: &str = "swk";
const INTERNET: &str = "203.0.113.1";
const HOST_SIDE: &str = "203.0.113.254";
const MODEL_PORT: u16 = 18081;

const AGENT: &str = r#"---
name: notifier
description: Tells the tracker.
model: fake/fake-large
tools: [notify]
network: public_egress
custom_tools:
  notify:
    explain: Tells the tracker, once.
    script: tools/notify.py
---
You notify.
"#;

/// Sends one request, says so, then holds the call open until the platform is killed.
const TOOL: &str = r#"import time, urllib.request

def main(**arguments):
    urllib.request.urlopen("http://203.0.113.1:8080/notify", timeout=5).read()
    time.sleep(60)
    return "sent"
"#;

const WORKFLOW: &str = "name: notify\npython: \"3.11\"\nsteps:\n  - id: notify!\n    agent: notifier\n    task: Tell the tracker.\n";

const QUIET: &str = "name: quiet\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n";

const LISTENER: &str = r#"import http.server, sys
log, ready = sys.argv[1], sys.argv[2]
class Count(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("203.0.113.1", 8080), Count)
open(ready, "w").write("ready")
server.timeout = 1
import time
deadline = time.time() + 300
while time.time() < deadline:
    server.handle_request()
"#;

fn ip(args: &[&str]) {
    let status = Command::new("/usr/sbin/ip")
        .args(args)
        .status()
        .or_else(|_| Command::new("/sbin/ip").args(args).status())
        .unwrap();
    assert!(status.success(), "ip {}", args.join(" "));
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces of this test whose process is gone.
fn sweep() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.parse::<u32>().is_ok_and(|pid| !pid_alive(pid)) {
            let _ = Command::new("/usr/sbin/ip")
                .args(["netns", "del", &name])
                .status();
        }
    }
}

/// The two namespaces and the processes in them; removed on drop.
struct Nets {
    host: String,
    internet: String,
    children: Vec<Child>,
}

impl Nets {
    fn new() -> Nets {
        sweep();
        let pid = std::process::id();
        let nets = Nets {
            host: format!("{PREFIX}{pid}h"),
            internet: format!("{PREFIX}{pid}i"),
            children: Vec::new(),
        };
        ip(&["netns", "add", &nets.host]);
        ip(&["netns", "add", &nets.internet]);
        let (host_link, internet_link) = (format!("vk{pid}h"), format!("vk{pid}i"));
        ip(&[
            "-n",
            &nets.host,
            "link",
            "add",
            &host_link,
            "type",
            "veth",
            "peer",
            "name",
            &internet_link,
            "netns",
            &nets.internet,
        ]);
        ip(&[
            "-n",
            &nets.host,
            "addr",
            "add",
            &format!("{HOST_SIDE}/24"),
            "dev",
            &host_link,
        ]);
        ip(&[
            "-n",
            &nets.internet,
            "addr",
            "add",
            &format!("{INTERNET}/24"),
            "dev",
            &internet_link,
        ]);
        for (ns, link) in [(&nets.host, &host_link), (&nets.internet, &internet_link)] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", link, "up"]);
        }
        nets
    }

    /// `ip netns exec NS PROGRAM ARGS`: `ip` execs the program, so the child's pid is its.
    fn command(&self, ns: &str, program: &Path) -> Command {
        let mut command = Command::new("/usr/sbin/ip");
        command.args(["netns", "exec", ns]).arg(program);
        command
    }
}

impl Drop for Nets {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in [&self.host, &self.internet] {
            let _ = Command::new("/usr/sbin/ip")
                .args(["netns", "del", ns])
                .status();
        }
    }
}

fn wait_for(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn requests(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn platform(home: &Home, nets: &Nets, args: &[&str]) -> Command {
    let mut command = nets.command(&nets.host, Path::new(env!("CARGO_BIN_EXE_stepward")));
    command
        .args(args)
        .arg("--data-dir")
        .arg(home.data_dir())
        .arg("--sandbox-state-dir")
        .arg(home.dir.path().join("sandbox"))
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("XDG_CONFIG_HOME", home.dir.path().join("config"));
    command
}

#[test]
fn g14_a_platform_killed_mid_networked_tool_never_runs_the_tool_twice_needs_root() {
    let mut nets = Nets::new();
    let home = Home::new();
    let scratch: PathBuf = home.dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    // The listener, in the test internet.
    let (log, ready) = (scratch.join("requests.log"), scratch.join("ready"));
    std::fs::write(scratch.join("listener.py"), LISTENER).unwrap();
    let listener = nets
        .command(&nets.internet, Path::new("/usr/bin/python3"))
        .arg(scratch.join("listener.py"))
        .arg(&log)
        .arg(&ready)
        .spawn()
        .unwrap();
    nets.children.push(listener);
    wait_for("the listener", 20, || ready.exists());
    // The fake model, in the platform's namespace: one call of the networked tool.
    let script = scratch.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"tool_calls": [{"name": "notify", "arguments": {}}]}, {"text": "told"}]}"#,
    )
    .unwrap();
    let listen = format!("127.0.0.1:{MODEL_PORT}");
    let fake = nets
        .command(&nets.host, Path::new(env!("CARGO_BIN_EXE_stepward")))
        .args(["dev", "fake-model", "--listen", &listen, "--script"])
        .arg(&script)
        .env_clear()
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    nets.children.push(fake);
    let url = format!("http://{listen}");
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--allow-model-endpoint",
            &listen,
        ],
        "sk-kill-test-model-key-000111",
    );
    assert!(added.status.success(), "{}", stderr(&added));
    put(&home, "agents/notifier/AGENT.md", AGENT);
    put(&home, "agents/notifier/tools/notify.py", TOOL);
    let workflow = scratch.join("notify.yaml");
    std::fs::write(&workflow, WORKFLOW).unwrap();
    let quiet = scratch.join("quiet.yaml");
    std::fs::write(&quiet, QUIET).unwrap();
    let run_args = |file: &Path| {
        vec![
            "run".to_owned(),
            file.to_str().unwrap().to_owned(),
            "--json".to_owned(),
            "--backend".to_owned(),
            "unisolated".to_owned(),
            "--allow-model-endpoint".to_owned(),
            listen.clone(),
        ]
    };
    let args = run_args(&workflow);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let parked = platform(&home, &nets, &args).output().unwrap();
    assert!(
        stdout(&parked).contains("waiting_approval"),
        "{}{}",
        stdout(&parked),
        stderr(&parked)
    );
    let runs: serde_json::Value =
        serde_json::from_str(&stdout(&home.stepward(&["runs", "list", "--json"]))).unwrap();
    let run = runs[0]["run"].as_str().unwrap().to_owned();
    // The person approves; the tool sends its request and holds; the platform is killed.
    let mut approving = platform(
        &home,
        &nets,
        &[
            "approve",
            &run,
            "notify",
            "--note",
            "go",
            "--allow-model-endpoint",
            &listen,
            "--backend",
            "unisolated",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for("the tool's request", 60, || {
        assert!(
            approving.try_wait().unwrap().is_none(),
            "the platform ended before the kill"
        );
        requests(&log) == 1
    });
    approving.kill().unwrap();
    approving.wait().unwrap();
    // Restart twice (each start runs the recovery sweep) with a run of its own.
    let args = run_args(&quiet);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for _ in 0..2 {
        let again = platform(&home, &nets, &args).output().unwrap();
        assert!(
            again.status.success(),
            "{}{}",
            stdout(&again),
            stderr(&again)
        );
    }
    let shown = stdout(&home.stepward(&["runs", "show", &run, "--json"]));
    assert!(shown.contains("\"unknown\""), "{shown}");
    assert!(shown.contains("needs_attention"), "{shown}");
    // The engine asked to go on without a person's decision refuses: the gate was decided.
    let pushed = platform(
        &home,
        &nets,
        &[
            "approve",
            &run,
            "notify",
            "--note",
            "again",
            "--allow-model-endpoint",
            &listen,
            "--backend",
            "unisolated",
        ],
    )
    .output()
    .unwrap();
    assert!(
        !pushed.status.success(),
        "{}{}",
        stdout(&pushed),
        stderr(&pushed)
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(requests(&log), 1, "the tool's request was sent again");
    let events = stdout(&home.stepward(&["runs", "events", &run]));
    assert_eq!(events.matches("tool.called").count(), 1, "{events}");
}
