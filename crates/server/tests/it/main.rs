//! Integration tests of the server: `router(state)` over a temp SQLite store, driven with
//! `tower::ServiceExt::oneshot` (no network).

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

mod access_changes_audited;
mod admin;
mod api_errors;
mod approve;
mod approve_link_delivery;
mod assets;
mod attention;
mod audit_or_nothing;
mod audit_pages;
mod audit_tallies;
mod bootstrap;
mod console;
mod console_security;
mod console_versions;
mod decisions;
mod events;
mod files;
mod forms_refused;
mod headers;
mod interview;
mod key_creators;
mod keyboard;
mod keys;
mod keys_are_not_people;
mod listener;
mod mail;
mod matrix;
mod methods;
mod models;
mod owners_can_sign_in;
mod people;
mod repairs;
mod run_queue;
mod sessions;
mod shares;
mod sign_in_lockout;
mod signin;
mod support;
mod text_limits;
mod tls;
mod tool_tests;
mod unauthenticated_limits;
mod vault;
mod vault_and_decisions_audited;
mod workflow_versions;
mod workflows;
mod workspace_write_intents;
