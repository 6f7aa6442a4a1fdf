//! Egress networks (G11): the public_egress namespace, its veth and nftables policy.
//!
//! A `public_egress` step runs in a network namespace that this module creates and that is
//! owned by the host's initial user namespace, so nothing inside the sandbox's own user
//! namespace can ever change its interfaces, routes or rules. The jail helper opens
//! [`EgressNetwork::netns_path`] and joins it before its clone (without `CLONE_NEWNET`).
//!
//! What runs where:
//! - the "host side" (the gateway end of each veth, the nftables table, forwarding) lives in the
//!   host's network namespace, or in `EgressOptions::host_netns` when tests build the platform
//!   side inside a namespace of their own;
//! - the sandbox side (`lo`, the veth with its /30, a default route via the gateway, IPv6
//!   disabled) lives in a namespace of its own per invocation, unnamed and held by the
//!   platform's descriptor on it (`/proc/<platform>/fd/<n>` while it lives).
//!
//! The policy is data: [`ruleset::ruleset`] is a pure function of the options, fed to
//! `nft -f -` by [`install_policy`] once, when a backend starts (the `nft` command, and `nsenter`
//! when the host side is a test's namespace, looked up in the system directories only). It names
//! no sandbox, so no step changes it. Each sandbox's network is made with rtnetlink messages
//! only (`netlink`), in a namespace a thread of the platform unshares (`namespace`); the
//! policy's presence is checked over nfnetlink (`nftables`). No process runs per sandbox.

pub mod cidr;
mod command;
mod egress;
mod error;
mod namespace;
mod netlink;
mod nftables;
mod options;
pub mod ruleset;
mod sweep;

// The contract names these as `sandbox::net::*`; the submodules only split the code.
pub use crate::net::cidr::Cidr;
pub use crate::net::egress::{EgressNetwork, install_policy};
pub use crate::net::error::Error;
pub use crate::net::options::{
    DEFAULT_ADDRESS_POOL, DEFAULT_NAMESPACE_PREFIX, DEFAULT_TABLE_NAME, EgressOptions,
    HOST_VETH_PREFIX, SANDBOX_VETH_PREFIX, Uplink,
};
pub use crate::net::sweep::{SweepReport, sweep};
