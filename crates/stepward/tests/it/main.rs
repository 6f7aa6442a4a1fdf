//! The stepward binary's one integration-test binary: the CLI as a person uses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod cli;
mod limits;
mod runs;
mod serve;
mod support;
