//! Integration tests of the auth crate, named after the guarantees they prove (G24, G25, G26).

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod g24_approve_links;
mod g24_share_links;
mod g26_access_docs;
mod g26_passwords;
mod g26_roles;
mod g26_route_policy;
mod g26_sessions_and_keys;
mod g26_sign_in_rate_limit;
mod support;
