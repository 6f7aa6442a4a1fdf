//! The one error type of the egress network module: every variant carries its context.

use std::path::PathBuf;

/// What went wrong while installing the egress policy or building a sandbox's network.
///
/// Every failure is fatal for the step: a `public_egress` sandbox without its network or its
/// policy never starts (fail closed).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system command the module relies on is not installed in any system directory.
    #[error(
        "the `{tool}` command is not installed (looked in {searched}); install the Debian package `{package}`"
    )]
    ToolMissing {
        tool: &'static str,
        package: &'static str,
        searched: String,
    },
    /// A command could not be started at all.
    #[error("could not start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A command ran and failed.
    #[error("`{command}` failed with {status}: {stderr}")]
    CommandFailed {
        command: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    /// IPv4 forwarding is off in the namespace that would route sandbox traffic.
    #[error(
        "public_egress needs IPv4 forwarding: `{setting}` is `{value}` in {host}; the platform never changes host settings itself, enable it in the host's configuration (see the install documentation)"
    )]
    ForwardingDisabled {
        setting: &'static str,
        value: String,
        host: String,
    },
    /// The nftables table that carries the policy is not installed, so no sandbox may start.
    #[error(
        "the egress policy table `inet {table}` is not installed in {host}; call install_policy first: {detail}"
    )]
    PolicyMissing {
        table: String,
        host: String,
        detail: String,
    },
    /// A network namespace could not be made, entered or prepared.
    #[error("cannot {action}")]
    Namespace {
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A link, address or route operation over rtnetlink failed.
    #[error("cannot {operation} (rtnetlink)")]
    Netlink {
        operation: String,
        #[source]
        source: std::io::Error,
    },
    /// The slot does not fit in the address pool.
    #[error(
        "sandbox slot {slot} does not fit in the address pool {pool} (it holds {capacity} /30 links)"
    )]
    SlotOutOfRange {
        slot: u32,
        pool: String,
        capacity: u32,
    },
    /// An option would produce an unsafe or invalid configuration.
    #[error("invalid egress option `{option}` = `{value}`: {reason}")]
    InvalidOption {
        option: &'static str,
        value: String,
        reason: &'static str,
    },
    /// The namespace just created turned out to be the caller's own: its settings are the
    /// host's, so nothing is written to them.
    #[error(
        "`{path}` is the caller's own network namespace, not a new one; refusing to change its settings"
    )]
    NotANewNamespace { path: PathBuf },
    /// A text that should be an address range is not one.
    #[error(transparent)]
    InvalidCidr(#[from] netguard::CidrError),
    /// Reading or writing a file failed.
    #[error("{action} `{path}`")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
