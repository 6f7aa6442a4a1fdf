//! The console's run pages (G23, G25): the run page shows the timeline and, to a member, the
//! gate's decision form with a note; approvals list waiting gates; the audit log shows the
//! account's entries only.

use auth::Role;

use crate::support::{Caller, Credentials, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn g23_run_page_shows_the_timeline_and_a_members_decision_form() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = format!("/runs/{}", run.as_str());
    let member = harness.credentials(Caller::Person(Role::Member));
    let page = harness.call("GET", &path, &member, None).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(
        text.contains("The run waits for a person&#39;s decision before “ship”")
            || text.contains("The run waits for a person's decision before “ship”"),
        "the timeline is in words: {text}"
    );
    // Routes and commands are folded away under "For scripts" (issue 42, point 5); the main
    // view names things in words, and offers no tool results on a run without agents.
    let (main_view, for_scripts) = text.split_once("id=\"for-scripts\"").unwrap();
    assert!(
        for_scripts.contains("/events\">The run's events as JSON"),
        "{for_scripts}"
    );
    assert!(for_scripts.contains("steps/ship/approve"), "{for_scripts}");
    let main_view = main_view.split_once("<main").unwrap().1;
    assert!(!main_view.contains("/api/"), "{main_view}");
    assert!(!main_view.contains('`'), "{main_view}");
    assert!(main_view.contains("the gate “ship”"), "{main_view}");
    assert!(!text.contains("Include tool results"));
    assert!(text.contains(&format!(
        "action=\"/runs/{}/steps/ship/decide\"",
        run.as_str()
    )));
    assert!(text.contains("name=\"csrf\""));
    for script in text.split("<script").skip(1) {
        assert!(
            script.trim_start().starts_with("src=\"/static/"),
            "no inline script under the CSP: {text}"
        );
    }
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let viewer_page = harness.call("GET", &path, &viewer, None).await;
    assert_eq!(viewer_page.status, 200);
    assert!(
        !viewer_page.text().contains("/decide\""),
        "a viewer cannot decide"
    );
    let Credentials::Session { cookie, csrf, .. } = &member else {
        panic!("a person has a session");
    };
    let decided = harness
        .send(
            axum::http::Request::builder()
                .method("POST")
                .uri(format!("/runs/{}/steps/ship/decide", run.as_str()))
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(axum::body::Body::from(format!(
                    "csrf={csrf}&decision=approve&note=ready+to+ship"
                )))
                .unwrap(),
        )
        .await;
    assert_eq!(decided.status, 303, "{}", decided.text());
    assert_eq!(decided.header("location").as_deref(), Some(path.as_str()));
    let after = harness.call("GET", &path, &member, None).await;
    assert!(after.text().contains("ready to ship"), "{}", after.text());
    assert!(after.text().contains("succeeded"));
}

#[tokio::test(flavor = "multi_thread")]
async fn g23_approvals_list_the_accounts_waiting_gates_only() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let listed = harness.call("GET", "/api/approvals", &member, None).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()[0]["run"], run.as_str());
    assert_eq!(listed.json()[0]["step"], "ship");
    let page = harness.call("GET", "/approvals", &member, None).await;
    assert!(page.text().contains(run.as_str()));
    let stranger = harness.credentials(Caller::StrangerPerson);
    let theirs = harness.call("GET", "/api/approvals", &stranger, None).await;
    assert_eq!(theirs.json(), serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_audit_log_shows_the_accounts_entries_only() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let entries = harness.call("GET", "/api/audit", &admin, None).await;
    assert_eq!(entries.status, 200, "{}", entries.text());
    let actions: Vec<String> = entries.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_owned())
        .collect();
    assert!(actions.contains(&"run.start".to_owned()), "{actions:?}");
    let stranger = harness.credentials(Caller::StrangerPerson);
    let theirs = harness.call("GET", "/api/audit", &stranger, None).await;
    assert_eq!(theirs.status, 200);
    assert!(!theirs.text().contains(run.as_str()));
}

