//! Workflow versions on the console (issue 17 §3): the workflow page lists the newest, a page
//! lists them all (number, author, time; the assistant's with the person who accepted it), a
//! version's text and the diff between two are shown holding connection references only: a
//! value that is the account's is never on these pages.

use auth::Role;
use redact::SecretValue;
use serde_json::json;

use crate::support::{ACCOUNT, Caller, FETCH, Harness, person_id};

/// G19: the console's version pages name who wrote each version and show texts and diffs
/// with connection references only; a text holding what became a value of the account after
/// it was saved is shown masked on every page.
#[tokio::test(flavor = "multi_thread")]
async fn g19_the_versions_pages_list_show_and_diff_with_connection_references_only() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let later = "sk_live_DiffPageValue7Kq3Zr9Tm";
    let save = |text: String| {
        let member = &member;
        let harness = &harness;
        async move {
            let saved = harness
                .call(
                    "PUT",
                    "/api/workflows/fetch",
                    member,
                    Some((
                        "application/json",
                        json!({"text": text, "message": "from the test"}).to_string(),
                    )),
                )
                .await;
            assert_eq!(saved.status, 201, "{}", saved.text());
        }
    };
    save(FETCH.to_owned()).await;
    let with_later = FETCH.replace("Summarizes them.", &format!("Summarizes them for {later}."));
    save(with_later.clone()).await;
    // The assistant's version, accepted by the member (as an accepted repair saves it).
    harness
        .engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "fetch",
            &with_later.replace("return orders", "return list(orders)"),
            &workspace::Author::Assistant {
                accepted_by: person_id(Role::Member),
            },
            "workflow fetch: a repair written by the assistant (fake, model m)",
        )
        .unwrap();
    // Only now does the text become a value of the account.
    harness
        .vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "LATER_TOKEN",
            SecretValue::new(later.into()),
        )
        .unwrap();
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let page = |path: &'static str| {
        let viewer = &viewer;
        let harness = &harness;
        async move {
            let answer = harness.call("GET", path, viewer, None).await;
            assert_eq!(answer.status, 200, "{path}: {}", answer.text());
            let text = answer.text();
            assert!(!text.contains(later), "{path} holds the value: {text}");
            text
        }
    };
    let list = page("/workflows/fetch/versions").await;
    // The harness's account holds `fetch` as version 1; the test's saves are 2, 3 and 4.
    for seen in [
        "version 4",
        "version 3",
        "version 2",
        "the assistant, accepted by The member (member@example.test)",
        "<td>The member (member@example.test)</td>",
        "diff from version 3",
    ] {
        assert!(list.contains(seen), "the list shows {seen:?}: {list}");
    }
    let shown = page("/workflows/fetch/versions/3").await;
    assert!(shown.contains("connections: [payments]"), "{shown}");
    assert!(shown.contains("Summarizes them for "), "{shown}");
    let diff = page("/workflows/fetch/diff?from=2&to=4").await;
    assert!(diff.contains("class=\"diff-added\""), "{diff}");
    assert!(diff.contains("return list(orders)"), "{diff}");
    assert!(diff.contains("class=\"diff-removed\""), "{diff}");
    let newest = page("/workflows/fetch/diff").await;
    assert!(newest.contains("version 3 to 4"), "{newest}");
    let workflow = page("/workflows/fetch").await;
    assert!(workflow.contains("id=\"versions\""), "{workflow}");
    assert!(workflow.contains("All 4 versions"), "{workflow}");
    // A version that does not exist is the ordinary 404.
    let missing = harness
        .call("GET", "/workflows/fetch/versions/99", &viewer, None)
        .await;
    assert_eq!(missing.status, 404);
}
