//! Issue 11, finding 1, in the router: a made-up welcome link costs a lookup and never a
//! password hash; password checks beyond the global bound are answered 503 at once; every
//! route that needs no sign-in, and the welcome form, are limited per remote address.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use auth::{Access, RateLimit, Role, SignInLinkToken, TlsMode, find_policy};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use server::{AppOptions, PasswordHashing, registered_routes};
use storage::people::{NewPerson, NewSignInLink, PeopleStore, RoleName, TokenHash};
use storage::{AccountId, Timestamp};

use crate::support::{Answer, Caller, Credentials, Harness, START_MILLIS};

fn generous() -> RateLimit {
    RateLimit {
        burst: 10_000,
        refill_every_millis: 1,
        max_keys: 10_000,
    }
}

/// Options with every limit out of the way, and `hashing` as the bound on password work.
fn options(hashing: PasswordHashing) -> AppOptions {
    AppOptions {
        sign_in_limit: generous(),
        account_sign_in_limit: generous(),
        address_sign_in_limit: generous(),
        unauthenticated_limit: generous(),
        welcome_limit: generous(),
        password_hashing: hashing,
        ..AppOptions::new(TlsMode::PlainHttp, server::StepIsolation::Sandboxed)
    }
}

fn from(address: &str, mut request: Request<Body>) -> Request<Body> {
    let peer: SocketAddr = format!("{address}:40000").parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    request
}

/// The form guard (cookie and hidden field) of `GET /signin`.
async fn form_guard(harness: &Harness) -> (String, String) {
    let page = harness
        .call("GET", "/signin", &Credentials::None, None)
        .await;
    assert_eq!(page.status, 200);
    let cookie = page
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let text = page.text();
    let marker = "name=\"csrf\" value=\"";
    let start = text.find(marker).unwrap() + marker.len();
    (cookie, text[start..].split('"').next().unwrap().to_owned())
}

async fn set_password(harness: &Harness, token: &str, address: &str) -> Answer {
    let (cookie, csrf) = form_guard(harness).await;
    let password = "a+long+enough+phrase";
    harness
        .send(from(
            address,
            Request::builder()
                .method("POST")
                .uri(format!("/welcome/{token}"))
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!(
                    "csrf={csrf}&password={password}&password_again={password}"
                )))
                .unwrap(),
        ))
        .await
}

fn invite(harness: &Harness) -> String {
    harness
        .store
        .create_person(&NewPerson {
            id: "p-new".into(),
            account: AccountId::parse("acct").unwrap(),
            display_name: "New Person".into(),
            email: "new@example.test".into(),
            role: RoleName::Viewer,
            password_hash: None,
            created_at: Timestamp(START_MILLIS),
        })
        .unwrap();
    let (token, hash) = SignInLinkToken::generate().unwrap();
    harness
        .store
        .create_sign_in_link(&NewSignInLink {
            token_hash: TokenHash(*hash.as_bytes()),
            person_id: "p-new".into(),
            created_at: Timestamp(START_MILLIS),
            expires_at: Timestamp(START_MILLIS + 60_000),
        })
        .unwrap();
    token.reveal_once().to_owned()
}

/// With no password work allowed at all, a made-up link still gets its 404 (it was looked up
/// before any hashing), while a real link reaches the hash and is answered busy: the 404 is
/// not a refusal that would have come anyway.
#[tokio::test(flavor = "multi_thread")]
async fn a_made_up_welcome_link_is_refused_before_any_hashing() {
    let harness = Harness::with_options(options(PasswordHashing {
        concurrent: 0,
        waiting: 0,
        wait_millis: 0,
    }));
    let (made_up, _) = SignInLinkToken::generate().unwrap();
    let answer = set_password(&harness, &made_up.reveal_once(), "127.0.0.2").await;
    assert_eq!(answer.status, 404, "{}", answer.text());
    let real = invite(&harness);
    let busy = set_password(&harness, &real, "127.0.0.2").await;
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert!(busy.header("retry-after").is_some());
}

/// One password check at a time and none waiting: of many sign-ins at once (each a fresh
/// account, so no limit stops them), the ones over the bound are answered 503 at once, the
/// others 401, and the server is fine afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn password_checks_beyond_the_global_bound_are_answered_busy_at_once() {
    let harness = std::sync::Arc::new(Harness::with_options(options(PasswordHashing {
        concurrent: 1,
        waiting: 0,
        wait_millis: 0,
    })));
    let mut attempts = tokio::task::JoinSet::new();
    for index in 0..16 {
        let harness = harness.clone();
        attempts.spawn(async move {
            let started = Instant::now();
            let answer = harness
                .call(
                    "POST",
                    "/api/signin",
                    &Credentials::None,
                    Some((
                        "application/json",
                        serde_json::json!({
                            "account": format!("guess-{index}"),
                            "email": "x@example.test",
                            "password": "not the password",
                        })
                        .to_string(),
                    )),
                )
                .await;
            (answer, started.elapsed())
        });
    }
    let mut busy = 0;
    let mut refused = 0;
    let mut slowest_busy = Duration::ZERO;
    while let Some(joined) = attempts.join_next().await {
        let (answer, elapsed) = joined.unwrap();
        match answer.status {
            503 => {
                busy += 1;
                slowest_busy = slowest_busy.max(elapsed);
                assert!(answer.header("retry-after").is_some());
            }
            401 => refused += 1,
            other => panic!("unexpected {other}: {}", answer.text()),
        }
    }
    assert!(busy >= 1, "nothing was over the bound: {refused} refused");
    assert!(refused >= 1, "nothing was checked at all");
    // Answered busy without waiting for a turn (a check takes tens of milliseconds, 16 in a
    // row far longer).
    assert!(slowest_busy < Duration::from_secs(2), "{slowest_busy:?}");
}