/// G26: the home page links to the pages the role may open, and every link opens.
#[tokio::test(flavor = "multi_thread")]
async fn g26_home_links_only_to_pages_the_role_may_open() {
    let harness = Harness::new();
    for role in Role::ALL {
        let who = harness.credentials(Caller::Person(role));
        let home = harness.call("GET", "/", &who, None).await;
        assert_eq!(home.status, 200);
        let text = home.text();
        let links: Vec<&str> = text
            .split("<a href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(links.contains(&"/workflows"), "{role:?}: {links:?}");
        assert_eq!(links.contains(&"/audit"), role >= Role::Admin, "{role:?}");
        for link in links {
            let answer = harness.call("GET", link, &who, None).await;
            assert_eq!(answer.status, 200, "{role:?} {link}: {}", answer.text());
        }
    }
}

/// The run page's live stream (issue 14): it checks its session again at least every 30 s and
/// closes when the session is revoked; it carries no record text, only event names.
#[tokio::test(flavor = "multi_thread")]
async fn g26_a_live_run_stream_closes_when_its_session_is_revoked() {
    use tower::ServiceExt;

    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let response = harness
        .app
        .clone()
        .oneshot(crate::support::request(
            "GET",
            &format!("/runs/{}/stream", run.as_str()),
            &member,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok()),
        Some("text/event-stream")
    );
    let revoked = harness.call("DELETE", "/api/sessions", &member, None).await;
    assert!(revoked.status < 300, "{}", revoked.text());
    let started = std::time::Instant::now();
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(45),
        axum::body::to_bytes(response.into_body(), 64 * 1024),
    )
    .await
    .expect("the stream did not close within 45 s of the revocation")
    .unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(
        started.elapsed() <= std::time::Duration::from_secs(31),
        "closed after {:?}",
        started.elapsed()
    );
    assert!(text.contains("event: closed"), "{text}");
    assert!(text.contains("Your session has ended"), "{text}");
    assert!(
        !text.contains("ship"),
        "no record text in the stream: {text}"
    );
    // A key never opens a live page (people only), and another account's run is not found.
    let key = harness.credentials(Caller::Key(Role::Admin));
    let by_key = harness
        .call("GET", &format!("/runs/{}/stream", run.as_str()), &key, None)
        .await;
    assert_eq!(by_key.status, 403);
    let stranger = harness.credentials(Caller::StrangerPerson);
    let theirs = harness
        .call(
            "GET",
            &format!("/runs/{}/stream", run.as_str()),
            &stranger,
            None,
        )
        .await;
    assert_eq!(theirs.status, 404);
}

/// Reads the live stream's body until `wanted` arrives or `within` passes; what arrived.
async fn stream_until(
    body: &mut axum::body::Body,
    wanted: &str,
    within: std::time::Duration,
) -> String {
    use http_body_util::BodyExt;

    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + within;
    while !seen.contains(wanted) {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    seen.push_str(&String::from_utf8_lossy(data));
                }
            }
            Ok(_) | Err(_) => break,
        }
    }
    seen
}

/// The live stream reads only the events after the newest one its page showed (issue 14): a
/// stream opened at the run's newest event stays quiet until a new one is appended, then says
/// `changed` once; a stream opened `?after=` an older event says `changed` at once.
#[tokio::test(flavor = "multi_thread")]
async fn g25_a_live_stream_reports_only_events_after_the_one_its_page_showed() {
    use storage::{EventLog, NewEvent, Timestamp};
    use tower::ServiceExt;

    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let newest = harness.store.last_event_seq(&run).unwrap();
    assert!(newest > 1, "a parked run has events");
    let page = harness
        .call("GET", &format!("/runs/{}", run.as_str()), &member, None)
        .await;
    assert!(
        page.text()
            .contains(&format!("/runs/{}/stream?after={newest}", run.as_str())),
        "the page names the newest event it shows: {}",
        page.text()
    );
    let open = |path: String| {
        let app = harness.app.clone();
        let request = crate::support::request("GET", &path, &member, None);
        async move { app.oneshot(request).await.unwrap().into_body() }
    };
    let mut at_newest = open(format!("/runs/{}/stream?after={newest}", run.as_str())).await;
    let mut from_older = open(format!(
        "/runs/{}/stream?after={}",
        run.as_str(),
        newest - 1
    ))
    .await;
    let mut without_after = open(format!("/runs/{}/stream", run.as_str())).await;

    let older = stream_until(
        &mut from_older,
        "event: changed",
        std::time::Duration::from_secs(5),
    )
    .await;
    assert!(older.contains("event: changed"), "{older:?}");
    let quiet = stream_until(
        &mut at_newest,
        "event: changed",
        std::time::Duration::from_millis(2_500),
    )
    .await;
    assert!(!quiet.contains("event:"), "nothing new yet: {quiet:?}");

    let redactor = redact::RunSecrets::collect(
        &run,
        &ids::AccountId::parse("acct").unwrap(),
        harness.engine.scrub_sets(),
        &redact::SecretRequest::default(),
    )
    .unwrap()
    .redactor();
    harness
        .store
        .append(
            &run,
            &NewEvent {
                kind: "step.printed",
                version: engine::journal::VERSION,
                payload: redactor.scrub_json(&serde_json::json!({
                    "step": "ship", "attempt": 1, "stream": "stdout",
                    "text": "", "printed_bytes": 0
                })),
                at: Timestamp(1),
            },
        )
        .unwrap();
    for (name, body) in [
        ("opened at the newest", &mut at_newest),
        ("opened without after", &mut without_after),
    ] {
        let moved = stream_until(body, "event: changed", std::time::Duration::from_secs(5)).await;
        assert!(moved.contains("event: changed"), "{name}: {moved:?}");
        assert_eq!(moved.matches("event:").count(), 1, "{name}: {moved:?}");
    }
}

