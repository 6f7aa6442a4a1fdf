//! The agent loop (issue 16, DESIGN G14, G21, G22): the model is offered exactly the tools the
//! agent file names; every call is checked against the tool's arguments, journalled before it
//! runs, and run one at a time; the `loop:` limits stop it; everything sent to the model is
//! scrubbed by the run's redactor first. The file tools run over the agent's tree through
//! `workspace`'s one confinement primitive, in a helper process of their own. `Consult` runs
//! a colleague's sub-loop with the colleague's own file, tools and secrets ([`consult`]).
//! `workspace`'s one confinement primitive, in a helper process of their own. The supervisor
//! (G15, [`supervisor`]) is the assistant deciding after a failed attempt, with three tools;
//! the interview ([`interview`]) is the assistant asking a person and proposing a workflow.
//!
//! Invariants: knows no concrete provider (it holds a `dyn llm::Model`), no sandbox backend
//! and no storage: scripts run through a [`ToolHost`] and events go to a [`LoopJournal`], both
//! implemented by the binary.

#![forbid(unsafe_code)]

pub mod catalogue;
pub mod consult;
pub mod files;
pub mod helper;
pub mod interview;
pub mod looping;
pub mod repair;
pub mod supervisor;

pub use crate::catalogue::{CONSULT, CallRefusal, Catalogue, Offered, ToolKind};
pub use crate::consult::{Colleague, ColleagueUnavailable, Colleagues, MAX_DEPTH, NoColleagues};
pub use crate::looping::{
    CallOutcome, End, HostStop, Limits, LoopJournal, NotRecorded, PREAMBLE, PathRefusal,
    ReplyOutcome, Report, Setup, ToolHost, ToolReply, first_message, run, run_with,
};
