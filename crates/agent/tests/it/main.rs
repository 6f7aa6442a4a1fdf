//! The agent crate's one integration-test binary: the file tools against every escape class of
//! the research notes (§2.1), and the loop against the fake model in both wire formats, and
//! colleagues consulted through `Consult`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bounds;
mod consult;
mod escapes;
mod looping;
mod supervisor;