/// Every route whose policy needs no sign-in (public pages and documents, share and approve
/// links) counts against one limit per remote address: after the burst the next request is
/// 429 with `Retry-After`, while another address, or a signed-in person from the same one, is
/// still served.
#[tokio::test(flavor = "multi_thread")]
async fn every_route_that_needs_no_sign_in_is_limited_per_address() {
    let burst = 3;
    let harness = Harness::with_options(AppOptions {
        unauthenticated_limit: RateLimit {
            burst,
            refill_every_millis: 60_000,
            max_keys: 1_000,
        },
        refusal_delay_millis: 0,
        ..options(PasswordHashing::for_this_machine())
    });
    let member = harness.credentials(Caller::Person(Role::Member));
    let mut checked = 0;
    for (index, (method, pattern)) in registered_routes().into_iter().enumerate() {
        let Some(policy) = find_policy(method, pattern) else {
            continue;
        };
        if !matches!(
            policy.least_role,
            Access::Public | Access::Share | Access::Link
        ) {
            continue;
        }
        checked += 1;
        let path = pattern
            .replace("{*path}", "console.css")
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "x"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let address = format!("127.0.1.{index}");
        let request = || {
            Request::builder()
                .method(method)
                .uri(&path)
                .body(Body::empty())
                .unwrap()
        };
        for _ in 0..burst {
            let answer = harness.send(from(&address, request())).await;
            assert_ne!(answer.status, 429, "{method} {path} within the burst");
        }
        let limited = harness.send(from(&address, request())).await;
        assert_eq!(limited.status, 429, "{method} {path} after the burst");
        assert!(limited.header("retry-after").is_some());
        // A signed-in person (the stylesheet of the console) is not limited by it.
        let mut signed_in = crate::support::request(method, &path, &member, None);
        signed_in.extensions_mut().insert(ConnectInfo(
            format!("{address}:40001").parse::<SocketAddr>().unwrap(),
        ));
        let signed_in = harness.send(signed_in).await;
        assert_ne!(signed_in.status, 429, "{method} {path} signed in");
        let other = harness
            .send(from(&format!("127.0.2.{index}"), request()))
            .await;
        assert_ne!(other.status, 429, "{method} {path} from another address");
    }
    assert!(checked >= 6, "only {checked} routes need no sign-in?");
}

/// Setting a password through a link is limited per address on its own (it can reach a
/// hash): after the burst, 429, even for a real link.
#[tokio::test(flavor = "multi_thread")]
async fn the_welcome_form_is_limited_per_address() {
    let harness = Harness::with_options(AppOptions {
        welcome_limit: RateLimit {
            burst: 2,
            refill_every_millis: 60_000,
            max_keys: 1_000,
        },
        refusal_delay_millis: 0,
        ..options(PasswordHashing::for_this_machine())
    });
    for _ in 0..2 {
        let (made_up, _) = SignInLinkToken::generate().unwrap();
        let answer = set_password(&harness, &made_up.reveal_once(), "127.0.0.3").await;
        assert_eq!(answer.status, 404);
    }
    let real = invite(&harness);
    let limited = set_password(&harness, &real, "127.0.0.3").await;
    assert_eq!(limited.status, 429, "{}", limited.text());
    let elsewhere = set_password(&harness, &real, "127.0.0.4").await;
    assert_eq!(elsewhere.status, 303, "{}", elsewhere.text());
}

/// A refused client without a session waits for its 429 (the flood's brake); a signed-in
/// client is never held back by it.
#[tokio::test(flavor = "multi_thread")]
async fn refusals_of_clients_without_a_session_are_held_back() {
    let harness = Harness::with_options(AppOptions {
        unauthenticated_limit: RateLimit {
            burst: 1,
            refill_every_millis: 60_000,
            max_keys: 1_000,
        },
        refusal_delay_millis: 300,
        ..options(PasswordHashing::for_this_machine())
    });
    let request = || {
        Request::builder()
            .uri("/api/openapi.json")
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(harness.send(from("127.0.0.5", request())).await.status, 200);
    let started = Instant::now();
    assert_eq!(harness.send(from("127.0.0.5", request())).await.status, 429);
    assert!(started.elapsed() >= Duration::from_millis(300));
}
