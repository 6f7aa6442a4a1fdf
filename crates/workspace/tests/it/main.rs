//! The workspace crate's one integration-test binary.

mod paths;
mod protected;
mod review_secret_names;
mod revisions;
