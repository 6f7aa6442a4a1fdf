//! Issue 11, findings 2 and 6: refused attempts (sign-in, welcome links, keys) are recorded in
//! bounded form, one entry per client address, reason and window with a count, attacker text
//! cut to 128 characters and marked as cut, never under an account that does not exist; and
//! every use of an API key, reads too, is in the audit log, one entry per key, route class and
//! window with a count.

use std::net::SocketAddr;

use auth::{Role, TlsMode};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use server::AppOptions;
use storage::{AuditEntry, AuditLog, SERVER_CHAIN};

use crate::support::{ACCOUNT, Answer, Caller, Credentials, Harness};

fn options() -> AppOptions {
    AppOptions {
        refusal_delay_millis: 0,
        ..AppOptions::new(TlsMode::PlainHttp, server::StepIsolation::Sandboxed)
    }
}

fn from(address: &str, mut request: Request<Body>) -> Request<Body> {
    let peer: SocketAddr = format!("{address}:40000").parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    request
}

async fn sign_in(harness: &Harness, address: &str, account: &str, email: &str) -> Answer {
    let request = crate::support::request(
        "POST",
        "/api/signin",
        &Credentials::None,
        Some((
            "application/json",
            serde_json::json!({"account": account, "email": email, "password": "a guess"})
                .to_string(),
        )),
    );
    harness.send(from(address, request)).await
}

fn entries_of(harness: &Harness, account: &str, action: &str) -> Vec<AuditEntry> {
    harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.account.as_str() == account && entry.action == action)
        .collect()
}

