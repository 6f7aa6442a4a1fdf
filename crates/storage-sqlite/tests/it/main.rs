//! Integration tests of the SQLite backend: the conformance story through the trait objects,
//! migrations forward from an older database, and the record's invariants.

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

mod audit_chains;
mod audit_pages;
mod events_after;
mod gate_mail;
mod interviews;
mod migrations;
mod models;
mod people;
mod readers;
mod run_numbers;
mod runs_list;
mod stored_ids;
mod story;
mod support;
mod work_queue;
