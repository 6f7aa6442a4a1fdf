//! Integration tests of the vault, named after the guarantees they prove (G19, G20).

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod at_rest;
mod concurrency;
mod generation;
mod names_only;
mod refusals;
mod rotation;
mod rotation_backups;
mod superseded;
mod support;
mod tamper;
