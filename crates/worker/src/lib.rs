//! The step runtime (issue 37): everything that executes a step, out of the binary, so that
//! whichever process drives runs (the CLI, `serve`, a worker of its own later) runs them the
//! same way, and so that it can be tested in-process.
//!
//! - [`executor`]: the engine's [`engine::StepExecutor`] over a sandbox backend
//!   ([`sandbox::Isolation`]): code steps, and agent steps through [`agent_step`].
//! - [`agent_step`] with [`agent_view`], [`agent_record`], [`agent_readiness`] and
//!   [`agent_colleagues`]: an agent step's tools, view, record and colleagues.
//! - [`supervisor`] and [`repair`]: the account's assistant, for failures and repairs.
//! - [`python_check`] and [`lints`]: the Python a step may run, read before any sandbox.
//! - [`model_client`]: the one model client of a process (the account's providers, ready to
//!   call, are `platform::providers`).
//! - [`run`] ([`Options`] → [`Handle`]): a worker's claim loop over the run queue, with
//!   [`holder`] to name this process and prove a holder dead.
//!
//! It names no storage backend: it takes any store of the [`storage`] traits ([`Stores`]), so a
//! second store needs no change here.

#![forbid(unsafe_code)]

pub mod agent_colleagues;
pub mod agent_readiness;
pub mod agent_record;
pub mod agent_step;
pub mod agent_view;
pub mod authoring;
pub mod engine_jobs;
pub mod executor;
pub mod guards;
pub mod holder;
pub mod lints;
pub mod model_client;
pub mod python_check;
pub mod repair;
mod service;
pub mod supervisor;

/// What the runtime reads and writes of a store: the run's record (the engine's [`storage::Store`])
/// and the account's model providers. Every store of both traits is one.
pub trait Stores: storage::Store + storage::models::ModelProviderStore {}

impl<T: storage::Store + storage::models::ModelProviderStore + ?Sized> Stores for T {}

pub use crate::service::{
    BadOptions, Claimed, DEFAULT_LEASE, DEFAULT_MODEL_SLOTS, Handle, Jobs, MAX_INTERVAL, MAX_SLOTS,
    MIN_POLL, Options, Report, Shutdown, StartError, run,
};
