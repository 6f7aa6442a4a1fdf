//! G26: sign-in is rate limited by a token bucket per key, driven by a clock the test controls.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use auth::{RateDecision, RateLimit, RateLimiter, sign_in_key};

const LIMIT: RateLimit = RateLimit {
    burst: 3,
    refill_every_millis: 1_000,
    max_keys: 4,
};

fn attempts(limiter: &mut RateLimiter, key: &str, now: u64, count: usize) -> Vec<RateDecision> {
    (0..count).map(|_| limiter.check(key, now)).collect()
}

#[test]
fn g26_sign_in_allows_a_burst_then_limits() {
    let mut limiter = RateLimiter::new(LIMIT);
    assert_eq!(
        attempts(&mut limiter, "k", 10_000, 4),
        [
            RateDecision::Allowed,
            RateDecision::Allowed,
            RateDecision::Allowed,
            RateDecision::Limited {
                retry_after_millis: 1_000
            }
        ]
    );
    assert_eq!(
        limiter.check("k", 10_400),
        RateDecision::Limited {
            retry_after_millis: 600
        }
    );
}

#[test]
fn g26_sign_in_attempts_come_back_one_per_interval() {
    let mut limiter = RateLimiter::new(LIMIT);
    attempts(&mut limiter, "k", 0, 3);
    assert_eq!(
        limiter.check("k", 999),
        RateDecision::Limited {
            retry_after_millis: 1
        }
    );
    assert_eq!(limiter.check("k", 1_000), RateDecision::Allowed);
    assert_eq!(
        limiter.check("k", 1_500),
        RateDecision::Limited {
            retry_after_millis: 500
        }
    );
    // After a long pause the bucket is full again, never fuller.
    assert_eq!(
        attempts(&mut limiter, "k", 1_000_000, 4),
        [
            RateDecision::Allowed,
            RateDecision::Allowed,
            RateDecision::Allowed,
            RateDecision::Limited {
                retry_after_millis: 1_000
            }
        ]
    );
}

#[test]
fn g26_sign_in_keys_are_limited_apart() {
    let mut limiter = RateLimiter::new(LIMIT);
    attempts(&mut limiter, "alice", 0, 3);
    assert!(matches!(
        limiter.check("alice", 0),
        RateDecision::Limited { .. }
    ));
    assert_eq!(limiter.check("bob", 0), RateDecision::Allowed);
}

#[test]
fn g26_sign_in_clock_going_backwards_refills_nothing() {
    let mut limiter = RateLimiter::new(LIMIT);
    attempts(&mut limiter, "k", 50_000, 3);
    assert!(matches!(
        limiter.check("k", 0),
        RateDecision::Limited { .. }
    ));
    assert!(matches!(
        limiter.check("k", 49_000),
        RateDecision::Limited { .. }
    ));
    assert_eq!(limiter.check("k", 51_000), RateDecision::Allowed);
}

#[test]
fn g26_sign_in_limiter_memory_is_bounded_and_fails_closed() {
    let mut limiter = RateLimiter::new(LIMIT);
    for key in ["a", "b", "c", "d"] {
        assert_eq!(limiter.check(key, 0), RateDecision::Allowed);
    }
    assert_eq!(limiter.tracked_keys(), 4);
    // Full of buckets that still remember attempts: a new key is refused, not tracked.
    assert!(matches!(
        limiter.check("e", 10),
        RateDecision::Limited { .. }
    ));
    assert_eq!(limiter.tracked_keys(), 4);
    // Once they have refilled they hold nothing, and make room.
    assert_eq!(limiter.check("e", 2_000), RateDecision::Allowed);
    assert_eq!(limiter.tracked_keys(), 1);
    limiter.forget_full(10_000);
    assert_eq!(limiter.tracked_keys(), 0);
}

#[test]
fn g26_sign_in_key_keeps_account_and_address_apart() {
    let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    assert_ne!(sign_in_key("acct", v4), sign_in_key("acct", v6));
    assert_ne!(sign_in_key("acct", v4), sign_in_key("acct2", v4));
    assert_ne!(
        sign_in_key("a:1", v6),
        sign_in_key("a", IpAddr::V6(Ipv6Addr::new(1, 0, 0, 0, 0, 0, 0, 1)))
    );
}