/// Moves past the window and makes one more refused attempt from elsewhere: counts the server
/// holds for a moment are written by then.
async fn close_the_window(harness: &Harness) {
    harness.clock.advance(61_000);
    sign_in(harness, "127.0.9.9", ACCOUNT, "someone@example.test").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_refused_sign_ins_make_one_entry_per_address_reason_and_window_with_a_count() {
    let harness = Harness::with_options(options());
    let long_email = format!("{}@example.test", "e".repeat(300));
    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    for _ in 0..200 {
        let answer = sign_in(&harness, "127.0.0.30", ACCOUNT, &long_email).await;
        *statuses.entry(answer.status).or_default() += 1;
    }
    close_the_window(&harness).await;
    let refused: Vec<AuditEntry> = entries_of(&harness, ACCOUNT, "session.sign_in_failed")
        .into_iter()
        .filter(|entry| entry.detail["remote"] == "127.0.0.30")
        .collect();
    // One entry per reason: the attempts that reached the password check, and the ones a
    // limit refused.
    assert!(refused.len() <= 3, "{refused:#?}");
    let total: u64 = refused.iter().map(|entry| entry.count).sum();
    assert_eq!(total, 200, "{statuses:?} {refused:#?}");
    let limited = refused
        .iter()
        .find(|entry| entry.detail["reason"] == "rate_limited")
        .unwrap();
    assert_eq!(limited.count, statuses[&429]);
    for entry in &refused {
        let email = entry.detail["email"].as_str().unwrap();
        assert_eq!(email.chars().count(), 129, "{email}");
        assert!(email.ends_with('…'));
        assert_eq!(entry.detail["cut"], serde_json::json!(["email"]));
        assert!(entry.to_owned().detail.to_string().len() < 600);
    }
    let all = harness.store.verify_audit().unwrap();
    assert_eq!(all.first_break(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_attempts_at_an_account_that_does_not_exist_go_to_no_accounts_chain() {
    let harness = Harness::with_options(options());
    let made_up = format!("nope-{}", "z".repeat(300));
    for _ in 0..50 {
        sign_in(&harness, "127.0.0.31", &made_up, "x@example.test").await;
    }
    close_the_window(&harness).await;
    let entries = harness.store.audit_entries().unwrap();
    assert!(
        entries
            .iter()
            .all(|entry| !entry.account.as_str().starts_with("nope")),
        "an entry under an account that does not exist"
    );
    let server: Vec<&AuditEntry> = entries
        .iter()
        .filter(|entry| {
            entry.account.as_str() == SERVER_CHAIN && entry.detail["remote"] == "127.0.0.31"
        })
        .collect();
    assert!(!server.is_empty() && server.len() <= 2, "{server:#?}");
    assert_eq!(server.iter().map(|entry| entry.count).sum::<u64>(), 50);
    let typed = server[0].detail["account"].as_str().unwrap();
    assert_eq!(typed.chars().count(), 129);
    assert!(typed.starts_with("nope-zzz") && typed.ends_with('…'));
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_refused_keys_are_tallied_under_the_keys_account() {
    let harness = Harness::with_options(options());
    let key = harness.create_key(ACCOUNT, Role::Viewer);
    // The right key id with a wrong secret.
    let mut wrong = key.clone();
    let last = wrong.pop().unwrap();
    wrong.push(if last == '0' { '1' } else { '0' });
    let credentials = Credentials::Key { text: wrong };
    for _ in 0..30 {
        let request = crate::support::request("GET", "/api/runs", &credentials, None);
        let answer = harness.send(from("127.0.0.32", request)).await;
        assert_eq!(answer.status, 401);
    }
    close_the_window(&harness).await;
    let refused = entries_of(&harness, ACCOUNT, "api_key.refused");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0].count, 30);
    assert_eq!(refused[0].detail["remote"], "127.0.0.32");
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_made_up_welcome_link_is_tallied_in_the_servers_chain() {
    let harness = Harness::with_options(options());
    for _ in 0..10 {
        let page = harness
            .call("GET", "/signin", &Credentials::None, None)
            .await;
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
        let csrf = text[start..].split('"').next().unwrap().to_owned();
        let answer = harness
            .send(from(
                "127.0.0.33",
                Request::builder()
                    .method("POST")
                    .uri(format!("/welcome/{}", "A".repeat(43)))
                    .header("cookie", cookie)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(Body::from(format!(
                        "csrf={csrf}&password=p&password_again=p"
                    )))
                    .unwrap(),
            ))
            .await;
        assert_eq!(answer.status, 404);
    }
    close_the_window(&harness).await;
    let refused = entries_of(&harness, SERVER_CHAIN, "welcome.refused");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0].count, 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_every_read_by_a_key_is_in_the_audit_log_one_entry_per_route_class_and_window() {
    let harness = Harness::with_options(options());
    let key = harness.credentials(Caller::Key(Role::Admin));
    let reads = |harness: &Harness| {
        entries_of(harness, ACCOUNT, "api_key.use")
            .into_iter()
            .filter(|entry| entry.detail["route_class"] == "read /api/runs")
            .collect::<Vec<_>>()
    };
    // One read is in the log at once.
    assert_eq!(
        harness.call("GET", "/api/runs", &key, None).await.status,
        200
    );
    let first = reads(&harness);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].count, 1);
    assert_eq!(first[0].actor.kind(), "api_key");
    // N reads in one window: one entry, count N.
    for _ in 1..40 {
        harness.call("GET", "/api/runs", &key, None).await;
    }
    let counted = reads(&harness);
    assert_eq!(counted.len(), 1);
    assert_eq!(counted[0].count, 40);
    // Another route class is another entry; so is the next window.
    harness.call("GET", "/api/people", &key, None).await;
    let people = entries_of(&harness, ACCOUNT, "api_key.use")
        .into_iter()
        .filter(|entry| entry.detail["route_class"] == "read /api/people")
        .count();
    assert_eq!(people, 1);
    harness.clock.advance(61_000);
    harness.call("GET", "/api/runs", &key, None).await;
    assert_eq!(reads(&harness).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_held_counts_of_refusals_are_written_without_a_further_refusal() {
    let harness = Harness::with_options(options());
    for _ in 0..25 {
        sign_in(&harness, "127.0.0.34", ACCOUNT, "nobody@example.test").await;
    }
    // No further refusal comes: the server's ticker writes what it holds within a second or
    // so of the window's end.
    harness.clock.advance(61_000);
    let mut total = 0;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        total = entries_of(&harness, ACCOUNT, "session.sign_in_failed")
            .iter()
            .filter(|entry| entry.detail["remote"] == "127.0.0.34")
            .map(|entry| entry.count)
            .sum::<u64>();
        if total == 25 {
            break;
        }
    }
    assert_eq!(total, 25, "the held counts were not written");
}

/// A server that stops writes the counts it held for its ticker: the clock here stands still,
/// so only the stop can write them.
#[tokio::test(flavor = "multi_thread")]
async fn g25_held_counts_of_refusals_are_written_when_the_server_stops() {
    let harness = Harness::with_options(options());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server::serve(
        listener,
        harness.state.clone(),
        async {
            let _ = stopped.await;
        },
        server::ListenerLimits::with_max_connections(16),
    ));
    for _ in 0..25 {
        sign_in(&harness, "127.0.0.35", ACCOUNT, "nobody@example.test").await;
    }
    let held = || {
        entries_of(&harness, ACCOUNT, "session.sign_in_failed")
            .iter()
            .filter(|entry| entry.detail["remote"] == "127.0.0.35")
            .map(|entry| entry.count)
            .sum::<u64>()
    };
    assert!(held() < 25, "every count was written before the stop");
    let _ = stop.send(());
    serving.await.unwrap().unwrap();
    assert_eq!(held(), 25, "the held counts were not written at the stop");
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_refusals_from_many_addresses_share_one_entry_past_the_first_256() {
    let harness = Harness::with_options(options());
    let key = harness.create_key(ACCOUNT, Role::Viewer);
    let mut wrong = key.clone();
    let last = wrong.pop().unwrap();
    wrong.push(if last == '0' { '1' } else { '0' });
    let credentials = Credentials::Key { text: wrong };
    let addresses = 600_u32;
    for n in 0..addresses {
        // Each its own /64 of the documentation prefix; nothing is sent anywhere.
        let address = format!("[2001:db8:{:x}:{:x}::1]", n / 0x1_0000, n % 0x1_0000);
        let request = crate::support::request("GET", "/api/runs", &credentials, None);
        let answer = harness.send(from(&address, request)).await;
        assert_eq!(answer.status, 401);
    }
    close_the_window(&harness).await;
    let refused = entries_of(&harness, ACCOUNT, "api_key.refused");
    assert!(
        refused.len() <= MAX_OWN + 1,
        "{} entries for {addresses} addresses",
        refused.len()
    );
    assert_eq!(
        refused.iter().map(|entry| entry.count).sum::<u64>(),
        u64::from(addresses),
        "every refusal is counted"
    );
}

/// The addresses of a window that get entries of their own.
const MAX_OWN: usize = 256;
