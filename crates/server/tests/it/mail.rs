//! Approve links by mail (issue 41), through an SMTP sink on loopback: the mail arrives with
//! the gate's link, which opens the gate page until the key rotates; STARTTLS is required (a
//! server without it gets nothing, and the failure is retried and shown), implicit TLS works;
//! `notify:` narrows who is mailed and asks for reminders, at most three, at least an hour
//! apart; a gate decided before its mail goes out is mailed to nobody.

use auth::{ApproveLinkKey, Role};
use server::mail::{Drained, Mailer, SmtpSettings};
use storage::RunId;
use storage::mail::{GateMailOutbox, GateMailStatus};
use storage::people::{PeopleStore, RoleName};
use test_support::smtp::{Received, SinkTls, SmtpSink};

use crate::support::{ACCOUNT, Caller, Credentials, Harness, VAULT_VALUE};

/// Written into a step's explanation, then stored in the vault after the run parked: the mail
/// goes out through the account's scrubber as it is when sent.
const LATER_VALUE: &str = "sk_live_Carrier4Jq8Zr2Wn6Yt";
const BASE: &str = "https://stepward.example.test";
const HOUR: i64 = 60 * 60 * 1000;

fn mailer(sink: &SmtpSink, scheme: &str, plain: bool) -> Mailer {
    let settings = SmtpSettings::parse(
        &format!("{scheme}://127.0.0.1:{}", sink.address().port()),
        "stepward <approvals@example.test>",
        None,
        Some(sink.ca_pem().as_bytes().to_vec()),
        plain,
    )
    .unwrap();
    Mailer::new(&settings, BASE).unwrap()
}

fn link_in(mail: &Received) -> String {
    let text = mail.text();
    let start = text.find(BASE).unwrap();
    let link: String = text[start..]
        .chars()
        .take_while(|character| !character.is_whitespace())
        .collect();
    link.strip_prefix(BASE).unwrap().to_owned()
}

async fn run_page(harness: &Harness, run: &RunId) -> String {
    let answer = harness
        .call(
            "GET",
            &format!("/runs/{}", run.as_str()),
            &harness.credentials(Caller::Person(Role::Member)),
            None,
        )
        .await;
    assert_eq!(answer.status, 200);
    answer.text()
}

const EXPLAINED: &str = r#"name: shipping
python: "3.11"
steps:
  - id: prepare
    explain: Prepares the shipment.
    code: |
      def main():
          return {"parcel": "PARCEL-OUTPUT-7731"}
  - id: ship!
    explain: Ships the parcel with the carrier key sk_live_Carrier4Jq8Zr2Wn6Yt.
    inputs:
      parcel: { from: prepare }
    code: |
      def main(parcel):
          return {"shipped": True}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_mail_arrives_over_starttls_with_a_link_that_opens_the_gate_until_the_key_rotates() {
    let sink = SmtpSink::start(SinkTls::StartTls);
    let harness = Harness::new();
    let run = harness.start(ACCOUNT, "shipping.yaml", EXPLAINED).run;
    harness
        .vault
        .secrets()
        .set(
            &storage::AccountId::parse(ACCOUNT).unwrap(),
            "CARRIER_KEY",
            redact::SecretValue::new(LATER_VALUE.into()),
        )
        .unwrap();
    let mailer = mailer(&sink, "smtp", false);
    let drained = mailer.drain(&harness.state).await.unwrap();
    assert_eq!(
        drained,
        Drained {
            sent: 1,
            failed: 0,
            closed: 0
        }
    );
    let mail = sink.received();
    // Everyone of the account whose role decides, one message each; no viewer, no stranger.
    let mut to: Vec<String> = mail.iter().flat_map(|mail| mail.to.clone()).collect();
    to.sort();
    assert_eq!(
        to,
        [
            "admin@example.test",
            "member@example.test",
            "owner@example.test"
        ]
    );
    assert!(mail.iter().all(|mail| mail.over_tls && mail.to.len() == 1));
    let text = mail[0].text();
    assert!(
        text.contains("shipping") && text.contains("\"ship\""),
        "{text}"
    );
    assert!(text.contains("Ships the parcel"), "{text}");
    // Never the step's inputs or outputs; no vault value in any form.
    assert!(!text.contains("PARCEL-OUTPUT-7731"), "{text}");
    for value in [VAULT_VALUE, LATER_VALUE] {
        assert!(!mail[0].data.contains(value), "{}", mail[0].data);
        assert!(!text.contains(value), "{text}");
    }
    assert!(text.contains("carrier key"), "{text}");
    // The link opens the gate page: the Continue page without a session, the form with one.
    let path = link_in(&mail[0]);
    assert!(
        path.starts_with(&format!("/approve/{}/ship/1/", run.as_str())),
        "{path}"
    );
    let anonymous = harness.call("GET", &path, &Credentials::None, None).await;
    assert_eq!(anonymous.status, 200, "{}", anonymous.text());
    assert!(!anonymous.text().contains("PARCEL-OUTPUT-7731"));
    let member = harness
        .call(
            "GET",
            &path,
            &harness.credentials(Caller::Person(Role::Member)),
            None,
        )
        .await;
    assert_eq!(member.status, 200);
    // Mailed once: nothing more is due without `remind_after`.
    assert_eq!(
        mailer.drain(&harness.state).await.unwrap(),
        Drained::default()
    );
    assert_eq!(sink.received().len(), 3);
    let page = run_page(&harness, &run).await;
    assert!(page.contains("was mailed 1 time to"), "{page}");
    // A rotated key kills the mailed link.
    harness
        .state
        .rotate_approve_link_key(ApproveLinkKey::generate().unwrap());
    let dead = harness.call("GET", &path, &Credentials::None, None).await;
    assert_eq!(dead.status, 404);
    // Recorded: the row and a `gate.mail` audit entry.
    let rows = harness.store.gate_mail(&run).unwrap();
    assert_eq!(
        (rows[0].status, rows[0].mails_sent),
        (GateMailStatus::Done, 1)
    );
    let audited = storage::AuditLog::audit_entries(harness.store.as_ref()).unwrap();
    assert!(audited.iter().any(|entry| entry.action == "gate.mail"));
}

