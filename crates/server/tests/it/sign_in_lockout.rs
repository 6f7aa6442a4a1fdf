//! Issue 11, finding 3: nobody can lock an account out of sign-in. The limits are checked in
//! order and stop at the first refusal, so a refused request costs only the address that sent
//! it; the account's own allowance (against guessing spread over many addresses) is spent by
//! failures only, and a person signing in from an address with no recent failures is let
//! through to the password check even when it is spent.

use std::net::SocketAddr;

use auth::TlsMode;
use axum::extract::ConnectInfo;
use server::AppOptions;

use crate::support::{Answer, Credentials, Harness, PASSWORD};

async fn sign_in_from(harness: &Harness, address: &str, password: &str) -> Answer {
    let mut request = crate::support::request(
        "POST",
        "/api/signin",
        &Credentials::None,
        Some((
            "application/json",
            serde_json::json!({
                "account": "acct",
                "email": "member@example.test",
                "password": password,
            })
            .to_string(),
        )),
    );
    let peer: SocketAddr = format!("{address}:40000").parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    harness.send(request).await
}

fn default_limits() -> AppOptions {
    AppOptions {
        refusal_delay_millis: 0,
        ..AppOptions::new(TlsMode::PlainHttp, server::StepIsolation::Sandboxed)
    }
}

/// The review's reproduction: one address sends 60 bad sign-ins (5 refused as wrong, the rest
/// 429 for that address); the owner, from another address, still signs in at once.
#[tokio::test(flavor = "multi_thread")]
async fn one_limited_address_cannot_lock_an_account_out() {
    let harness = Harness::with_options(default_limits());
    let mut statuses = std::collections::BTreeMap::<u16, u32>::new();
    for _ in 0..60 {
        let answer = sign_in_from(&harness, "127.0.0.30", "a wrong guess").await;
        *statuses.entry(answer.status).or_default() += 1;
    }
    assert_eq!(statuses.get(&429).copied().unwrap_or(0), 55, "{statuses:?}");
    let victim = sign_in_from(&harness, "127.0.0.41", PASSWORD).await;
    assert_eq!(victim.status, 200, "{}", victim.text());
}

/// Guesses from many addresses spend the account's allowance (that is what it is for): a
/// further guess from an address that already failed is refused. But a person whose address
/// has no recent failures still reaches the password check, and the right password works.
#[tokio::test(flavor = "multi_thread")]
async fn a_spent_account_allowance_still_lets_a_clean_address_try() {
    let harness = Harness::with_options(default_limits());
    let burst = default_limits().sign_in_limit.burst;
    let account_burst = default_limits().account_sign_in_limit.burst;
    let addresses = account_burst.div_ceil(burst) + 1;
    for index in 0..addresses {
        for _ in 0..burst {
            sign_in_from(&harness, &format!("127.0.3.{index}"), "a wrong guess").await;
        }
    }
    let again = sign_in_from(&harness, "127.0.3.0", PASSWORD).await;
    assert_eq!(again.status, 429, "{}", again.text());
    let victim = sign_in_from(&harness, "127.0.4.1", PASSWORD).await;
    assert_eq!(victim.status, 200, "{}", victim.text());
    // A clean address gets one try while the allowance is spent: after a wrong one it is no
    // longer clean.
    let guess = sign_in_from(&harness, "127.0.4.2", "a wrong guess").await;
    assert_eq!(guess.status, 401, "{}", guess.text());
    let second = sign_in_from(&harness, "127.0.4.2", "another guess").await;
    assert_eq!(second.status, 429, "{}", second.text());
}
