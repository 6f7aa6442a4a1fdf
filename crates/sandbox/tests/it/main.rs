//! The sandbox crate's one integration-test binary.

mod cold;
mod conformance;
mod copyback;
mod gvisor;
mod helper_cell;
mod hostile;
mod jail;
mod limits;
mod net;
mod review;
mod runtime_cache;
mod session;
mod stdlib;
