//! Sign-in rate limiting: a token bucket per key, with the clock passed in.
//!
//! Each key (the server uses the account and the remote address, and a second limiter per
//! account alone against guessing spread over many addresses) has a bucket of `burst` tokens;
//! each attempt takes one, and one token comes back every `refill_every_millis`. The limiter
//! does no IO and reads no clock: the caller passes `now_millis` (milliseconds from any fixed
//! origin, e.g. a monotonic clock), so tests drive time by hand. A clock that goes backwards
//! refills nothing.
//!
//! Memory is bounded: at most `max_keys` buckets are tracked. When a new key arrives and the
//! table is full, buckets that have refilled completely are forgotten (they hold no
//! information); if it is still full, the attempt is refused, so a flood of new keys cannot
//! reset anyone's limit (it fails closed).

use std::collections::HashMap;

/// The shape of a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// How many attempts a key may make at once, from a full bucket. At least 1.
    pub burst: u32,
    /// How long it takes one attempt to come back, in milliseconds. At least 1.
    pub refill_every_millis: u64,
    /// How many keys are tracked at most.
    pub max_keys: usize,
}

impl RateLimit {
    /// The sign-in limit per account and remote address: 5 attempts at once, then one every
    /// 12 seconds (5 a minute), for up to 100,000 keys.
    pub const SIGN_IN: RateLimit = RateLimit {
        burst: 5,
        refill_every_millis: 12_000,
        max_keys: 100_000,
    };

    /// The limit per remote address of every route that needs no sign-in (the sign-in and
    /// welcome pages and forms, share and approve links, the OpenAPI document, the
    /// stylesheet): 300 requests at once, then 20 a second, for up to 100,000 addresses. A
    /// person's browser never comes near it; a flood from one address is refused early.
    pub const UNAUTHENTICATED: RateLimit = RateLimit {
        burst: 300,
        refill_every_millis: 50,
        max_keys: 100_000,
    };

    /// The limit per remote address of setting a password through a one-time link: 10 tries
    /// at once, then one every 6 seconds, for up to 100,000 addresses.
    pub const WELCOME: RateLimit = RateLimit {
        burst: 10,
        refill_every_millis: 6_000,
        max_keys: 100_000,
    };
}

/// The answer for one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// The attempt may go ahead; it used one token.
    Allowed,
    /// Too many attempts: try again after this many milliseconds (the `Retry-After`).
    Limited { retry_after_millis: u64 },
}

/// The answer for one attempt, with what the caller needs to record refusals in bounded
/// form: only the first refusal of a bucket since it last allowed an attempt is news.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The attempt may go ahead; it used one token.
    Allowed,
    /// Too many attempts.
    Refused {
        /// Try again after this many milliseconds (the `Retry-After`).
        retry_after_millis: u64,
        /// Whether this is the bucket's first refusal since it last allowed an attempt (or
        /// since the table was full): a record of refusals needs only these.
        first_in_window: bool,
    },
}

