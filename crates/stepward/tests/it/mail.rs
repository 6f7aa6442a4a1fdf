//! Approve links by mail across processes (issue 41): a run parked by `stepward worker` in
//! its own process is mailed by a `serve --workers 0 --smtp` beside it, over STARTTLS to an SMTP
//! sink on loopback, and the mailed link opens the gate page of that server. The mail settings
//! are refused before anything starts when they would leak a password or send in plain text
//! beyond this machine.

use std::process::Stdio;
use std::time::Duration;

use test_support::smtp::{SinkTls, SmtpSink};

use crate::http::{Server, send};
use crate::support::Home;
use crate::worker_deaths::{start, worker};

const GATED: &str = r#"name: shipping
python: "3.11"
steps:
  - id: prepare
    explain: Prepares the parcel.
    code: |
      def main():
          return {"parcel": "PARCEL-OUTPUT-5521"}
  - id: ship!
    explain: Hands the parcel to the carrier.
    inputs: { parcel: { from: prepare } }
    code: |
      def main(parcel):
          return {"shipped": True}
"#;

#[test]
fn a_run_parked_by_a_worker_in_another_process_is_mailed_by_serve_with_smtp_needs_root() {
    let sink = SmtpSink::start(SinkTls::StartTls);
    let home = Home::new();
    home.put("workflows/shipping.yaml", GATED);
    let ca = home.dir.path().join("smtp-ca.pem");
    std::fs::write(&ca, sink.ca_pem()).unwrap();
    let smtp = format!("smtp://127.0.0.1:{}", sink.address().port());
    let mut server = Server::start(
        &home,
        &[
            "--owner-email",
            "ada@example.test",
            "--workers",
            "0",
            "--smtp",
            &smtp,
            "--smtp-from",
            "stepward <approvals@example.test>",
            "--smtp-ca",
            ca.to_str().unwrap(),
        ],
    );
    let (address, session, csrf) = server.first_owner_session();
    let run = start(address, &session, &csrf, "shipping");
    let mut running = worker(&home);
    let mail = sink.wait_for(1, Duration::from_secs(90));
    assert_eq!(mail.len(), 1, "{}", server.stderr());
    assert_eq!(mail[0].to, ["ada@example.test"]);
    assert!(mail[0].over_tls);
    let text = mail[0].text();
    assert!(text.contains("Hands the parcel to the carrier."), "{text}");
    assert!(!text.contains("PARCEL-OUTPUT-5521"), "{text}");
    let base = format!("http://{address}");
    let start_at = text.find(&base).unwrap();
    let link: String = text[start_at + base.len()..]
        .chars()
        .take_while(|character| !character.is_whitespace())
        .collect();
    assert!(
        link.starts_with(&format!("/approve/{run}/ship/1/")),
        "{link}"
    );
    let page = send(address, "GET", &link, &[("Cookie", &session)], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("ship"), "{}", page.body);
    let run_page = send(
        address,
        "GET",
        &format!("/runs/{run}"),
        &[("Cookie", &session)],
        "",
    );
    assert!(
        run_page
            .body
            .contains("was mailed 1 time to ada@example.test"),
        "{}",
        run_page.body
    );
    running.kill().unwrap();
    let _ = running.wait();
    assert!(server.terminate().success(), "{}", server.stderr());
}

#[test]
fn mail_settings_that_would_leak_a_password_or_send_plain_text_away_are_refused_before_start() {
    let home = Home::new();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--smtp",
                "smtp://alerts:hunter2secret@mail.example.test",
                "--smtp-from",
                "a@example.test",
            ],
            "--smtp-password-file",
        ),
        (
            &[
                "--smtp",
                "smtp://mail.example.test",
                "--smtp-from",
                "a@example.test",
                "--smtp-plain",
            ],
            "only to a loopback address",
        ),
        (&["--smtp", "smtp://127.0.0.1:2525"], "--smtp-from"),
    ];
    for (args, said) in cases {
        let out = home
            .command(std::path::Path::new(env!("CARGO_BIN_EXE_stepward")))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(home.data_dir())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2secret"), "{stderr}");
        assert!(!home.data_dir().exists(), "nothing was created: {args:?}");
    }
}

/// Issue 41: a workflow whose `notify:` names no person of the account is refused where it is
/// saved, at the address's file:line:col, and nothing is written.
#[test]
fn a_saved_workflow_that_notifies_a_stranger_is_refused_at_its_address() {
    let home = Home::new();
    let text = "name: strangers\npython: \"3.11\"\nnotify:\n  people: [eve@example.test]\nsteps:\n  - id: ship!\n    explain: Ships it.\n    code: |\n      def main():\n          return 1\n";
    let file = home.dir.path().join("strangers.yaml");
    std::fs::write(&file, text).unwrap();
    let saved = home.stepward(&[
        "files",
        "put",
        "workflows/strangers.yaml",
        "--from",
        file.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&saved.stderr);
    assert!(!saved.status.success(), "{said}");
    assert!(
        said.contains("workflows/strangers.yaml:4:12") && said.contains("notify-unknown-person"),
        "{said}"
    );
    let listed = home.stepward(&["files", "list"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("strangers.yaml"));
}