#[tokio::test(flavor = "multi_thread")]
async fn implicit_tls_is_reached_with_tls() {
    let sink = SmtpSink::start(SinkTls::Implicit);
    let harness = Harness::new();
    harness.parked_run(ACCOUNT);
    let drained = mailer(&sink, "smtps", false)
        .drain(&harness.state)
        .await
        .unwrap();
    assert_eq!(drained.sent, 1);
    assert!(sink.received().iter().all(|mail| mail.over_tls));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_starttls_gets_nothing_and_the_failure_is_retried_and_shown() {
    let sink = SmtpSink::start(SinkTls::None);
    let harness = Harness::new();
    let run = harness.parked_run(ACCOUNT);
    let required = mailer(&sink, "smtp", false);
    let drained = required.drain(&harness.state).await.unwrap();
    assert_eq!(
        drained,
        Drained {
            sent: 0,
            failed: 1,
            closed: 0
        }
    );
    assert!(sink.connections() >= 1, "the server was reached");
    assert!(sink.received().is_empty(), "and got no mail");
    let row = &harness.store.gate_mail(&run).unwrap()[0];
    assert_eq!((row.status, row.tries), (GateMailStatus::Due, 1));
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .to_lowercase()
            .contains("tls"),
        "{row:?}"
    );
    let page = run_page(&harness, &run).await;
    assert!(page.contains("could not be mailed (1 try)"), "{page}");
    // Backoff: not again before 30 s; then again, counted.
    assert_eq!(
        required.drain(&harness.state).await.unwrap(),
        Drained::default()
    );
    harness.clock.advance(30_000);
    assert_eq!(required.drain(&harness.state).await.unwrap().failed, 1);
    assert_eq!(harness.store.gate_mail(&run).unwrap()[0].tries, 2);
    // Plain SMTP only when asked for, to loopback: then it goes out.
    harness.clock.advance(60_000);
    assert_eq!(
        mailer(&sink, "smtp", true)
            .drain(&harness.state)
            .await
            .unwrap()
            .sent,
        1
    );
    assert!(sink.received().iter().all(|mail| !mail.over_tls));
}

const NOTIFIED: &str = r#"name: notified
python: "3.11"
notify:
  people: [Admin@example.test, member@example.test]
  remind_after: 1h
