//! The workspace crate's one integration-test binary.

// Test helpers unwrap: a failed unwrap is the failure message we want.
#![allow(clippy::unwrap_used)]

mod definitions;
mod g12_archives;
mod paths;
mod ports;
mod protected;
mod revision_store;
mod revisions;
mod secrets_in_paths_and_messages;
