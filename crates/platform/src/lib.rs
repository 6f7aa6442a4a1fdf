//! What every door of stepward does the same way (issue 37): the CLI, the server and the step
//! runtime each called their own copy of these, and a third door (mail, a worker of its own)
//! would have copied them again. Nothing here knows a sandbox, HTTP or a terminal: each door
//! says a [`providers::ProviderError`] in its own words.

#![forbid(unsafe_code)]

pub mod accounts;
pub mod providers;
pub mod views;
pub mod workflows;
