//! The redact crate's one integration test binary; each module proves part of G16 or G17.

// clippy.toml allows unwrap inside `#[test]` functions only; the shared helpers and test-side
// writers here are test code too, and a failed unwrap is the failure message we want.
#![allow(clippy::unwrap_used)]

mod common;
mod common_formats;
mod encodings;
mod framed;
mod json_and_truncation;
mod logging;
mod properties;
mod python_forms;
mod run_secrets;
mod streaming;
mod type_rules;
