//! G14, G15: a run that needs attention is retried or stopped by a person (or a key) through
//! the API while the server runs, each recorded with who decided, the door and the note, and
//! audited; a blank note, a run in another state, another step, a viewer and another account
//! are refused, and nothing is decided.

use auth::Role;
use storage::{Actor, AuditLog, DecisionKind, DecisionStore, Door, RunStatus, RunStore};

use crate::support::{Caller, FLAKY, Harness, RETRY_TAKES, person_id};

/// The API path of a person's retry of `step`'s attempt `attempt` of `run`.
fn retry_path(run: &storage::RunId, step: &str, attempt: u32) -> String {
    format!(
        "/api/runs/{}/steps/{step}/attempts/{attempt}/retry",
        run.as_str()
    )
}

/// The API path of the stop of `run`.
fn stop_path(run: &storage::RunId) -> String {
    format!("/api/runs/{}/stop", run.as_str())
}

fn note(text: &str) -> Option<(&'static str, String)> {
    Some(("application/json", format!(r#"{{"note":"{text}"}}"#)))
}

#[tokio::test(flavor = "multi_thread")]
async fn g15_a_member_retries_the_step_of_a_run_that_needs_attention() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let path = retry_path(&run, "send", 1);
    let answer = harness
        .call("POST", &path, &member, note("the notice never arrived"))
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    assert_eq!(answer.json()["status"], "succeeded", "{}", answer.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, DecisionKind::Retry);
    assert_eq!(decisions[0].door, Door::Api);
    assert_eq!(decisions[0].note, "the notice never arrived");
    assert_eq!(
        decisions[0].who,
        Actor::Person {
            id: person_id(Role::Member),
            name: "The member".into()
        }
    );
    assert!(
        harness
            .store
            .audit_entries()
            .unwrap()
            .iter()
            .any(|entry| entry.action == "run.retry")
    );
    // Decided once: the run no longer needs attention.
    let again = harness.call("POST", &path, &member, note("again")).await;
    assert_eq!(again.status, 409, "{}", again.text());
    assert_eq!(harness.store.decisions(&run).unwrap().len(), 1);
}

/// G14 (review): two decisions at once on one run (a double submit, two people) cannot both
/// pass the status check: while a retry drives the step, a second retry and a stop are
/// refused, and the networked step runs once.
#[tokio::test(flavor = "multi_thread")]
async fn g14_a_retry_in_progress_refuses_a_second_retry_and_a_stop() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let retry = retry_path(&run, "send", 1);
    let stop = stop_path(&run);
    let later = |path: String, credentials| {
        let harness = &harness;
        async move {
            tokio::time::sleep(RETRY_TAKES / 4).await;
            harness
                .call("POST", &path, credentials, note("me too"))
                .await
        }
    };
    let (first, second, stopped) = tokio::join!(
        harness.call("POST", &retry, &member, note("retry it")),
        later(retry.clone(), &owner),
        later(stop.clone(), &owner),
    );
    assert_eq!(first.status, 202, "{}", first.text());
    assert_eq!(first.json()["status"], "succeeded");
    for answer in [&second, &stopped] {
        assert_eq!(answer.status, 409, "{}", answer.text());
    }
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    let attempts = harness.store.attempts(&run).unwrap();
    assert_eq!(attempts.len(), 2, "the step ran {} times", attempts.len());
}

/// G14: only a person re-runs a step that may have acted; a key is refused (it may stop).
#[tokio::test(flavor = "multi_thread")]
async fn g14_an_api_key_cannot_retry() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let key = harness.credentials(Caller::Key(Role::Member));
    let answer = harness
        .call("POST", &retry_path(&run, "send", 1), &key, note("retry it"))
        .await;
    assert_eq!(answer.status, 403, "{}", answer.text());
    assert!(harness.store.decisions(&run).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn g15_a_key_stops_a_run_that_needs_attention_and_is_recorded_as_the_key() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let key = harness.credentials(Caller::Key(Role::Member));
    let answer = harness
        .call("POST", &stop_path(&run), &key, note("sent by hand instead"))
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    assert_eq!(answer.json()["status"], "stopped", "{}", answer.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, DecisionKind::Stop);
    assert!(matches!(decisions[0].who, Actor::ApiKey { .. }));
    assert!(
        harness
            .store
            .audit_entries()
            .unwrap()
            .iter()
            .any(|entry| entry.action == "run.stop")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_retry_and_stop_refuse_a_blank_note_another_state_another_step_and_other_callers() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let retry = retry_path(&run, "send", 1);
    let stop = stop_path(&run);
    for path in [&retry, &stop] {
        let blank = harness.call("POST", path, &member, note("  ")).await;
        assert_eq!(blank.status, 400, "{path}: {}", blank.text());
        assert!(blank.json()["error"].as_str().unwrap().contains("note"));
        for (caller, status) in [
            (Caller::Person(Role::Viewer), 403),
            (Caller::Key(Role::Viewer), 403),
            (Caller::StrangerPerson, 404),
            // A key is refused retrying before its account is looked at.
            (Caller::StrangerKey, if path == &retry { 403 } else { 404 }),
            (Caller::Nobody, 401),
        ] {
            let credentials = harness.credentials(caller);
            let answer = harness.call("POST", path, &credentials, note("no")).await;
            assert_eq!(
                answer.status,
                status,
                "{path} {caller:?}: {}",
                answer.text()
            );
        }
    }
    // Only the step that stopped the run is retried.
    let other = harness
        .call(
            "POST",
            &retry_path(&run, "elsewhere", 1),
            &member,
            note("wrong step"),
        )
        .await;
    assert_eq!(other.status, 409, "{}", other.text());
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::NeedsAttention
    );
    // A run waiting at a gate is decided at its gate, not retried or stopped here.
    let parked = harness.parked_run("acct");
    for path in [retry_path(&parked, "ship", 1), stop_path(&parked)] {
        let answer = harness.call("POST", &path, &member, note("no")).await;
        assert_eq!(answer.status, 409, "{path}: {}", answer.text());
    }
    assert_eq!(
        harness.store.run(&parked).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
}

/// The console's form (G15): the run page of a run that needs attention offers a member the
/// retry of the stopped step and the stop; a viewer sees neither. Retrying through it is
/// recorded with the door `console`.
#[tokio::test(flavor = "multi_thread")]
async fn g15_the_run_page_retries_and_stops_a_run_that_needs_attention() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let page = format!("/runs/{}", run.as_str());
    let shown = harness.call("GET", &page, &member, None).await;
    assert_eq!(shown.status, 200, "{}", shown.text());
    let text = shown.text();
    assert!(
        text.contains(&format!("action=\"/runs/{}/attend\"", run.as_str())),
        "{text}"
    );
    assert!(text.contains("Retry send"), "{text}");
    assert!(text.contains("name=\"attempt\" value=\"1\""), "{text}");
    assert!(text.contains("Stop the run"), "{text}");
    let seen = harness.call("GET", &page, &viewer, None).await.text();
    assert!(!seen.contains("/attend\""), "a viewer is offered the form");
    let form = |body: &str| Some(("application/x-www-form-urlencoded", body.to_owned()));
    let retried = harness
        .call(
            "POST",
            &format!("/runs/{}/attend", run.as_str()),
            &member,
            form("decision=retry&step=send&attempt=1&note=checked+the+record"),
        )
        .await;
    assert_eq!(retried.status, 303, "{}", retried.text());
    let decisions = harness.store.decisions(&run).unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].kind, DecisionKind::Retry);
    assert_eq!(decisions[0].door, Door::Console);
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
    // The card shows the retry's attempt, and the first stays reachable from it (issue 42,
    // point 4).
    let after = harness.call("GET", &page, &member, None).await.text();
    assert!(after.contains("Earlier attempts (1)"), "{after}");
    assert!(
        after.contains("id=\"step-send-attempt-1\"")
            && after.contains("<h4>Attempt 1: outcome unknown"),
        "{after}"
    );
    let other = harness.attention_run("acct");
    let attend = format!("/runs/{}/attend", other.as_str());
    let unknown = harness
        .call("POST", &attend, &member, form("decision=approve&note=x"))
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    let stopped = harness
        .call(
            "POST",
            &attend,
            &member,
            form("decision=stop&note=done+by+hand"),
        )
        .await;
    assert_eq!(stopped.status, 303, "{}", stopped.text());
    assert_eq!(
        harness.store.run(&other).unwrap().unwrap().status,
        RunStatus::Stopped
    );
}

