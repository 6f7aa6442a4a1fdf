//! A new network namespace for one egress network, made without a process: a short-lived
//! thread of the platform unshares it, and what must be done from inside (the rtnetlink
//! socket of the sandbox side, IPv6 off) is done by that thread before it ends. The namespace
//! lives on as long as the descriptor the thread opened on it: nothing is mounted under
//! `/run/netns`, so a platform that dies takes its sandboxes' namespaces (and with them their
//! veths) along, and there is nothing for a sweep to find.
//!
//! The namespace is made by host root in the host's initial user namespace, so nothing in a
//! sandbox's own user namespace ever holds a capability over it.
//!
//! Safety of the settings written here: the thread writes IPv6 sysctls only after it checked
//! that its network namespace is a new one, neither the platform's own nor the host side's.
//! `/proc/sys/net` shows the namespace of the thread that opens a file in it, so these writes
//! can never reach the host's settings.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::net::error::Error;
use crate::net::netlink::Rtnl;
use crate::net::nftables::POLICY_CHAINS;
use crate::net::options::EgressOptions;

/// What the thread made.
pub(crate) struct Made {
    /// The new namespace, held open.
    pub netns: OwnedFd,
    /// Its device and inode, which name it.
    pub identity: (u64, u64),
    /// A socket of the host side (the platform's namespace, or `host_netns`).
    pub host: Rtnl,
    /// A socket inside the new namespace.
    pub inside: Rtnl,
}

/// Makes a namespace as described above, after checking the host side (the platform's own
/// namespace, or `options.host_netns`): IPv4 forwarding must be on there (the platform only
/// reads it) and the policy table must hold every chain of the policy, or nothing is made.
pub(crate) fn make(options: &EgressOptions) -> Result<Made, Error> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || make_here(options))
            .join()
            .unwrap_or_else(|_| {
                Err(Error::Namespace {
                    action: "make a network namespace",
                    source: std::io::Error::other("the thread making it panicked"),
                })
            })
    })
}

/// An rtnetlink socket on the host side: the platform's own namespace, or (tests) one opened by
/// a thread that entered `options.host_netns`.
pub(crate) fn host_socket(options: &EgressOptions) -> Result<Rtnl, Error> {
    let open = || -> Result<Rtnl, Error> {
        if let Some(path) = &options.host_netns {
            enter(path)?;
        }
        Rtnl::open().map_err(|source| Error::Namespace {
            action: "open an rtnetlink socket on the host side",
            source,
        })
    };
    if options.host_netns.is_none() {
        return open();
    }
    std::thread::scope(|scope| {
        scope.spawn(open).join().unwrap_or_else(|_| {
            Err(Error::Namespace {
                action: "open an rtnetlink socket on the host side",
                source: std::io::Error::other("the thread opening it panicked"),
            })
        })
    })
}

/// Moves the calling thread (only) into the network namespace at `path`.
fn enter(path: &Path) -> Result<(), Error> {
    let file = File::open(path).map_err(|source| Error::Io {
        action: "opening",
        path: path.to_owned(),
        source,
    })?;
    // SAFETY: setns on a descriptor we own; it changes only this thread's namespace.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(Error::Namespace {
            action: "enter the host side's network namespace",
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Runs on a thread of its own, which ends right after: its namespace changes never leave it.
fn make_here(options: &EgressOptions) -> Result<Made, Error> {
    let platform = identity_of(Path::new("/proc/self/ns/net"))?;
    if let Some(path) = &options.host_netns {
        enter(path)?;
    }
    let host_side = identity_of(Path::new("/proc/thread-self/ns/net"))?;
    let host = Rtnl::open().map_err(|source| Error::Namespace {
        action: "open an rtnetlink socket on the host side",
        source,
    })?;
    // Read, never written: the platform does not change host settings.
    let forwarding = read_setting("/proc/sys/net/ipv4/ip_forward")?;
    if forwarding != "1" {
        return Err(Error::ForwardingDisabled {
            setting: "net.ipv4.ip_forward",
            value: forwarding,
            host: options.host_description(),
        });
    }
    let chains = crate::net::nftables::inet_chains(&options.table_name).map_err(|source| {
        Error::PolicyMissing {
            table: options.table_name.clone(),
            host: options.host_description(),
            detail: format!("listing its chains over nfnetlink failed: {source}"),
        }
    })?;
    let missing: Vec<&str> = POLICY_CHAINS
        .into_iter()
        .filter(|chain| !chains.iter().any(|name| name == chain))
        .collect();
    if !missing.is_empty() {
        return Err(Error::PolicyMissing {
            table: options.table_name.clone(),
            host: options.host_description(),
            detail: format!("it lacks the chains {}", missing.join(", ")),
        });
    }

    // SAFETY: unshare with a constant flag; it changes only this thread's namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(Error::Namespace {
            action: "unshare a new network namespace",
            source: std::io::Error::last_os_error(),
        });
    }
    let own_path = Path::new("/proc/thread-self/ns/net");
    let netns: OwnedFd = File::open(own_path)
        .map_err(|source| Error::Io {
            action: "opening",
            path: own_path.to_owned(),
            source,
        })?
        .into();
    let identity = identity_of_fd(&netns, own_path)?;
    if identity == platform || identity == host_side {
        return Err(Error::NotANewNamespace {
            path: own_path.to_owned(),
        });
    }
    // IPv6 off in the new namespace before any interface but `lo` is in it: `default` is what
    // the veth's end inherits when it is created here, `all` turns it off for `lo` (and takes
    // `::1` away). Sandboxes have no IPv6 at all; the policy drops it too.
    for setting in [
        "/proc/sys/net/ipv6/conf/default/disable_ipv6",
        "/proc/sys/net/ipv6/conf/all/disable_ipv6",
    ] {
        write_setting(setting, "1")?;
    }
    let inside = Rtnl::open().map_err(|source| Error::Namespace {
        action: "open an rtnetlink socket in the new namespace",
        source,
    })?;
    Ok(Made {
        netns,
        identity,
        host,
        inside,
    })
}

/// The `(device, inode)` of a namespace file.
pub(crate) fn identity_of(path: &Path) -> Result<(u64, u64), Error> {
    let metadata = std::fs::metadata(path).map_err(|source| Error::Io {
        action: "inspecting",
        path: path.to_owned(),
        source,
    })?;
    Ok((metadata.dev(), metadata.ino()))
}

fn identity_of_fd(fd: &OwnedFd, path: &Path) -> Result<(u64, u64), Error> {
    let stat = rustix::fs::fstat(fd).map_err(|errno| Error::Io {
        action: "inspecting",
        path: path.to_owned(),
        source: errno.into(),
    })?;
    Ok((stat.st_dev, stat.st_ino))
}

fn read_setting(path: &str) -> Result<String, Error> {
    let mut text = String::new();
    File::open(path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .map_err(|source| Error::Io {
            action: "reading",
            path: PathBuf::from(path),
            source,
        })?;
    Ok(text.trim().to_owned())
}

fn write_setting(path: &str, value: &str) -> Result<(), Error> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut file| file.write_all(value.as_bytes()))
        .map_err(|source| Error::Io {
            action: "writing",
            path: PathBuf::from(path),
            source,
        })
}
