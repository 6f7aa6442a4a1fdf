//! G24: approve links. Opening one only shows the decision page; a signed-in member decides
//! with a CSRF-protected POST, recorded with the door `link`. Tampered links, links of another
//! run, links signed by a rotated-out key and links of a decided gate are not found.

use auth::{ApproveLinkKey, Role};
use storage::{Actor, DecisionStore, Door, RunId, RunStatus, RunStore};

use crate::support::{Answer, Caller, Credentials, Harness, person_id};

fn link(harness: &Harness, run: &RunId) -> String {
    // The gate as the engine derives it: the step it waits at, the attempt a decision names.
    let gate = harness.engine.pending_gate(run).unwrap().unwrap();
    assert_eq!(
        (gate.account.as_str(), gate.step.as_str(), gate.attempt),
        ("acct", "ship", 1)
    );
    harness.state.approve_link_path(&gate).unwrap()
}

fn form(credentials: &Credentials, decision: &str) -> Option<(&'static str, String)> {
    let csrf = match credentials {
        Credentials::Session { csrf, .. } => csrf.clone(),
        Credentials::None | Credentials::Key { .. } => String::new(),
    };
    Some((
        "application/x-www-form-urlencoded",
        format!("csrf={csrf}&decision={decision}&note=via+link"),
    ))
}

async fn post(harness: &Harness, path: &str, credentials: &Credentials) -> Answer {
    harness
        .call("POST", path, credentials, form(credentials, "approve"))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_opening_a_link_shows_and_a_member_decides_with_the_link_door() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = link(&harness, &run);
    let anonymous = harness.call("GET", &path, &Credentials::None, None).await;
    assert_eq!(anonymous.status, 200, "{}", anonymous.text());
    assert!(anonymous.text().contains("Sign in"));
    assert!(!anonymous.text().contains("<form"));
    let member = harness.credentials(Caller::Person(Role::Member));
    let page = harness.call("GET", &path, &member, None).await;
    assert!(page.text().contains("name=\"csrf\""), "{}", page.text());
    assert!(
        harness.store.decisions(&run).unwrap().is_empty(),
        "opening never decides"
    );
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
    let decided = post(&harness, &path, &member).await;
    assert_eq!(decided.status, 303, "{}", decided.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].door, Door::Link);
    assert_eq!(decisions[0].note, "via link");
    assert_eq!(
        decisions[0].who,
        Actor::Person {
            id: person_id(Role::Member),
            name: "The member".into()
        }
    );
    // A decided gate is not decided again, and its link is gone.
    assert_eq!(harness.call("GET", &path, &member, None).await.status, 404);
    assert_eq!(post(&harness, &path, &member).await.status, 404);
    assert_eq!(harness.store.decisions(&run).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_tampered_other_run_and_rotated_links_are_not_found() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let other_run = harness.parked_run("acct");
    let path = link(&harness, &run);
    let member = harness.credentials(Caller::Person(Role::Member));
    let mut tampered = path.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let token = path.rsplit('/').next().unwrap();
    let for_other_run = format!("/approve/{}/ship/1/{token}", other_run.as_str());
    let other_attempt = path.replace("/ship/1/", "/ship/2/");
    // Signed with the right key for the right step, but for an attempt the engine does not
    // wait for: the link's gate is not the pending gate.
    let mut later = harness.engine.pending_gate(&run).unwrap().unwrap();
    later.attempt = 2;
    let signed_for_later = harness.state.approve_link_path(&later).unwrap();
    for bad in [&tampered, &for_other_run, &other_attempt, &signed_for_later] {
        assert_eq!(
            harness.call("GET", bad, &member, None).await.status,
            404,
            "{bad}"
        );
        assert_eq!(post(&harness, bad, &member).await.status, 404, "{bad}");
    }
    assert_eq!(harness.call("GET", &path, &member, None).await.status, 200);
    harness
        .state
        .rotate_approve_link_key(ApproveLinkKey::generate().unwrap());
    assert_eq!(harness.call("GET", &path, &member, None).await.status, 404);
    assert_eq!(post(&harness, &path, &member).await.status, 404);
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    assert!(harness.store.decisions(&other_run).unwrap().is_empty());
    let fresh = link(&harness, &run);
    assert_eq!(harness.call("GET", &fresh, &member, None).await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_only_a_signed_in_member_of_the_account_decides_through_a_link() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = link(&harness, &run);
    for (caller, status) in [
        (Caller::Nobody, 401),
        (Caller::Person(Role::Viewer), 403),
        (Caller::Key(Role::Admin), 403),
        (Caller::StrangerPerson, 404),
    ] {
        let credentials = harness.credentials(caller);
        let answer = post(&harness, &path, &credentials).await;
        assert_eq!(answer.status, status, "{caller:?}: {}", answer.text());
    }
    assert!(harness.store.decisions(&run).unwrap().is_empty());
}

/// A gate whose step consumes an earlier step's output and a run input.
const SHIPPING: &str = r#"name: shipping
python: "3.11"
inputs:
  carrier: string
steps:
  - id: prepare
    explain: Prepares the shipment.
    code: |
      def main():
          return {"parcel": "PARCEL-7731", "weight_kg": 3}
  - id: ship!
    explain: Hands the parcel to the carrier.
    inputs:
      parcel: { from: prepare }
      carrier: { from: input.carrier }
      express: true
    code: |
      def main(parcel, carrier, express):
          return {"shipped": True}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_approve_page_says_what_is_approved_to_the_runs_account_only() {
    let harness = Harness::new();
    let workflow = spec::parse_workflow("shipping.yaml", SHIPPING).unwrap();
    let run = harness
        .engine
        .start_run(
            &storage::AccountId::parse("acct").unwrap(),
            &workflow,
            serde_json::json!({"carrier": "Night Owl Freight\nDepot 4"}),
            Actor::Cli {
                os_user: "tester".into(),
            },
        )
        .unwrap()
        .run;
    let path = link(&harness, &run);
    for caller in [Caller::Person(Role::Member), Caller::Person(Role::Viewer)] {
        let page = harness
            .call("GET", &path, &harness.credentials(caller), None)
            .await;
        assert_eq!(page.status, 200);
        let text = page.text();
        for seen in [
            // The explanation, who started it and when, the pinned version, the reach row.
            "Hands the parcel to the carrier.",
            "id=\"gate-started\">tester on the command line started the run",
            "id=\"gate-reach\"",
            "<dt>Internet</dt><dd>no</dd>",
            // Each input with where it comes from; a text as text (its line break kept).
            "parcel <span class=\"hint\">(what the step prepare produced)</span>",
            // The harness's steps answer their own name.
            "&#34;step&#34;: &#34;prepare&#34;",
            "carrier <span class=\"hint\">(the run&#39;s input carrier)</span>",
            "Night Owl Freight\nDepot 4",
            "express <span class=\"hint\">(written in the workflow)</span>",
        ] {
            assert!(text.contains(seen), "{caller:?} sees {seen:?}: {text}");
        }
    }
    // A link opened without a session, or by a person of another account, shows nothing of
    // the run: its name only.
    for caller in [Caller::Nobody, Caller::StrangerPerson] {
        let page = harness
            .call("GET", &path, &harness.credentials(caller), None)
            .await;
        let text = page.text();
        assert!(text.contains("shipping"), "{caller:?}: {text}");
        for hidden in [
            "&#34;prepare&#34;",
            "Night Owl",
            "Hands the parcel",
            "gate-started",
        ] {
            assert!(
                !text.contains(hidden),
                "{caller:?} must not see {hidden:?}: {text}"
            );
        }
    }
}