/// G14 (review): a retry names the attempt the person looked at. A second submit of the same
/// decision, arriving after the first retry ended `unknown` again, is refused: nobody has seen
/// the newer attempt's record. Retrying that one works.
#[tokio::test(flavor = "multi_thread")]
async fn g14_a_late_second_submit_never_retries_an_attempt_nobody_looked_at() {
    let harness = Harness::new();
    let run = harness.attention_run_of("acct", FLAKY);
    let member = harness.credentials(Caller::Person(Role::Member));
    let retry = |attempt: u32| retry_path(&run, "flaky", attempt);
    let first = harness
        .call("POST", &retry(1), &member, note("try again"))
        .await;
    assert_eq!(first.status, 202, "{}", first.text());
    assert_eq!(
        first.json()["status"],
        "needs_attention",
        "{}",
        first.text()
    );
    let late = harness
        .call("POST", &retry(1), &member, note("try again"))
        .await;
    assert_eq!(late.status, 409, "{}", late.text());
    assert_eq!(harness.store.attempts(&run).unwrap().len(), 2);
    let seen = harness
        .call("POST", &retry(2), &member, note("looked at 2"))
        .await;
    assert_eq!(seen.status, 202, "{}", seen.text());
    assert_eq!(seen.json()["status"], "succeeded", "{}", seen.text());
    assert_eq!(harness.store.attempts(&run).unwrap().len(), 3);
}

