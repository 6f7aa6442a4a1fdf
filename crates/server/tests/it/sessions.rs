//! G26: sessions are server-side and revocable; a revocation takes effect on the very next
//! request, whether the person revokes one, all, or an admin revokes them.

use auth::Role;

use crate::support::{Caller, Credentials, Harness, person_id};

fn session_id(credentials: &Credentials) -> String {
    match credentials {
        Credentials::Session { session_id, .. } => session_id.clone(),
        Credentials::None | Credentials::Key { .. } => panic!("not a session"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_revoking_own_session_takes_effect_on_the_next_request() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let other_session = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        200
    );
    let listed = harness.call("GET", "/api/sessions", &member, None).await;
    assert_eq!(listed.status, 200);
    let sessions = listed.json();
    assert_eq!(sessions.as_array().unwrap().len(), 2);
    let revoked = harness
        .call(
            "DELETE",
            &format!("/api/sessions/{}", session_id(&other_session)),
            &member,
            None,
        )
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text());
    assert_eq!(
        harness
            .call("GET", "/api/runs", &other_session, None)
            .await
            .status,
        401
    );
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        200
    );
    let all = harness.call("DELETE", "/api/sessions", &member, None).await;
    assert_eq!(all.status, 204);
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        401
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_person_cannot_revoke_someone_elses_session() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let answer = harness
        .call(
            "DELETE",
            &format!("/api/sessions/{}", session_id(&viewer)),
            &member,
            None,
        )
        .await;
    assert_eq!(answer.status, 404);
    assert_eq!(
        harness.call("GET", "/api/runs", &viewer, None).await.status,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_admin_revokes_all_sessions_of_a_person() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let member_sessions = [
        harness.credentials(Caller::Person(Role::Member)),
        harness.credentials(Caller::Person(Role::Member)),
    ];
    let answer = harness
        .call(
            "DELETE",
            &format!("/api/people/{}/sessions", person_id(Role::Member)),
            &admin,
            None,
        )
        .await;
    assert_eq!(answer.status, 204, "{}", answer.text());
    for session in &member_sessions {
        assert_eq!(
            harness.call("GET", "/api/runs", session, None).await.status,
            401
        );
    }
    // An admin does not end the owner's sessions.
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let refused = harness
        .call(
            "DELETE",
            &format!("/api/people/{}/sessions", person_id(Role::Owner)),
            &admin,
            None,
        )
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        harness.call("GET", "/api/runs", &owner, None).await.status,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_idle_session_expires() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        200
    );
    harness
        .clock
        .advance(i64::try_from(auth::SessionLifetime::DEFAULT.idle_millis).unwrap());
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        401
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_state_change_with_a_session_needs_the_csrf_token() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let Credentials::Session { cookie, .. } = &member else {
        panic!("a person has a session");
    };
    for csrf in [None, Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")] {
        let mut builder = axum::http::Request::builder()
            .method("DELETE")
            .uri("/api/sessions")
            .header("cookie", cookie);
        if let Some(csrf) = csrf {
            builder = builder.header("x-csrf-token", csrf);
        }
        let answer = harness
            .send(builder.body(axum::body::Body::empty()).unwrap())
            .await;
        assert_eq!(answer.status, 403, "{}", answer.text());
    }
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        200
    );
    // A form carries the token in its `csrf` field.
    let form = axum::http::Request::builder()
        .method("POST")
        .uri("/signout")
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded");
    let Credentials::Session { csrf, .. } = &member else {
        panic!("a person has a session");
    };
    let answer = harness
        .send(
            form.body(axum::body::Body::from(format!("csrf={csrf}")))
                .unwrap(),
        )
        .await;
    assert_eq!(answer.status, 303, "{}", answer.text());
    assert_eq!(
        harness.call("GET", "/api/runs", &member, None).await.status,
        401
    );
}

/// Issue 42, point 6: a session reads as the browser and the address it signed in from, never
/// its id; a user agent of any length is read within a bound, and one nobody can name reads as
/// such.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_read_as_the_browser_and_address_they_signed_in_from() {
    let harness = Harness::new();
    let sign_in = |user_agent: String| {
        let request = axum::http::Request::builder()
            .method("POST")
            .uri("/api/signin")
            .header("content-type", "application/json")
            .header("user-agent", user_agent)
            .body(axum::body::Body::from(
                serde_json::json!({
                    "account": "acct",
                    "email": "member@example.test",
                    "password": crate::support::PASSWORD,
                })
                .to_string(),
            ))
            .unwrap();
        harness.send(request)
    };
    let chrome = sign_in(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/131.0.6778.85 Safari/537.36"
            .to_owned(),
    )
    .await;
    assert_eq!(chrome.status, 200, "{}", chrome.text());
    let odd = sign_in(format!("{}\t{}", "x".repeat(20_000), "y")).await;
    assert_eq!(odd.status, 200, "{}", odd.text());
    let session = Credentials::Session {
        cookie: chrome.session_cookie().unwrap(),
        csrf: chrome.json()["csrf_token"].as_str().unwrap().to_owned(),
        session_id: String::new(),
    };
    let page = harness.call("GET", "/sessions", &session, None).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(text.contains("Chrome 131 on Linux"), "{text}");
    assert!(text.contains("a browser it did not name"), "{text}");
    assert!(
        !text.contains("xxxxxxxxxx"),
        "the user agent is never shown as sent"
    );
    assert!(!text.contains("<code>ses-"), "{text}");
    // The harness has no peer address: said so, not shown as 0.0.0.0.
    assert!(text.contains("from an address not known"), "{text}");
    // The API says the same, for scripts.
    let listed = harness
        .call("GET", "/api/sessions", &session, None)
        .await
        .json();
    let browsers: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|session| session["browser"].as_str())
        .collect();
    assert!(browsers.contains(&"Chrome 131 on Linux"), "{listed}");
}
