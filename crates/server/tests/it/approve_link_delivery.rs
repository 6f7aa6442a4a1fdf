//! Issue 11, finding 10: approve links reach people. The gate page, the approvals list and
//! `GET /api/runs/{id}/approve-link` give each parked gate its link. A link opened without the
//! session cookie (SameSite=Strict keeps it off a navigation from a mail) first answers a page
//! of our own origin with a plain "Continue" link (a same-site navigation, which carries the
//! cookie); only when that still finds no session does it lead through sign-in and back, and
//! the way back only ever points inside the console. Opening a link never decides.

use auth::Role;
use storage::{DecisionStore, RunId, RunStatus, RunStore};

use crate::support::{Answer, Caller, Credentials, Harness, PASSWORD};

fn link(harness: &Harness, run: &RunId) -> String {
    let gate = harness.engine.pending_gate(run).unwrap().unwrap();
    harness.state.approve_link_path(&gate).unwrap()
}

fn still_waiting(harness: &Harness, run: &RunId) {
    assert!(
        harness.store.decisions(run).unwrap().is_empty(),
        "opening never decides"
    );
    assert_eq!(
        harness.store.run(run).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
}

/// The form cookie and the hidden CSRF field of a guarded form page.
fn form_guard(page: &Answer) -> (String, String) {
    let cookie = page.session_cookie().unwrap();
    let text = page.text();
    let marker = "name=\"csrf\" value=\"";
    let start = text.find(marker).unwrap() + marker.len();
    let end = start + text[start..].find('"').unwrap();
    (cookie, text[start..end].to_owned())
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// Signs in through the form of `GET /signin?next=NEXT` (sent as given, already encoded) and
/// answers where the sign-in sends the person.
async fn sign_in_then(harness: &Harness, encoded_next: &str) -> (String, Option<String>) {
    let page = harness
        .call(
            "GET",
            &format!("/signin?next={encoded_next}"),
            &Credentials::None,
            None,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text());
    let (cookie, csrf) = form_guard(&page);
    let body = format!(
        "csrf={csrf}&next={encoded_next}&account=acct&email=member%40example.test&password={}",
        PASSWORD.replace(' ', "+")
    );
    let request = axum::http::Request::builder()
        .method("POST")
        .uri("/signin")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookie)
        .body(axum::body::Body::from(body))
        .unwrap();
    let signed_in = harness.send(request).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.text());
    (page.text(), signed_in.header("location"))
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_the_gate_page_the_approvals_list_and_the_api_give_each_parked_gate_its_link() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = link(&harness, &run);
    let member = harness.credentials(Caller::Person(Role::Member));
    let gate_page = harness
        .call("GET", &format!("/runs/{}", run.as_str()), &member, None)
        .await;
    assert_eq!(gate_page.status, 200, "{}", gate_page.text());
    assert!(gate_page.text().contains(&path), "{}", gate_page.text());
    let approvals = harness.call("GET", "/approvals", &member, None).await;
    assert!(approvals.text().contains(&path), "{}", approvals.text());
    let api = harness
        .call(
            "GET",
            &format!("/api/runs/{}/approve-link", run.as_str()),
            &member,
            None,
        )
        .await;
    assert_eq!(api.status, 200, "{}", api.text());
    let body = api.json();
    assert_eq!(body["path"], path.as_str());
    assert_eq!(body["step"], "ship");
    assert_eq!(body["attempt"], 1);
    // Only a person who may decide gets a link: not a viewer, not a key, not another account.
    for caller in [Caller::Person(Role::Viewer), Caller::Key(Role::Admin)] {
        let refused = harness
            .call(
                "GET",
                &format!("/api/runs/{}/approve-link", run.as_str()),
                &harness.credentials(caller),
                None,
            )
            .await;
        assert_eq!(refused.status, 403, "{caller:?}: {}", refused.text());
    }
    let viewer_page = harness
        .call(
            "GET",
            &format!("/runs/{}", run.as_str()),
            &harness.credentials(Caller::Person(Role::Viewer)),
            None,
        )
        .await;
    assert!(!viewer_page.text().contains(&path));
    let other = harness.parked_run("other");
    let foreign = harness
        .call(
            "GET",
            &format!("/api/runs/{}/approve-link", other.as_str()),
            &member,
            None,
        )
        .await;
    assert_eq!(foreign.status, 404, "{}", foreign.text());
    still_waiting(&harness, &run);
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_a_link_without_the_cookie_continues_on_our_origin_then_signs_in_and_back() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let path = link(&harness, &run);
    // From a mail: no cookie. A page of ours with a plain link to the same gate page.
    let first = harness.call("GET", &path, &Credentials::None, None).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let continued = format!("{path}?continue=1");
    assert!(
        first
            .text()
            .contains(&format!("<a href=\"{continued}\">Continue</a>")),
        "{}",
        first.text()
    );
    assert!(!first.text().contains("<form"));
    // With the cookie (a same-site navigation carries it), the decision form.
    let member = harness.credentials(Caller::Person(Role::Member));
    let with_cookie = harness.call("GET", &continued, &member, None).await;
    assert_eq!(with_cookie.status, 200, "{}", with_cookie.text());
    assert!(with_cookie.text().contains("name=\"decision\""));
    // Still no session after Continue: through sign-in, and back to the link.
    let no_session = harness
        .call("GET", &continued, &Credentials::None, None)
        .await;
    assert_eq!(no_session.status, 303, "{}", no_session.text());
    let location = no_session.header("location").unwrap();
    assert_eq!(location, format!("/signin?next={}", percent(&path)));
    let (form, back) = sign_in_then(&harness, &percent(&path)).await;
    assert!(form.contains("name=\"next\""), "{form}");
    assert_eq!(back.as_deref(), Some(path.as_str()));
    // Opening never decides, whatever the query says.
    let sneaky = harness
        .call(
            "GET",
            &format!("{path}?decision=approve&continue=1"),
            &member,
            None,
        )
        .await;
    assert_eq!(sneaky.status, 200);
    still_waiting(&harness, &run);
}

#[tokio::test(flavor = "multi_thread")]
async fn g24_the_way_back_from_sign_in_never_leaves_the_console() {
    let harness = Harness::new();
    for hostile in [
        "//evil.example",
        "https://evil.example/",
        "/\\evil.example",
        "\\\\evil.example",
        "%2F%2Fevil.example",
        "/%2F/evil.example",
        "/%5Cevil.example",
        "%252F%252Fevil.example",
        "javascript:alert(1)",
        "/\t/evil.example",
        " //evil.example",
        "evil.example",
        "/ok/../\\evil",
    ] {
        let (form, back) = sign_in_then(&harness, &percent(hostile)).await;
        assert_eq!(back.as_deref(), Some("/"), "{hostile:?} led to {back:?}");
        assert!(
            !form.contains("evil"),
            "{hostile:?} reached the form: {form}"
        );
    }
    // A path inside the console comes back as it was.
    let (_, back) = sign_in_then(&harness, &percent("/runs?status=failed")).await;
    assert_eq!(back.as_deref(), Some("/runs?status=failed"));
}
