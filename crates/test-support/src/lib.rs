//! What every crate's tests share (issue 37: nine `support.rs` files each held their own copy
//! of the temporary store, the counting clock and ids, the scripted executor, the workflows
//! and the byte search). A crate's own `tests/it/support.rs` keeps only what is that crate's.
//!
//! - [`store`]: a SQLite store in a temporary folder, with its accounts.
//! - [`time`]: clocks and run ids that move only as the test says.
//! - [`steps`]: an executor and a supervisor that answer from a script.
//! - [`workflows`]: the workflows the suites run, and committing files to a workspace.
//! - [`model`]: a fake model server as an account's provider.
//! - [`runs`]: a run as a store holds it, made without an engine.
//! - [`queue_suite`] and [`memory_queue`]: the run queue's conformance suite, written once,
//!   and a queue held in memory that runs it beside SQLite's.
//! - [`bytes`]: searching every stored byte for what must never be stored.
//!
//! Tests only: this crate panics on every failure, as a test should.

#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod bytes;
pub mod memory_queue;
pub mod model;
pub mod queue_suite;
pub mod runs;
pub mod smtp;
pub mod steps;
pub mod store;
pub mod time;
pub mod workflows;
