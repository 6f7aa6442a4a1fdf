//! The stepward binary's one integration-test binary: the CLI as a person uses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_colleagues;
mod agent_hostile;
mod agent_kill;
mod agents;
mod browser;
mod check_agents;
mod cli;
mod docs;
mod first_use;
mod flood;
mod g11_audit_verify;
mod g11_cli_vault_audited;
mod g11_flood;
mod g16_cli_errors;
mod g16_every_sink;
mod g16_live_scrub;
mod http;
mod interview;
mod limits;
mod lints;
mod models;
mod pinning;
mod printed;
mod repair;
mod review_credentials;
mod runs;
mod serve;
mod state_dir;
mod supervisor;
mod support;
mod workflow_versions;
