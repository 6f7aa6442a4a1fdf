//! The CLI's doors beside a live `stepward serve` whose worker runs the data directory's steps
//! (issue 38): each records and queues, then follows the run while the server's worker runs
//! it, with the same output and exit codes as without a server; none builds a sandbox (the
//! server's engine lock says whose they are). The same commands without a server are
//! `runs.rs`, `repair.rs` and `cli.rs`.

use crate::http::Server;
use crate::support::{Home, run_id, stderr, stdout};

/// A server on `home` with its worker, up (holding the engine lock) before it returns.
fn live_server(home: &Home) -> Server {
    let mut server = Server::start(home, &["--owner-email", "ada@example.test"]);
    let _ = server.address();
    server
}

/// Beside a live server whose workers run the data directory's steps, a command that starts
/// or decides a run records and queues it, then follows the run as the server's worker runs
/// it, with the same output and exit codes as without a server (issue 38): it never builds a
/// sandbox (the server's lock says whose they are), and it no longer sends the person to the
/// server's console instead.
#[test]
fn g23_run_approve_and_reject_beside_a_live_server_follow_its_worker_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        "sk-signing-7f3a9c1e5b2d4068\n",
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let mut server = live_server(&home);
    let lines = r#"lines=[{"customer":"acme","cents":1250},{"customer":"bolt","cents":990}]"#;
    let start = |month: &str| {
        home.stepward(&[
            "run",
            "examples/workflows/monthly_invoices.yaml",
            "--input",
            &format!("month={month}"),
            "--input",
            lines,
        ])
    };
    let started = start("2026-11");
    assert_eq!(
        started.status.code(),
        Some(0),
        "{}{}",
        stdout(&started),
        stderr(&started)
    );
    assert!(
        stdout(&started).contains("waiting_approval"),
        "{}",
        stdout(&started)
    );
    let run = run_id(&started);
    let approved = home.stepward(&["approve", &run, "file_summary!", "--note", "totals checked"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    assert!(
        stdout(&approved).contains("succeeded"),
        "{}",
        stdout(&approved)
    );
    let report = home
        .data_dir()
        .join("accounts/local/workspace/reports/2026-11.txt");
    let written = std::fs::read_to_string(&report).expect("the server's worker wrote the report");
    assert!(written.contains("Total: 22.40"), "{written}");

    let second = run_id(&start("2026-12"));
    let rejected = home.stepward(&["reject", &second, "file_summary", "--note", "wrong month"]);
    assert!(
        stdout(&rejected).contains("stopped"),
        "{}",
        stdout(&rejected)
    );
    let again = home.stepward(&[
        "approve",
        &second,
        "file_summary",
        "--note",
        "changed my mind",
    ]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "a decided gate is decided once"
    );
    let status = server.terminate();
    assert!(status.success(), "{status}: {}", server.stderr());
}

/// An offline step that always fails: with no assistant, its run needs a person.
const FAILING: &str = r#"name: failing
python: "3.11"
steps:
  - id: broken
    explain: Fails.
    code: |
      def main():
          raise ValueError("this step always fails")
"#;

#[test]
fn g14_runs_retry_and_runs_stop_beside_a_live_server_follow_its_worker_needs_root() {
    let home = Home::new();
    let workflow = home.put("workflows/failing.yaml", FAILING);
    let mut server = live_server(&home);
    let started = home.stepward(&["run", workflow.to_str().unwrap()]);
    assert!(
        stdout(&started).contains("needs_attention"),
        "{}{}",
        stdout(&started),
        stderr(&started)
    );
    let run = run_id(&started);
    let retried = home.stepward(&["runs", "retry", &run, "broken", "--note", "once more"]);
    assert!(
        stdout(&retried).contains("needs_attention") && stdout(&retried).contains("attempt 2"),
        "the server's worker ran attempt 2: {}{}",
        stdout(&retried),
        stderr(&retried)
    );
    let stopped = home.stepward(&["runs", "stop", &run, "--note", "enough"]);
    assert!(
        stdout(&stopped).contains("stopped"),
        "{}{}",
        stdout(&stopped),
        stderr(&stopped)
    );
    let status = server.terminate();
    assert!(status.success(), "{status}: {}", server.stderr());
}

#[test]
fn g9_repair_and_its_accept_beside_a_live_server_follow_its_worker_needs_root() {
    use fake_model::{BlockingFakeModel, Script, ScriptTurn};
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "propose",
        serde_json::json!({"code": "import urllib.parse\n\ndef main(word):\n    return urllib.parse.quote(word)\n", "note": "urllib.parse instead of requests"}),
    )]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-repair-test-model-key-5566");
    let file = home.put("workflows/quote.yaml", crate::repair::WORKFLOW);
    let mut server = Server::start(
        &home,
        &[
            "--owner-email",
            "ada@example.test",
            "--allow-model-endpoint",
            &exempt,
        ],
    );
    let _ = server.address();
    let ran = home.stepward(&[
        "run",
        file.to_str().unwrap(),
        "--input",
        "word= a b ",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        stdout(&ran).contains("needs_repair"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = run_id(&ran);
    let proposed = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert!(
        stdout(&proposed).contains("urllib.parse.quote(word)"),
        "{}{}",
        stdout(&proposed),
        stderr(&proposed)
    );
    let accepted = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--note",
        "urllib does it",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        accepted.status.success() && stdout(&accepted).contains("succeeded"),
        "the server's worker ran the repaired step: {}{}",
        stdout(&accepted),
        stderr(&accepted)
    );
    let status = server.terminate();
    assert!(status.success(), "{status}: {}", server.stderr());
}
