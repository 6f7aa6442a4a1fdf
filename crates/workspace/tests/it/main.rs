//! The workspace crate's one integration-test binary.

mod g12_archives;
mod paths;
mod protected;
mod review_secret_names;
mod revisions;
