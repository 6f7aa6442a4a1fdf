//! G23, G26: a gate decision through the API is recorded with who decided, the door and the
//! note; an API key decides as the key, never as a person.

use auth::Role;
use storage::{Actor, AuditLog, DecisionKind, DecisionStore, Door, RunStatus, RunStore};

use crate::support::{Caller, Credentials, Harness, person_id};

fn key_id(credentials: &Credentials) -> String {
    match credentials {
        Credentials::Key { text } => text
            .strip_prefix("sw_")
            .and_then(|rest| rest.split('_').next())
            .unwrap()
            .to_owned(),
        Credentials::None | Credentials::Session { .. } => panic!("not a key"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_api_key_decision_is_recorded_as_the_key() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let key = harness.credentials(Caller::Key(Role::Member));
    let answer = harness
        .call(
            "POST",
            &format!("/api/runs/{}/steps/ship/approve", run.as_str()),
            &key,
            Some(("application/json", r#"{"note":"checked by CI"}"#.into())),
        )
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let body = answer.json();
    assert_eq!(body["status"], "succeeded");
    assert_eq!(body["decisions"][0]["actor_kind"], "api_key");
    assert_eq!(body["decisions"][0]["actor_id"], key_id(&key).as_str());
    assert_eq!(body["decisions"][0]["door"], "api");
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, DecisionKind::Approve);
    assert_eq!(decisions[0].who, Actor::ApiKey { id: key_id(&key) });
    assert_eq!(decisions[0].door, Door::Api);
    assert_eq!(decisions[0].note, "checked by CI");
    let audited = harness.store.audit_entries().unwrap();
    let approval = audited
        .iter()
        .find(|entry| entry.action == "run.approve")
        .unwrap();
    assert_eq!(approval.actor, Actor::ApiKey { id: key_id(&key) });
}

#[tokio::test(flavor = "multi_thread")]
async fn g23_person_rejects_through_the_api_and_a_gate_is_decided_once() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let path = format!("/api/runs/{}/steps/ship/reject", run.as_str());
    let body = Some(("application/json", r#"{"note":"wrong address"}"#.to_owned()));
    let answer = harness.call("POST", &path, &member, body.clone()).await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    assert_eq!(answer.json()["status"], "stopped");
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(
        decisions[0].who,
        Actor::Person {
            id: person_id(Role::Member),
            name: "The member".into()
        }
    );
    assert_eq!(decisions[0].kind, DecisionKind::Reject);
    let again = harness.call("POST", &path, &member, body).await;
    assert_eq!(again.status, 409, "{}", again.text());
    assert_eq!(harness.store.decisions(&run).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn g23_console_form_decision_is_recorded_with_the_console_door() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let answer = harness
        .call(
            "POST",
            &format!("/runs/{}/steps/ship/decide", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                "decision=approve&note=looks+right".into(),
            )),
        )
        .await;
    assert_eq!(answer.status, 303, "{}", answer.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions[0].door, Door::Console);
    assert_eq!(decisions[0].note, "looks right");
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_viewer_or_stranger_cannot_decide() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = format!("/api/runs/{}/steps/ship/approve", run.as_str());
    let body = Some(("application/json", r#"{"note":"no"}"#.to_owned()));
    for (caller, status) in [
        (Caller::Person(Role::Viewer), 403),
        (Caller::Key(Role::Viewer), 403),
        (Caller::StrangerPerson, 404),
        (Caller::StrangerKey, 404),
    ] {
        let credentials = harness.credentials(caller);
        let answer = harness
            .call("POST", &path, &credentials, body.clone())
            .await;
        assert_eq!(answer.status, status, "{caller:?}: {}", answer.text());
    }
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
}

/// A blank note is refused on every door of the server (API by a person and by a key, the
/// console's form, an approve link): nothing is decided, and the answer names the note
/// (issue 12, 10).
#[tokio::test(flavor = "multi_thread")]
async fn g23_a_blank_note_is_refused_on_every_door() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let key = harness.credentials(Caller::Key(Role::Member));
    let approve = format!("/api/runs/{}/steps/ship/approve", run.as_str());
    for credentials in [&member, &key] {
        for note in [r#"{"note":""}"#, r#"{"note":"   "}"#] {
            let answer = harness
                .call(
                    "POST",
                    &approve,
                    credentials,
                    Some(("application/json", note.into())),
                )
                .await;
            assert_eq!(answer.status, 400, "{}", answer.text());
            assert!(answer.json()["error"].as_str().unwrap().contains("note"));
        }
    }
    let console = harness
        .call(
            "POST",
            &format!("/runs/{}/steps/ship/decide", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                "decision=approve&note=+".into(),
            )),
        )
        .await;
    assert_eq!(console.status, 400, "{}", console.text());
    let gate = harness.engine.pending_gate(&run).unwrap().unwrap();
    let link = harness.state.approve_link_path(&gate).unwrap();
    let csrf = match &member {
        Credentials::Session { csrf, .. } => csrf.clone(),
        Credentials::None | Credentials::Key { .. } => String::new(),
    };
    let by_link = harness
        .call(
            "POST",
            &link,
            &member,
            Some((
                "application/x-www-form-urlencoded",
                format!("csrf={csrf}&decision=approve&note="),
            )),
        )
        .await;
    assert_eq!(by_link.status, 400, "{}", by_link.text());
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
}

/// G16 (review N1): a person's display name that is (or holds) a value of the account is
/// stored masked in the decision and the audit entry, like every other text of the record.
#[tokio::test(flavor = "multi_thread")]
async fn g16_an_actor_name_holding_a_value_is_stored_masked() {
    let harness = Harness::new();
    let run = harness.parked_run(crate::support::ACCOUNT);
    // The member's display name becomes a value of the account after the person was made.
    harness
        .vault
        .secrets()
        .set(
            &ids::AccountId::parse(crate::support::ACCOUNT).unwrap(),
            "NAME_AS_SECRET",
            redact::SecretValue::new("The member".into()),
        )
        .unwrap();
    let member = harness.credentials(Caller::Person(Role::Member));
    let answer = harness
        .call(
            "POST",
            &format!("/api/runs/{}/steps/ship/reject", run.as_str()),
            &member,
            Some(("application/json", r#"{"note":"no"}"#.to_owned())),
        )
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(
        decisions[0].who,
        Actor::Person {
            id: person_id(Role::Member),
            name: "[REDACTED]".into()
        }
    );
    for entry in harness.store.audit_entries().unwrap() {
        assert!(
            !entry.actor.display_name().contains("The member"),
            "{}: {:?}",
            entry.action,
            entry.actor
        );
    }
}
