//! Workflow and agent file formats: parsing into validated values with spanned diagnostics,
//! and the reach report.
//!
//! The only way to obtain a [`Workflow`] or an [`Agent`] is through [`parse_workflow`] and
//! [`parse_agent`] (G1): their constructors are private to this crate, so every other crate
//! can only accept values that passed every rule. Nothing here does IO or panics on input.

#![forbid(unsafe_code)]

mod model;

pub use crate::model::{
    Agent, InputKind, InputSource, Network, PythonVersion, Step, StepBody, Tool, Workflow,
    WorkflowInput,
};
