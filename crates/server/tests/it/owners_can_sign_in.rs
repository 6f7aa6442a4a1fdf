//! Issue 11, finding 8: no account is left with an owner who cannot sign in. Ownership goes
//! only to a person who has signed in at least once; an owner or admin re-issues the one-time
//! link of a person who never signed in (the old link dies, and the re-issue is audited).

use auth::Role;
use storage::AuditLog;
use storage::people::{PeopleStore, RoleName};

use crate::support::{Answer, Caller, Credentials, Harness, person_id};

fn json(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

fn form_guard(page: &Answer) -> (String, String) {
    let cookie = page.session_cookie().unwrap();
    let text = page.text();
    let marker = "name=\"csrf\" value=\"";
    let start = text.find(marker).unwrap() + marker.len();
    let end = start + text[start..].find('"').unwrap();
    (cookie, text[start..end].to_owned())
}

/// Invites a viewer as `by` and answers (person id, sign-in path).
async fn invite(harness: &Harness, by: &Credentials, email: &str) -> (String, String) {
    let invited = harness
        .call(
            "POST",
            "/api/people",
            by,
            json(serde_json::json!({"display_name": "Heir", "email": email, "role": "viewer"})),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.text());
    let body = invited.json();
    (
        body["person_id"].as_str().unwrap().to_owned(),
        body["sign_in_path"].as_str().unwrap().to_owned(),
    )
}

/// Sets a password through the one-time link, as the invited person does.
async fn redeem(harness: &Harness, path: &str) -> u16 {
    let form = harness.call("GET", path, &Credentials::None, None).await;
    if form.status != 200 {
        return form.status;
    }
    let (cookie, csrf) = form_guard(&form);
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(path)
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(format!(
            "csrf={csrf}&password=a+long+enough+phrase&password_again=a+long+enough+phrase"
        )))
        .unwrap();
    harness.send(request).await.status
}

fn role_of(harness: &Harness, person: &str) -> RoleName {
    harness.store.person(person).unwrap().unwrap().role
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_ownership_goes_only_to_a_person_who_has_signed_in() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let (heir, path) = invite(&harness, &owner, "heir@example.test").await;
    let refused = harness
        .call(
            "POST",
            "/api/ownership",
            &owner,
            json(serde_json::json!({"new_owner": heir})),
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(refused.text().contains("signed in"), "{}", refused.text());
    assert_eq!(role_of(&harness, &heir), RoleName::Viewer);
    assert_eq!(role_of(&harness, &person_id(Role::Owner)), RoleName::Owner);
    // Once the heir has signed in (set a password with the link), the transfer goes through.
    assert_eq!(redeem(&harness, &path).await, 303);
    let handed = harness
        .call(
            "POST",
            "/api/ownership",
            &owner,
            json(serde_json::json!({"new_owner": heir})),
        )
        .await;
    assert_eq!(handed.status, 204, "{}", handed.text());
    assert_eq!(role_of(&harness, &heir), RoleName::Owner);
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_an_owner_or_admin_reissues_the_link_of_a_person_who_never_signed_in() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let (heir, first) = invite(&harness, &owner, "late@example.test").await;
    let mut paths = Vec::new();
    for by in [&admin, &owner] {
        let reissued = harness
            .call(
                "POST",
                &format!("/api/people/{heir}/sign-in-link"),
                by,
                None,
            )
            .await;
        assert_eq!(reissued.status, 201, "{}", reissued.text());
        let path = reissued.json()["sign_in_path"].as_str().unwrap().to_owned();
        assert!(path.starts_with("/welcome/"));
        paths.push(path);
    }
    // Every earlier link died with each re-issue; the last one works.
    for dead in [&first, &paths[0]] {
        let answer = harness.call("GET", dead, &Credentials::None, None).await;
        assert_eq!(answer.status, 404, "{dead}");
    }
    let audited = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == "person.sign_in_link_reissue")
        .count();
    assert_eq!(audited, 2);
    // Not for a person who has signed in, not by a key, not by a viewer.
    let signed_in = harness
        .call(
            "POST",
            &format!("/api/people/{}/sign-in-link", person_id(Role::Member)),
            &owner,
            None,
        )
        .await;
    assert_eq!(signed_in.status, 409, "{}", signed_in.text());
    for caller in [Caller::Key(Role::Admin), Caller::Person(Role::Viewer)] {
        let refused = harness
            .call(
                "POST",
                &format!("/api/people/{heir}/sign-in-link"),
                &harness.credentials(caller),
                None,
            )
            .await;
        assert_eq!(refused.status, 403, "{caller:?}: {}", refused.text());
    }
    assert_eq!(redeem(&harness, &paths[1]).await, 303);
    // The console offers it on the people page for a person who never signed in.
    let (_, _) = invite(&harness, &owner, "later@example.test").await;
    let people = harness.call("GET", "/people", &owner, None).await;
    assert!(
        people.text().contains("/sign-in-link\""),
        "{}",
        people.text()
    );
}
