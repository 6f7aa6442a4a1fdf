//! The run page's live view of a running step (issue 38): what the step printed so far shows
//! while it runs, through a real server whose worker runs it, scrubbed as the record is; a
//! value of the account printed in two halves, with the view written between them, never
//! shows, not even its first half.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{Server, send, until_settled};
use crate::support::{Home, stderr};

const SECRET: &str = "sk-signing-7f3a9c1e5b2d4068";

const TALKING: &str = r#"name: talking
python: "3.11"
steps:
  - id: talk
    explain: Says what it does while it does it.
    connections: [signing]
    code: |
      def main():
          import os, sys, time
          key = os.environ["CONN_SIGNING_KEY"]
          print("step one", flush=True)
          sys.stdout.write(key[:14])
          sys.stdout.flush()
          time.sleep(1.5)
          sys.stdout.write(key[14:] + "\n")
          print("step two", flush=True)
          time.sleep(1.5)
          return {"ok": True}
"#;

#[test]
fn g16_the_live_view_of_a_running_step_shows_what_it_printed_and_never_a_value_even_half_printed_needs_root()
 {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        &format!("{SECRET}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    home.put("workflows/talking.yaml", TALKING);
    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let (address, session, csrf) = server.first_owner_session();
    let started = send(
        address,
        "POST",
        "/api/runs",
        &[
            ("Cookie", &session),
            ("X-CSRF-Token", &csrf),
            ("Content-Type", "application/json"),
        ],
        r#"{"workflow":"talking"}"#,
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let run = serde_json::from_str::<Value>(&started.body).unwrap()["run"]
        .as_str()
        .unwrap()
        .to_owned();

    // Every page the run showed while it ran.
    let mut pages = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = send(
            address,
            "GET",
            &format!("/runs/{run}"),
            &[("Cookie", &session)],
            "",
        );
        assert_eq!(page.status, 200);
        let running = page.body.contains("id=\"run-status\">running<");
        pages.push(page.body);
        if !running && pages.len() > 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the run never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let live: Vec<&String> = pages
        .iter()
        .filter(|page| page.contains("Printed so far"))
        .collect();
    assert!(
        live.iter().any(|page| page.contains("step one")),
        "what the step printed showed while it ran ({} pages)",
        pages.len()
    );
    for page in &pages {
        assert!(!page.contains(SECRET), "the whole value showed");
        assert!(!page.contains(&SECRET[..14]), "its first half showed");
    }
    let ended = until_settled(address, &[("Cookie", &session)], &run);
    assert_eq!(ended["status"], "succeeded", "{ended}");
    assert!(server.terminate().success(), "{}", server.stderr());
}
