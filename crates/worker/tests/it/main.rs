//! The step runtime driven in-process (issue 37): an engine over a real store and a real
//! backend, with this crate's executor, agent runtime and supervisor, against the fake model
//! server on loopback. Nothing here spawns the `stepward` binary.

// The helpers of this test binary are test code too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_in_process;
mod repair_in_process;
mod service;
mod support;