/// Approvals waiting for me are read one page at a time from the store's waiting runs
/// (issue 14), newest first, with a link to the older ones; the API lists them all.
#[tokio::test(flavor = "multi_thread")]
async fn g23_approvals_are_paged_and_every_waiting_gate_is_on_a_page() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let runs: Vec<String> = (0..53)
        .map(|_| harness.parked_run("acct").to_string())
        .collect();
    let rows = |text: &str| -> Vec<String> {
        text.split("<td><a href=\"/runs/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next().map(str::to_owned))
            .collect()
    };
    let first = harness.call("GET", "/approvals", &member, None).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let first_rows = rows(&first.text());
    assert_eq!(first_rows.len(), 50, "{}", first.text());
    let older = first
        .text()
        .split("<a href=\"/approvals?after=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|after| format!("/approvals?after={}", after.replace("&#38;", "&")))
        .expect("a link to the older waiting runs");
    let second = harness.call("GET", &older, &member, None).await;
    assert_eq!(second.status, 200, "{}", second.text());
    let second_rows = rows(&second.text());
    assert_eq!(second_rows.len(), 3, "{}", second.text());
    assert!(second.text().contains("<a href=\"/approvals\">Newest</a>"));
    let mut seen: Vec<String> = first_rows.into_iter().chain(second_rows).collect();
    seen.sort();
    let mut expected = runs;
    expected.sort();
    assert_eq!(seen, expected, "every waiting gate once");
    let listed = harness.call("GET", "/api/approvals", &member, None).await;
    assert_eq!(listed.json().as_array().map(Vec::len), Some(53));
}

/// Issue 42, point 3: the home page shows what needs me first: the gates I may decide (a
/// viewer decides none, and is shown none), the runs that failed or wait for a person, and the
/// recent runs, each leading to its run.
#[tokio::test(flavor = "multi_thread")]
async fn the_home_page_shows_what_needs_me_first() {
    let harness = Harness::new();
    let parked = harness.parked_run("acct");
    let attention = harness.attention_run("acct");
    let member = harness
        .call(
            "GET",
            "/",
            &harness.credentials(Caller::Person(Role::Member)),
            None,
        )
        .await;
    assert_eq!(member.status, 200, "{}", member.text());
    let text = member.text();
    let (waiting, rest) = text.split_once("id=\"home-failing\"").unwrap();
    assert!(
        waiting.contains(&format!(
            "href=\"/runs/{}#gate\">gated #1 waits for a decision at ship",
            parked.as_str()
        )),
        "{waiting}"
    );
    let (failing, recent) = rest.split_once("id=\"home-recent\"").unwrap();
    assert!(
        failing.contains(&format!("href=\"/runs/{}\"", attention.as_str())),
        "{failing}"
    );
    assert!(
        !failing.contains(parked.as_str()),
        "a waiting gate is no failure: {failing}"
    );
    for run in [&parked, &attention] {
        assert!(recent.contains(run.as_str()), "{recent}");
    }
    let viewer = harness
        .call(
            "GET",
            "/",
            &harness.credentials(Caller::Person(Role::Viewer)),
            None,
        )
        .await
        .text();
    assert!(!viewer.contains("Waiting for your decision"), "{viewer}");
    assert!(viewer.contains(attention.as_str()));
}

/// Issue 42, point 6: invite, approve and share links read whole (the server knows its
/// address), each with a copy button the console's script shows.
#[tokio::test(flavor = "multi_thread")]
async fn links_people_send_on_read_whole_with_a_copy_button() {
    let harness = Harness::new();
    harness
        .state
        .set_public_base("https://stepward.example.test/");
    let run = harness.parked_run("acct");
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let approvals = harness.call("GET", "/approvals", &owner, None).await.text();
    let whole = format!(
        "https://stepward.example.test/approve/{}/ship/1/",
        run.as_str()
    );
    assert!(
        approvals.contains(&format!("href=\"{whole}")),
        "{approvals}"
    );
    assert!(
        approvals.contains(&format!("data-copy=\"{whole}")),
        "{approvals}"
    );
    assert!(
        approvals.contains("src=\"/static/console.js\""),
        "{approvals}"
    );
    let page = harness
        .call("GET", &format!("/runs/{}", run.as_str()), &owner, None)
        .await
        .text();
    assert!(
        page.contains(&format!("id=\"approve-link\">{whole}")),
        "{page}"
    );
    let csrf = match &owner {
        Credentials::Session { csrf, .. } => csrf.clone(),
        _ => unreachable!(),
    };
    let invited = harness
        .call(
            "POST",
            "/people",
            &owner,
            Some((
                "application/x-www-form-urlencoded",
                format!("csrf={csrf}&display_name=Bo&email=bo%40example.test&role=member"),
            )),
        )
        .await;
    let text = invited.text();
    assert!(
        text.contains("<code id=\"shown-once\">https://stepward.example.test/welcome/"),
        "{text}"
    );
    assert!(
        text.contains(
            "class=\"secondary copy\" data-copy=\"https://stepward.example.test/welcome/"
        ),
        "{text}"
    );
}

/// Issue 42, point 3: the runs list leads with the workflow's name and the run's number, and
/// says how long each run took and where one waits.
#[tokio::test(flavor = "multi_thread")]
async fn the_runs_list_says_how_long_and_where_a_run_waits() {
    let harness = Harness::new();
    let parked = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    harness.clock.advance(90_000);
    let text = harness.call("GET", "/runs", &member, None).await.text();
    assert!(
        text.contains(&format!(
            "<a href=\"/runs/{}\">gated #1</a>",
            parked.as_str()
        )),
        "{text}"
    );
    assert!(text.contains("at ship, for a decision"), "{text}");
    assert!(text.contains("<td>1 min 30 s so far</td>"), "{text}");
    // When it started, in words, with the exact time on hover: UTC, the zone named (the
    // console's script puts the viewer's zone there).
    assert!(
        text.contains(
            "<time datetime=\"2027-01-15T08:00:00Z\" title=\"2027-01-15 08:00:00 UTC\" \
             data-local>1 min ago</time>"
        ),
        "{text}"
    );
}

/// Issue 42, point 3: a workflow's page shows its steps' code, the run form before the reach
/// panel, and its recent runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_workflows_page_shows_its_code_a_run_form_near_the_top_and_its_recent_runs() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let text = harness
        .call("GET", "/workflows/gated", &member, None)
        .await
        .text();
    assert!(text.contains("<summary>Code</summary>"), "{text}");
    assert!(
        text.contains("return {&#34;ready&#34;: True}")
            || text.contains("return {&quot;ready&quot;: True}"),
        "{text}"
    );
    let start = text.find("id=\"start\"").unwrap();
    let reach = text.find("id=\"reach\"").unwrap();
    assert!(start < reach, "the run form comes before the reach panel");
    let recent = text.split_once("id=\"recent\"").unwrap().1;
    assert!(
        recent.contains(&format!("href=\"/runs/{}\"", run.as_str())),
        "{recent}"
    );
}
