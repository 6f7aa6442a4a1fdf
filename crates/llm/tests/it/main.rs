//! The `llm` crate against the fake model: one suite both providers pass, streaming and not,
//! and the endpoint rules of G11.

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

mod limits;
mod model_endpoints;
mod suite;
mod support;
mod tls;
