//! Integration tests of the spec crate: data-driven fixtures with snapshots, the guarantees
//! this crate carries (G1–G5, G23, G27), the bundled examples, and property tests.

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod account;
mod examples;
mod fixtures;
mod g21_colleagues;
mod g4_credential_keys;
mod guarantees;
mod maxima;
mod notify;
mod origin;
mod properties;
mod render;
mod unshowable;