/// G15: a person retries with new inputs through the API and through the run page, as
/// `stepward runs retry --input` does: each new input replaces the one of its name, the
/// attempt's record holds them, and inputs that are not an object by name or that carry a
/// credential key (G4) are refused with nothing decided.
#[tokio::test(flavor = "multi_thread")]
async fn g15_a_person_retries_with_new_inputs_through_the_api_and_the_run_page() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let latest_inputs = |run: &storage::RunId| {
        harness
            .store
            .attempts(run)
            .unwrap()
            .last()
            .unwrap()
            .inputs
            .clone()
    };

    // ATTENTION's `send`, with an input to correct.
    let addressed = crate::support::ATTENTION
        .replace(
            "    network: public_egress\n",
            "    network: public_egress\n    inputs: { to: \"old@example.com\" }\n",
        )
        .replace("def main():", "def main(to):");
    let run = harness.attention_run_of("acct", &addressed);
    let path = retry_path(&run, "send", 1);
    for (body, says) in [
        (r#"{"note":"n","inputs":["to"]}"#, "invalid type"),
        (
            r#"{"note":"n","inputs":{"api_key":"sk-live-1"}}"#,
            "forbidden keys",
        ),
        (r#"{"note":"n","inputs":{"too":"x"}}"#, "has no input named"),
    ] {
        let refused = harness
            .call(
                "POST",
                &path,
                &member,
                Some(("application/json", body.to_owned())),
            )
            .await;
        assert!(
            refused.status == 400 || refused.status == 422,
            "{body}: {} {}",
            refused.status,
            refused.text()
        );
        assert!(refused.text().contains(says), "{body}: {}", refused.text());
        assert!(!refused.text().contains("sk-live-1"), "{}", refused.text());
        assert!(harness.store.decisions(&run).unwrap().is_empty(), "{body}");
    }
    let retried = harness
        .call(
            "POST",
            &path,
            &member,
            Some((
                "application/json",
                r#"{"note":"the right address","inputs":{"to":"ops@example.com"}}"#.to_owned(),
            )),
        )
        .await;
    assert_eq!(retried.status, 202, "{}", retried.text());
    assert_eq!(retried.json()["status"], "succeeded", "{}", retried.text());
    assert_eq!(latest_inputs(&run)["to"], "ops@example.com");
    assert_eq!(harness.store.attempts(&run).unwrap().len(), 2);

    // The run page offers the field, and its form takes the same object.
    let other = harness.attention_run_of("acct", &addressed);
    let page = harness
        .call("GET", &format!("/runs/{}", other.as_str()), &member, None)
        .await
        .text();
    assert!(page.contains("name=\"inputs\""), "{page}");
    let attend = format!("/runs/{}/attend", other.as_str());
    let form = |body: &str| Some(("application/x-www-form-urlencoded", body.to_owned()));
    let not_json = harness
        .call(
            "POST",
            &attend,
            &member,
            form("decision=retry&step=send&attempt=1&note=n&inputs=%7Bto%3A"),
        )
        .await;
    assert_eq!(not_json.status, 400, "{}", not_json.text());
    assert!(not_json.text().contains("not JSON"), "{}", not_json.text());
    let not_object = harness
        .call(
            "POST",
            &attend,
            &member,
            form("decision=retry&step=send&attempt=1&note=n&inputs=%5B1%5D"),
        )
        .await;
    assert_eq!(not_object.status, 400, "{}", not_object.text());
    assert!(harness.store.decisions(&other).unwrap().is_empty());
    let retried = harness
        .call(
            "POST",
            &attend,
            &member,
            form(
                "decision=retry&step=send&attempt=1&note=checked&inputs=%7B%22to%22%3A+%22ops%40example.com%22%7D",
            ),
        )
        .await;
    assert_eq!(retried.status, 303, "{}", retried.text());
    assert_eq!(latest_inputs(&other)["to"], "ops@example.com");
    assert_eq!(
        harness.store.run(&other).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
}

/// Issue 42, point 8: a retry the server refuses for what was typed (inputs that are not a
/// JSON object) answers the run page again, with the refusal beside the form and the note and
/// inputs as typed; nothing is decided.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_retry_answers_the_run_page_with_what_was_typed() {
    let harness = Harness::new();
    let run = harness.attention_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let refused = harness
        .call(
            "POST",
            &format!("/runs/{}/attend", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                "decision=retry&step=send&attempt=1&note=typed+note&inputs=%7Bnot+json".to_owned(),
            )),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    let text = refused.text();
    for seen in [
        "id=\"attention-error\"",
        "aria-invalid=\"true\"",
        ">typed note</textarea>",
        ">{not json</textarea>",
        "<nav",
        "Retry send",
    ] {
        assert!(text.contains(seen), "{seen:?}: {text}");
    }
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    // A decision the form does not know is a mistake too, answered the same way.
    let unknown = harness
        .call(
            "POST",
            &format!("/runs/{}/attend", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                "decision=approve&note=x".to_owned(),
            )),
        )
        .await;
    assert_eq!(unknown.status, 400);
    assert!(unknown.text().contains("id=\"attention-error\""));
}