impl Attempt {
    /// The same answer without the refusal's bookkeeping.
    pub fn decision(self) -> RateDecision {
        match self {
            Attempt::Allowed => RateDecision::Allowed,
            Attempt::Refused {
                retry_after_millis, ..
            } => RateDecision::Limited { retry_after_millis },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u32,
    /// The moment the bucket last gained a token (or was created).
    refilled_at: u64,
    /// Whether the bucket has refused an attempt since it last allowed one.
    refusing: bool,
}

/// Token buckets per key. Not thread-safe by itself: the server keeps it behind a mutex.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: HashMap<String, Bucket>,
}

impl RateLimiter {
    /// A limiter with empty history. A zero `burst` or `refill_every_millis` is raised to 1.
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit: RateLimit {
                burst: limit.burst.max(1),
                refill_every_millis: limit.refill_every_millis.max(1),
                max_keys: limit.max_keys,
            },
            buckets: HashMap::new(),
        }
    }

    /// Records one attempt for `key` at `now_millis`, and says whether it may go ahead.
    pub fn check(&mut self, key: &str, now_millis: u64) -> RateDecision {
        self.attempt(key, now_millis).decision()
    }

    /// As [`RateLimiter::check`], and says whether a refusal is the bucket's first since it
    /// last allowed an attempt.
    pub fn attempt(&mut self, key: &str, now_millis: u64) -> Attempt {
        let limit = self.limit;
        if !self.buckets.contains_key(key) {
            if self.buckets.len() >= limit.max_keys {
                self.forget_full(now_millis);
            }
            if self.buckets.len() >= limit.max_keys {
                return Attempt::Refused {
                    retry_after_millis: limit.refill_every_millis,
                    first_in_window: false,
                };
            }
            self.buckets.insert(
                key.to_owned(),
                Bucket {
                    tokens: limit.burst,
                    refilled_at: now_millis,
                    refusing: false,
                },
            );
        }
        let Some(bucket) = self.buckets.get_mut(key) else {
            // Inserted just above; a missing bucket refuses rather than allows.
            return Attempt::Refused {
                retry_after_millis: limit.refill_every_millis,
                first_in_window: false,
            };
        };
        refill(bucket, limit, now_millis);
        if bucket.tokens > 0 {
            bucket.tokens -= 1;
            bucket.refusing = false;
            Attempt::Allowed
        } else {
            let waited = now_millis.saturating_sub(bucket.refilled_at);
            let first_in_window = !bucket.refusing;
            bucket.refusing = true;
            Attempt::Refused {
                retry_after_millis: limit.refill_every_millis.saturating_sub(waited).max(1),
                first_in_window,
            }
        }
    }

    /// What an attempt for `key` at `now_millis` would be answered, without recording it (no
    /// token is taken, no bucket is made): for a limit that only failures should spend.
    pub fn would_allow(&self, key: &str, now_millis: u64) -> bool {
        match self.buckets.get(key) {
            // A new key starts with a full bucket.
            None => true,
            Some(bucket) => {
                let mut copy = *bucket;
                refill(&mut copy, self.limit, now_millis);
                copy.tokens > 0
            }
        }
    }

    /// Whether `key` has spent nothing that has not come back by `now_millis` (no bucket, or a
    /// full one).
    pub fn is_untouched(&self, key: &str, now_millis: u64) -> bool {
        match self.buckets.get(key) {
            None => true,
            Some(bucket) => {
                let mut copy = *bucket;
                refill(&mut copy, self.limit, now_millis);
                copy.tokens >= self.limit.burst
            }
        }
    }

    /// Forgets every bucket that is full again at `now_millis`: it remembers nothing a fresh
    /// bucket would not. The server may call this now and then; [`RateLimiter::check`] calls it
    /// when the table is full.
    pub fn forget_full(&mut self, now_millis: u64) {
        let limit = self.limit;
        self.buckets.retain(|_, bucket| {
            refill(bucket, limit, now_millis);
            bucket.tokens < limit.burst
        });
    }

    /// How many keys are tracked.
    pub fn tracked_keys(&self) -> usize {
        self.buckets.len()
    }
}

fn refill(bucket: &mut Bucket, limit: RateLimit, now_millis: u64) {
    let elapsed = now_millis.saturating_sub(bucket.refilled_at);
    let gained = elapsed / limit.refill_every_millis;
    if gained == 0 {
        return;
    }
    let room = u64::from(limit.burst - bucket.tokens.min(limit.burst));
    if gained >= room {
        bucket.tokens = limit.burst;
        bucket.refilled_at = now_millis;
        bucket.refusing = false;
    } else {
        // `gained < room <= u32::MAX`, so the conversion cannot fail.
        bucket.tokens += u32::try_from(gained).unwrap_or(0);
        bucket.refilled_at += gained * limit.refill_every_millis;
    }
}

/// The key of the per-account-and-address sign-in limit. It takes the account as typed, which
/// may be no account id at all (such a sign-in is limited like one naming an unknown account);
/// the text is length-prefixed so that no two pairs give the same key.
pub fn sign_in_key(typed_account: &str, remote_address: std::net::IpAddr) -> String {
    format!("{}:{typed_account}:{remote_address}", typed_account.len())
}
