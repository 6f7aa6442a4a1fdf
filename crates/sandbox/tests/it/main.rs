//! The sandbox crate's one integration-test binary.

mod copyback;
mod hostile;
mod jail;
mod net;
