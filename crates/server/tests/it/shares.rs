//! G24: a share link shows one run's scrubbed record, read-only; every failed fetch (unknown,
//! expired, revoked, malformed, wrong length) is the same 404, byte for byte.

use auth::{Role, SHARE_NOT_FOUND_BODY, ShareToken};

use crate::support::{Answer, Caller, Credentials, Harness};

async fn create_share(harness: &Harness, run: &str, credentials: &Credentials) -> (String, String) {
    let created = harness
        .call(
            "POST",
            &format!("/api/runs/{run}/shares"),
            credentials,
            None,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    (
        body["id"].as_str().unwrap().to_owned(),
        body["path"].as_str().unwrap().to_owned(),
    )
}

async fn fetch(harness: &Harness, path: &str) -> Answer {
    harness.call("GET", path, &Credentials::None, None).await
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_share_link_shows_one_run_read_only() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let (_, path) = create_share(&harness, run.as_str(), &member).await;
    let shown = fetch(&harness, &path).await;
    assert_eq!(shown.status, 200, "{}", shown.text());
    assert!(shown.text().contains(run.as_str()));
    assert!(shown.text().contains("waiting_approval"));
    assert!(!shown.text().contains("<form"), "a shared run is read-only");
    let listed = harness.call("GET", "/api/shares", &member, None).await;
    assert_eq!(listed.status, 200);
    assert!(
        !listed.text().contains(path.trim_start_matches("/s/")),
        "the token is shown once, never listed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_every_failed_share_fetch_is_the_same_404_byte_for_byte() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let (revoked_id, revoked_path) = create_share(&harness, run.as_str(), &member).await;
    assert_eq!(fetch(&harness, &revoked_path).await.status, 200);
    let revoke = harness
        .call(
            "DELETE",
            &format!("/api/shares/{revoked_id}"),
            &member,
            None,
        )
        .await;
    assert_eq!(revoke.status, 204, "{}", revoke.text());
    let (_, expired_path) = create_share(&harness, run.as_str(), &member).await;
    harness.clock.advance(7 * 24 * 60 * 60 * 1000);
    let (unknown_token, _) = ShareToken::generate().unwrap();
    let unknown_path = format!("/s/{}", unknown_token.reveal_once());
    let failures = [
        ("unknown", unknown_path.clone()),
        ("expired", expired_path),
        ("revoked", revoked_path),
        ("malformed", format!("/s/{}", "!".repeat(32))),
        ("malformed percent", format!("/s/{}%zz", "A".repeat(29))),
        ("too short", format!("/s/{}", &unknown_path[3..34])),
        ("too long", format!("{unknown_path}A")),
        ("empty", "/s/".to_owned()),
        ("extra segment", format!("{unknown_path}/more")),
    ];
    let reference = fetch(&harness, &unknown_path).await;
    assert_eq!(reference.status, 404);
    assert_eq!(reference.body, SHARE_NOT_FOUND_BODY.as_bytes());
    for (label, path) in failures {
        let answer = fetch(&harness, &path).await;
        assert_eq!(answer, reference, "{label}: {path}");
    }
    // A signed-in caller gets exactly the same bytes.
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let answer = harness.call("GET", &unknown_path, &owner, None).await;
    assert_eq!(answer, reference);
}

/// G24, issue 16 §5: "include tool results" is the link maker's choice, stored with the link,
/// listed, and recorded in the audit log; a link made without a body includes none.
#[tokio::test(flavor = "multi_thread")]
async fn g24_include_tool_results_is_chosen_stored_listed_and_audited() {
    use storage::AuditLog;
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let (plain, _) = create_share(&harness, run.as_str(), &member).await;
    let created = harness
        .call(
            "POST",
            &format!("/api/runs/{}/shares", run.as_str()),
            &member,
            Some((
                "application/json",
                serde_json::json!({"include_tool_results": true}).to_string(),
            )),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let with = created.json()["id"].as_str().unwrap().to_owned();
    let listed = harness
        .call("GET", "/api/shares", &member, None)
        .await
        .json();
    let included = |id: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|link| link["id"] == id)
            .unwrap()["include_tool_results"]
            .clone()
    };
    assert_eq!(included(&plain), false);
    assert_eq!(included(&with), true);
    let audited: Vec<serde_json::Value> = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == "share.create")
        .map(|entry| entry.detail)
        .collect();
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert!(
        audited.iter().any(
            |detail| detail["share"] == with.as_str() && detail["include_tool_results"] == true
        )
    );
    assert!(
        audited
            .iter()
            .any(|detail| detail["share"] == plain.as_str()
                && detail["include_tool_results"] == false)
    );
}

/// Issue 42, point 10: a share page shows when the run started and last changed, how long it
/// and each step took, and what each step produced, scrubbed as the run page is.
#[tokio::test(flavor = "multi_thread")]
async fn a_share_page_shows_dates_durations_and_outputs() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let (_, path) = create_share(&harness, run.as_str(), &member).await;
    let text = fetch(&harness, &path).await.text();
    for seen in [
        "<dt>Started</dt><dd>2027-01-15 08:00:00 UTC</dd>",
        " so far</dd>",
        "id=\"shared-step-prepare\"",
        "succeeded, attempt 1, ",
        // The harness's steps answer their own name.
        "&#34;step&#34;: &#34;prepare&#34;",
    ] {
        assert!(text.contains(seen), "{seen:?}: {text}");
    }
    assert!(
        !text.contains("shared-step-ship"),
        "a step not begun is not listed: {text}"
    );
}

/// Issue 42, point 6: the share links list names the run (its workflow and number) and who made
/// each link, not ids.
#[tokio::test(flavor = "multi_thread")]
async fn the_share_links_list_names_the_run_and_who_made_each_link() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let (id, _) = create_share(&harness, run.as_str(), &owner).await;
    let page = harness.call("GET", "/shares", &owner, None).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(text.contains(">gated #1</a>"), "{text}");
    assert!(text.contains("made by The owner"), "{text}");
    assert!(!text.contains(&format!("<code>{id}</code>")), "{text}");
    let listed = harness
        .call("GET", "/api/shares", &owner, None)
        .await
        .json();
    assert_eq!(listed[0]["created_by"], "The owner", "{listed}");
}
