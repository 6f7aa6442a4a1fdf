//! Integration tests of the storage crate's contracts, named after the guarantees they prove.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit_actions;
mod g16_record_fields;
