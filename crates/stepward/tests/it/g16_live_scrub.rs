//! G16 across processes (review "credentials" A1, A10): a value set with `stepward secrets set`
//! while `serve` runs reaches the server's writers before their next write, and everything
//! shown (the JSON API, the console, the CLI) is scrubbed again on its way out, so a value that
//! entered the vault after a record was written is masked there too. The bytes written before
//! stay at rest (`docs/credentials.md`).

use crate::http::{Server, send};
use crate::support::{Home, stderr, stdout};
use test_support::bytes::contains;

/// Typed into a run's input before it was ever in the vault.
const TYPED_BEFORE: &str = "tok-typed-before-the-vault-knew-it-4Qw8Zr";
/// Set in the vault by another process while the server runs, then typed into a note.
const SET_WHILE_SERVING: &str = "tok-set-while-the-server-ran-7Hn2Kp9x";

/// A gate before the only step: a run parks at once, before anything runs.
const GATE_FIRST: &str = r#"name: late
python: "3.11"
inputs: { note: string }
steps:
  - id: ship!
    explain: Runs after a person approved.
    inputs: { note: { from: input.note } }
    code: |
      def main(note):
          return {"ok": True}
"#;

#[test]
fn g16_a_value_set_by_another_process_is_scrubbed_from_the_servers_next_write_and_every_view_needs_root()
 {
    let home = Home::new();
    let workflows = home.data_dir().join("accounts/local/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("late.yaml"), GATE_FIRST).unwrap();
    let mut server = Server::start_with_env(
        &home,
        &["--owner-email", "ada@example.test"],
        &[("RUST_LOG", "info")],
    );
    let (address, session, csrf) = server.first_owner_session();
    let as_owner = |method: &str, route: &str, body: &str| {
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
    let started = as_owner(
        "POST",
        "/api/runs",
        &serde_json::json!({"workflow": "late", "inputs": {"note": TYPED_BEFORE}}).to_string(),
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let run: serde_json::Value = serde_json::from_str(&started.body).unwrap();
    let run = crate::http::until_settled(
        address,
        &[("Cookie", &session)],
        run["run"].as_str().unwrap(),
    );
    assert_eq!(run["status"], "waiting_approval", "{run}");
    let run_id = run["run"].as_str().unwrap().to_owned();

    // Another process puts both values into the vault while the server runs.
    for (name, value) in [
        ("TYPED_TOKEN", TYPED_BEFORE),
        ("LATE_TOKEN", SET_WHILE_SERVING),
    ] {
        let set = home.stepward_with_stdin(&["secrets", "set", name], value);
        assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    }

    // Shown again: the value written before it entered the vault is masked in every view.
    let api = as_owner("GET", &format!("/api/runs/{run_id}/events"), "");
    assert_eq!(api.status, 200, "{}", api.body);
    assert!(!api.body.contains(TYPED_BEFORE), "{}", api.body);
    assert!(api.body.contains("[REDACTED]"), "{}", api.body);
    let page = send(
        address,
        "GET",
        &format!("/runs/{run_id}"),
        &[("Cookie", &session)],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains(TYPED_BEFORE), "{}", page.body);
    for command in [["runs", "events", &run_id], ["runs", "show", &run_id]] {
        let shown = home.stepward(&command);
        assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
        assert!(!stdout(&shown).contains(TYPED_BEFORE), "{}", stdout(&shown));
    }

    // Written next: the server's next write already knows the value set by the other process.
    let approved = as_owner(
        "POST",
        &format!("/api/runs/{run_id}/steps/ship/approve"),
        &serde_json::json!({"note": format!("approved; the token is {SET_WHILE_SERVING}")})
            .to_string(),
    );
    assert_eq!(approved.status, 202, "{}", approved.body);
    assert!(!approved.body.contains(SET_WHILE_SERVING));
    let settled = crate::http::until_settled(address, &[("Cookie", &session)], &run_id);
    assert!(
        !settled.to_string().contains(SET_WHILE_SERVING),
        "{settled}"
    );
    // A refused request whose reason would quote the value is logged scrubbed.
    let refused = send(
        address,
        "GET",
        &format!("/api/workspace/file?path=../{SET_WHILE_SERVING}"),
        &[("Cookie", &session)],
        "",
    );
    assert!(refused.status >= 400);
    server.terminate();
    assert!(
        !server.stderr().contains(SET_WHILE_SERVING),
        "{}",
        server.stderr()
    );
    let stored = home.data_bytes();
    assert!(
        !contains(&stored, SET_WHILE_SERVING),
        "the server wrote a value set by another process while it ran"
    );
}
