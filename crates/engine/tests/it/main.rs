//! Integration tests of the engine, each named after the guarantee it proves. They run the
//! real SQLite store in a temp dir, a scripted executor and an in-memory secret source.

// clippy.toml allows unwrap in `#[test]` functions only; the helpers of this test binary are
// test code too, and a panic there is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

mod attempt_parts;
mod crash;
mod credential_path;
mod definitions;
mod failure_policy;
mod g16_account_values;
mod g17_cuts_and_outputs;
mod gates;
mod inputs;
mod interview;
mod jobs;
mod journal_fixtures;
mod kill;
mod reach_change;
mod reconstruct_property;
mod record;
mod recovery;
mod repair;
mod scrub_table;
mod scrubbing;
mod superseded;
mod supervisor;
mod support;
mod workspace_writes;
