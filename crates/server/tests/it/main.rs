//! Integration tests of the server: `router(state)` over a temp SQLite store, driven with
//! `tower::ServiceExt::oneshot` (no network).

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

mod admin;
mod api_errors;
mod approve;
mod assets;
mod attention;
mod audit_or_nothing;
mod bootstrap;
mod console;
mod console_versions;
mod decisions;
mod events;
mod files;
mod g11_approve_links;
mod g11_audit_bounded;
mod g11_audit_or_nothing;
mod g11_audit_pages;
mod g11_exhaustion;
mod g11_key_creators;
mod g11_keys_are_not_people;
mod g11_lockout;
mod g11_owners_can_sign_in;
mod g11_text_limits;
mod g11_vault_and_decisions_audited;
mod g11_workspace_intents;
mod headers;
mod interview;
mod keys;
mod listener;
mod matrix;
mod methods;
mod models;
mod people;
mod repairs;
mod review_console;
mod sessions;
mod shares;
mod signin;
mod support;
mod tls;
mod vault;
mod workflow_versions;
mod workflows;
