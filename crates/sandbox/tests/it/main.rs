//! The sandbox crate's one integration-test binary.

mod cold;
mod conformance;
mod copyback;
mod gvisor;
mod helper_cell;
mod hostile;
mod jail;
mod limits;
mod local_confinement;
mod net;
mod runtime_cache;
mod session;
mod stdlib;
