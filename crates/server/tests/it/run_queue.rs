//! The API answers at once (issue 38): a start, a decision, a retry or a stop is recorded and
//! its step queued; `202 Accepted` with the run's address in `Location`; a worker runs the
//! steps, and the run's page reads its progress.

use std::sync::Arc;
use std::time::{Duration, Instant};

use auth::Role;

use crate::support::{Caller, Harness};

/// Reads the run until `done` holds of its detail (bounded: 20 s).
async fn until(
    harness: &Harness,
    run: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let reader = harness.credentials(Caller::Person(Role::Viewer));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let detail = harness
            .call("GET", &format!("/api/runs/{run}"), &reader, None)
            .await
            .json();
        if done(&detail) {
            return detail;
        }
        assert!(
            Instant::now() < deadline,
            "the run never got there: {detail}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn worker(harness: &Harness) -> worker::Handle {
    worker::run(
        harness.store.clone(),
        Arc::new(worker::engine_jobs::EngineJobs {
            engine: harness.engine.clone(),
        }),
        worker::holder::this_process().unwrap(),
        worker::Options {
            poll: Duration::from_millis(10),
            ..worker::Options::for_this_machine()
        },
        worker::Shutdown::new(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_and_a_decision_answer_202_at_once_and_a_worker_runs_the_steps() {
    let harness = Harness::queued();
    let member = harness.credentials(Caller::Person(Role::Member));
    let started = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some(("application/json", r#"{"workflow":"gated"}"#.to_owned())),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text());
    let body = started.json();
    let run = body["run"].as_str().unwrap().to_owned();
    assert_eq!(started.header("location"), Some(format!("/api/runs/{run}")));
    assert_eq!(
        body["status"], "running",
        "answered before any step ran: {body}"
    );
    assert_eq!(body["steps"], serde_json::json!([]), "{body}");

    let worker = worker(&harness);
    let parked = until(&harness, &run, |detail| {
        detail["status"] == "waiting_approval"
    })
    .await;
    assert_eq!(parked["waiting_at"], "ship");
    let approved = harness
        .call(
            "POST",
            &format!("/api/runs/{run}/steps/ship/approve"),
            &member,
            Some(("application/json", r#"{"note":"looks right"}"#.to_owned())),
        )
        .await;
    assert_eq!(approved.status, 202, "{}", approved.text());
    assert_eq!(
        approved.header("location"),
        Some(format!("/api/runs/{run}"))
    );
    let done = until(&harness, &run, |detail| detail["status"] == "succeeded").await;
    assert_eq!(done["steps"].as_array().unwrap().len(), 2, "{done}");
    let report = worker.stop();
    assert_eq!(report.jobs, 2, "one job per step attempt: {report:?}");
    assert_eq!(report.panicked, 0);
}

/// The run page of a run that is running says for how long, and carries what the page's
/// script counts on from (issue 38: "the run page shows ... its elapsed time").
#[tokio::test(flavor = "multi_thread")]
async fn a_running_runs_page_says_how_long_it_has_run() {
    let harness = Harness::queued();
    let member = harness.credentials(Caller::Person(Role::Member));
    let started = harness
        .call(
            "POST",
            "/api/runs",
            &member,
            Some(("application/json", r#"{"workflow":"gated"}"#.to_owned())),
        )
        .await;
    let run = started.json()["run"].as_str().unwrap().to_owned();
    harness.clock.advance(75_000);
    let viewer = harness.session_for(&crate::support::person_id(Role::Viewer));
    let page = harness
        .call("GET", &format!("/runs/{run}"), &viewer, None)
        .await;
    assert_eq!(page.status, 200, "{}", page.text());
    let body = page.text();
    assert!(body.contains("running for 1 min 15 s"), "{body}");
    assert!(body.contains("data-running-since=\""), "{body}");
}
