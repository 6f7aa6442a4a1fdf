//! The stepward binary's one integration-test binary: the CLI as a person uses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_hostile;
mod agents;
mod browser;
mod cli;
mod docs;
mod first_use;
mod flood;
mod g11_flood;
mod g16_cli_errors;
mod g16_every_sink;
mod g16_live_scrub;
mod http;
mod limits;
mod models;
mod pinning;
mod review_credentials;
mod runs;
mod serve;
mod support;
mod workflow_versions;
