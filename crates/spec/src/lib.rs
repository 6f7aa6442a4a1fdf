//! Workflow and agent file formats: parsing into validated values with spanned diagnostics,
//! and the reach report.
//!
//! The only way to obtain a [`Workflow`] or an [`Agent`] is through [`parse_workflow`] and
//! [`parse_agent`] (G1): their constructors are private to this crate, so every other crate
//! can only accept values that passed every rule. Nothing here does IO or panics on input.
//!
//! The layers: `yaml` turns text into a node tree with positions under hard bounds (size,
//! depth, nodes after alias expansion), expanding aliases and merges; `workflow`, `inputs`
//! and `agent` lower that tree into the validated model, reporting every rule's violation
//! at once as a [`Diagnostic`].

#![forbid(unsafe_code)]

mod account;
mod agent;
mod colleagues;
mod declared_limits;
mod diagnostic;
mod env;
mod forbidden;
mod inputs;
mod keys;
mod lower;
mod model;
mod notify;
mod origin;
mod reach;
mod schema;
#[cfg(test)]
mod schema_check;
mod suggest;
mod workflow;
mod yaml;

pub use crate::account::{
    AccountNames, AccountPerson, ModelRef, parse_agent_for_account, parse_workflow_for_account,
};
pub use crate::agent::{parse_agent, parse_agent_within};
pub use crate::colleagues::{Closure, ColleagueProblem, MAX_CONSULT_DEPTH, colleague_closure};
pub use crate::declared_limits::{LimitMaxima, LoopLimits, LoopLimitsInForce, StepLimits};
pub use crate::diagnostic::Diagnostic;
pub use crate::env::{EnvNameCollision, connection_env_name, env_name_collisions};
pub use crate::forbidden::{forbidden_keys_in, is_forbidden_key};
pub use crate::keys::{AGENT_FILE_KEYS, KeyDoc, KeyValue, agent_file_reference};
pub use crate::model::{
    Agent, CustomTool, InputKind, InputSource, Network, OutputKind, PythonVersion, Step, StepBody,
    Supervision, Tool, ToolArgument, Workflow, WorkflowInput,
};
pub use crate::notify::{
    MAX_NOTIFY_PEOPLE, MAX_REMIND_AFTER, MAX_REMINDERS, MIN_REMIND_AFTER, Notify,
};
pub use crate::origin::Origin;
pub use crate::reach::{
    ModelUse, ProviderLookup, REACH_CAPTION, ReachInternet, ReachKind, ReachRow, fill_model_hosts,
    list_or_none, model_cell, reach, render_reach_table, secrets_cell,
};
pub use crate::schema::{workflow_json_schema, workflow_json_schema_within};
pub use crate::workflow::{parse_workflow, parse_workflow_within};

/// The limits every file is held to; exported so the CLI and the console can state them.
pub mod limits {
    /// Largest workflow or agent file accepted, in bytes.
    pub const MAX_FILE_BYTES: usize = crate::yaml::MAX_INPUT_BYTES;
    /// Deepest nesting of lists and mappings, the document itself counting as one level.
    pub const MAX_NESTING_DEPTH: usize = crate::yaml::MAX_DEPTH;
    /// Most YAML values a file may expand to once aliases are expanded.
    pub const MAX_YAML_NODES: usize = crate::yaml::MAX_NODES;
    /// Most steps in one workflow.
    pub const MAX_STEPS: usize = crate::workflow::MAX_STEPS;
}
