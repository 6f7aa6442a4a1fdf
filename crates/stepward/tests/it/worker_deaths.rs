//! Recovery by lease (issue 38), with real processes killed by their own pid: a `serve`
//! killed mid-step and started again runs the offline step again; a step whose workers die
//! twice while running it sends its run to `needs_attention` and is never claimed a third
//! time, while the other runs finish (`serve --workers 0` beside `stepward worker`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{Server, send, until_settled};
use crate::support::Home;

/// One offline step that sleeps long enough to be killed in, then a quick one.
const SLOW: &str = r#"name: slow
python: "3.11"
steps:
  - id: wait
    explain: Waits a while, then says so.
    code: |
      def main():
          import time
          time.sleep(4)
          return {"waited": True}
  - id: after
    explain: Runs after the wait.
    inputs: { waited: { from: wait } }
    code: |
      def main(waited):
          return waited
"#;

const QUICK: &str = r#"name: quick
python: "3.11"
steps:
  - id: only
    explain: Returns a constant.
    code: |
      def main():
          return {"ok": True}
"#;

const PASSWORD: &str = "correct horse battery staple";

/// A session of the owner, who set their password at the first start.
fn signed_in(address: std::net::SocketAddr) -> String {
    let signed_in = send(
        address,
        "POST",
        "/api/signin",
        &[("Content-Type", "application/json")],
        &format!(r#"{{"account":"local","email":"ada@example.test","password":"{PASSWORD}"}}"#),
    );
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    signed_in.cookie("stepward_session").expect("a session")
}

/// Starts a run of `workflow` through the API; its id.
pub(crate) fn start(
    address: std::net::SocketAddr,
    session: &str,
    csrf: &str,
    workflow: &str,
) -> String {
    let started = send(
        address,
        "POST",
        "/api/runs",
        &[
            ("Cookie", session),
            ("X-CSRF-Token", csrf),
            ("Content-Type", "application/json"),
        ],
        &format!(r#"{{"workflow":"{workflow}"}}"#),
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let body: Value = serde_json::from_str(&started.body).unwrap();
    body["run"].as_str().unwrap().to_owned()
}

/// Waits until step `step` of `run` has an attempt `attempt` running.
fn until_running(
    address: std::net::SocketAddr,
    session: &str,
    run: &str,
    step: &str,
    attempt: u64,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = send(
            address,
            "GET",
            &format!("/api/runs/{run}"),
            &[("Cookie", session)],
            "",
        );
        let detail: Value = serde_json::from_str(&read.body).unwrap_or_default();
        let running = detail["steps"].as_array().is_some_and(|steps| {
            steps.iter().any(|shown| {
                shown["step"] == step && shown["attempt"] == attempt && shown["status"] == "running"
            })
        });
        if running {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "attempt {attempt} of {step} never ran: {detail}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends `child` with SIGKILL, by its own pid.
fn kill(child: &mut Child) {
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn a_serve_killed_mid_step_and_started_again_runs_the_offline_step_again_needs_root() {
    let home = Home::new();
    home.put("workflows/slow.yaml", SLOW);
    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let (address, session, csrf) = server.first_owner_session();
    let run = start(address, &session, &csrf, "slow");
    until_running(address, &session, &run, "wait", 1);
    kill(&mut server.child);

    let mut again = Server::start(&home, &[]);
    let address = again.address();
    let session = signed_in(address);
    let detail = until_settled(address, &[("Cookie", &session)], &run);
    assert_eq!(detail["status"], "succeeded", "{detail}");
    let events = send(
        address,
        "GET",
        &format!("/api/runs/{run}/events"),
        &[("Cookie", &session)],
        "",
    );
    let events: Value = serde_json::from_str(&events.body).unwrap();
    let finished: Vec<(Value, Value)> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["kind"] == "attempt.finished" && event["payload"]["step"] == "wait")
        .map(|event| {
            (
                event["payload"]["attempt"].clone(),
                event["payload"]["status"].clone(),
            )
        })
        .collect();
    assert_eq!(
        finished,
        vec![
            (Value::from(1), Value::from("failed")),
            (Value::from(2), Value::from("succeeded"))
        ],
        "the interrupted offline attempt failed and the step ran once more"
    );
    assert!(again.terminate().success(), "{}", again.stderr());
}

/// `stepward worker` on `home`'s data directory.
pub(crate) fn worker(home: &Home) -> Child {
    home.command(std::path::Path::new(env!("CARGO_BIN_EXE_stepward")))
        .arg("worker")
        .arg("--data-dir")
        .arg(home.data_dir())
        .arg("--sandbox-state-dir")
        .arg(home.dir.path().join("sandbox"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("stepward worker starts")
}

#[test]
fn a_step_whose_workers_die_twice_needs_attention_and_the_other_runs_finish_needs_root() {
    let home = Home::new();
    home.put("workflows/slow.yaml", SLOW);
    home.put("workflows/quick.yaml", QUICK);
    let mut server = Server::start(
        &home,
        &["--owner-email", "ada@example.test", "--workers", "0"],
    );
    let (address, session, csrf) = server.first_owner_session();
    let slow = start(address, &session, &csrf, "slow");
    for death in 1..=2u64 {
        let mut running = worker(&home);
        until_running(address, &session, &slow, "wait", death);
        kill(&mut running);
    }
    let quick = start(address, &session, &csrf, "quick");
    let mut last = worker(&home);
    let detail = until_settled(address, &[("Cookie", &session)], &slow);
    assert_eq!(detail["status"], "needs_attention", "{detail}");
    assert!(
        detail["reason"].as_str().is_some_and(
            |reason| reason.contains("its worker stopped twice while running this step")
        ),
        "{detail}"
    );
    let other = until_settled(address, &[("Cookie", &session)], &quick);
    assert_eq!(other["status"], "succeeded", "{other}");
    // No third worker ever ran it.
    std::thread::sleep(Duration::from_millis(500));
    let again = until_settled(address, &[("Cookie", &session)], &slow);
    let attempts: Vec<&Value> = again["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["step"] == "wait")
        .collect();
    assert_eq!(attempts.len(), 1, "the latest attempt only: {again}");
    assert_eq!(attempts[0]["attempt"], 2, "{again}");
    Command::new("kill")
        .args(["-TERM", &last.id().to_string()])
        .status()
        .unwrap();
    let stopped = last.wait().unwrap();
    assert!(stopped.success(), "the worker stops on SIGTERM: {stopped}");
    assert!(server.terminate().success(), "{}", server.stderr());
}

#[test]
fn a_command_following_a_run_whose_worker_dies_says_so_and_stops_waiting_needs_root() {
    let home = Home::new();
    let workflow = home.put("workflows/slow.yaml", SLOW);
    let mut server = Server::start(
        &home,
        &["--owner-email", "ada@example.test", "--workers", "0"],
    );
    let (address, session, _csrf) = server.first_owner_session();
    let mut running = worker(&home);
    let lock = home.data_dir().join("engine.lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&lock).is_ok_and(|text| text.ends_with("worker\n")) {
        assert!(
            Instant::now() < deadline,
            "the worker never took the data directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let follower = home
        .command(std::path::Path::new(env!("CARGO_BIN_EXE_stepward")))
        .arg("run")
        .arg(&workflow)
        .arg("--data-dir")
        .arg(home.data_dir())
        .arg("--sandbox-state-dir")
        .arg(home.dir.path().join("sandbox"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stepward run starts");
    // The run the command started, once the worker runs its step.
    let run = loop {
        let listed = send(address, "GET", "/api/runs", &[("Cookie", &session)], "");
        let runs: Value = serde_json::from_str(&listed.body).unwrap_or_default();
        if let Some(run) = runs
            .as_array()
            .and_then(|runs| runs.first())
            .and_then(|run| run["run"].as_str())
        {
            break run.to_owned();
        }
        assert!(Instant::now() < deadline, "the command started no run");
        std::thread::sleep(Duration::from_millis(20));
    };
    until_running(address, &session, &run, "wait", 1);
    kill(&mut running);
    let ended = follower.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&ended.stderr);
    assert!(!ended.status.success(), "{said}");
    assert!(said.contains("waits for a worker"), "{said}");
    assert!(server.terminate().success(), "{}", server.stderr());
}