/// A retry refused because the run moved on (the attempt it was typed for is no longer the
/// one waiting) is said on its own: the inputs typed for the old attempt are not put beside
/// the form of the new one (issue 42, point 8).
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_refused_for_an_older_attempt_is_not_put_beside_the_newer_one() {
    let harness = Harness::new();
    let run = harness.attention_run_of("acct", FLAKY);
    let member = harness.credentials(Caller::Person(Role::Member));
    let first = harness
        .call(
            "POST",
            &retry_path(&run, "flaky", 1),
            &member,
            note("try again"),
        )
        .await;
    assert_eq!(
        first.json()["status"],
        "needs_attention",
        "{}",
        first.text()
    );
    let late = harness
        .call(
            "POST",
            &format!("/runs/{}/attend", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                "decision=retry&step=flaky&attempt=1&note=for+the+first&inputs=%7B%22to%22%3A+%22old%40example.com%22%7D"
                    .to_owned(),
            )),
        )
        .await;
    let text = late.text();
    assert_eq!(late.status, 409, "{text}");
    assert!(text.contains("id=\"refused-error\""), "{text}");
    assert!(
        !text.contains("old@example.com") && !text.contains("for the first"),
        "{text}"
    );
    assert!(
        text.contains("value=\"2\""),
        "the form is the newer attempt's: {text}"
    );
}
