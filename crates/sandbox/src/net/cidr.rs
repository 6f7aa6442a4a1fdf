//! IP address ranges: the type lives in `netguard`, shared with the model client's endpoint
//! check, and is named here as `sandbox::net::cidr::Cidr` as before.

pub use netguard::{Cidr, CidrError};