steps:
  - id: ship!
    explain: Ships it.
    code: |
      def main():
          return {"shipped": True}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn notify_narrows_who_is_mailed_and_reminds_at_most_three_times_an_hour_apart() {
    let sink = SmtpSink::start(SinkTls::StartTls);
    let harness = Harness::new();
    let run = harness.start(ACCOUNT, "notified.yaml", NOTIFIED).run;
    // The member became a viewer after the workflow was saved: checked again when mailed.
    harness
        .store
        .change_role(
            &storage::AccountId::parse(ACCOUNT).unwrap(),
            &crate::support::person_id(Role::Member),
            RoleName::Viewer,
            engine::Clock::now(harness.clock.as_ref()),
        )
        .unwrap();
    let mailer = mailer(&sink, "smtp", false);
    assert_eq!(mailer.drain(&harness.state).await.unwrap().sent, 1);
    let first = sink.received();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].to, ["admin@example.test"]);
    let page = run_page(&harness, &run).await;
    assert!(
        page.contains("not mailed: member@example.test"),
        "the run page says who was left out: {page}"
    );
    // Reminders: not before an hour, then one an hour, three in all.
    harness.clock.advance(HOUR - 1000);
    assert_eq!(mailer.drain(&harness.state).await.unwrap().sent, 0);
    for reminder in 1..=3 {
        harness.clock.advance(HOUR);
        assert_eq!(
            mailer.drain(&harness.state).await.unwrap().sent,
            1,
            "{reminder}"
        );
        let latest = sink.received().pop().unwrap();
        assert!(
            latest.data.contains("Subject: Reminder:"),
            "{}",
            latest.data
        );
        assert!(
            latest
                .text()
                .contains(&format!("reminder {reminder} of at most 3"))
        );
    }
    harness.clock.advance(10 * HOUR);
    assert_eq!(
        mailer.drain(&harness.state).await.unwrap(),
        Drained::default()
    );
    assert_eq!(sink.received().len(), 4);
    let row = &harness.store.gate_mail(&run).unwrap()[0];
    assert_eq!((row.status, row.mails_sent), (GateMailStatus::Done, 4));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gate_decided_before_its_mail_goes_out_is_mailed_to_nobody() {
    let sink = SmtpSink::start(SinkTls::StartTls);
    let harness = Harness::new();
    let run = harness.parked_run(ACCOUNT);
    let answer = harness
        .call(
            "POST",
            &format!("/api/runs/{}/steps/ship/approve", run.as_str()),
            &harness.credentials(Caller::Key(Role::Member)),
            Some(("application/json", r#"{"note":"fine"}"#.into())),
        )
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let drained = mailer(&sink, "smtp", false)
        .drain(&harness.state)
        .await
        .unwrap();
    assert_eq!(
        drained,
        Drained {
            sent: 0,
            failed: 0,
            closed: 1
        }
    );
    assert_eq!(sink.connections(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_door_refuses_notify_naming_a_stranger_or_a_viewer_at_file_line_col() {
    let harness = Harness::new();
    harness.commit_workflow(
        "strangers",
        &NOTIFIED.replace(
            "people: [Admin@example.test, member@example.test]",
            "people: [stranger@example.test, viewer@example.test]",
        ),
    );
    let member = harness.credentials(Caller::Person(Role::Member));
    let shown = harness
        .call("GET", "/api/workflows/strangers", &member, None)
        .await;
    assert_eq!(shown.json()["valid"], false);
    let problems = shown.json()["problems"].to_string();
    assert!(problems.contains("strangers.yaml:4:12"), "{problems}");
    assert!(
        problems.contains("not the address of a person of this account"),
        "{problems}"
    );
    assert!(problems.contains("strangers.yaml:4:35"), "{problems}");
    assert!(problems.contains("notify-cannot-decide"), "{problems}");
    let start = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some(("application/json", r#"{"workflow":"strangers"}"#.into())),
        )
        .await;
    assert_eq!(start.status, 422, "{}", start.text());
    assert_eq!(start.json()["code"], "workflow_invalid");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_the_server_refuses_is_left_out_and_the_others_get_theirs() {
    let sink = SmtpSink::refusing(SinkTls::StartTls, &["admin@example.test"]);
    let harness = Harness::new();
    let run = harness.parked_run(ACCOUNT);
    let drained = mailer(&sink, "smtp", false)
        .drain(&harness.state)
        .await
        .unwrap();
    assert_eq!(drained.sent, 1);
    let mut to: Vec<String> = sink
        .received()
        .iter()
        .flat_map(|mail| mail.to.clone())
        .collect();
    to.sort();
    assert_eq!(to, ["member@example.test", "owner@example.test"]);
    let row = &harness.store.gate_mail(&run).unwrap()[0];
    assert_eq!(row.status, GateMailStatus::Done);
    assert!(
        row.note
            .as_deref()
            .unwrap()
            .contains("not mailed: admin@example.test (the mail server refused it"),
        "{row:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_with_a_line_break_reaches_no_header_and_stops_no_mail() {
    let sink = SmtpSink::start(SinkTls::StartTls);
    let harness = Harness::new();
    // Written past the doors, which refuse it: the mailer holds on its own.
    harness
        .store
        .create_person(&storage::people::NewPerson {
            id: "p-eve".into(),
            account: storage::AccountId::parse(ACCOUNT).unwrap(),
            display_name: "Eve\r\nBcc: mallory@example.test".into(),
            email: "eve@example.test".into(),
            role: RoleName::Member,
            password_hash: Some(
                "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo".into(),
            ),
            created_at: storage::Timestamp(1),
        })
        .unwrap();
    // Invited but never signed in: not mailed.
    harness.add_person("p-new", ACCOUNT, RoleName::Admin);
    harness.parked_run(ACCOUNT);
    let drained = mailer(&sink, "smtp", false)
        .drain(&harness.state)
        .await
        .unwrap();
    assert_eq!(drained.sent, 1);
    let mail = sink.received();
    let to: Vec<&str> = mail.iter().map(|mail| mail.to[0].as_str()).collect();
    assert!(to.contains(&"eve@example.test"), "{to:?}");
    assert!(!to.contains(&"p-new@example.test"), "{to:?}");
    assert!(!to.contains(&"mallory@example.test"), "{to:?}");
    for mail in &mail {
        assert!(
            !mail.data.lines().any(|line| line.starts_with("Bcc:")),
            "{}",
            mail.data
        );
    }
}
