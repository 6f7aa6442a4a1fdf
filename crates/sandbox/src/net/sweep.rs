//! The start-up sweep: removes egress networks left behind.
//!
//! A platform that dies takes its sandboxes' network namespaces with it (they live only as long
//! as its descriptors on them) and with them their veth pairs, so a crash of this version leaves
//! nothing. The sweep still removes what another process could have left: host-side veths
//! `swh<slot>` whose namespace is still held, and named namespaces `<namespace_prefix>-*` under
//! `/run/netns` that versions before issue 13 mounted there. It must run before any sandbox of
//! this platform starts (it cannot tell a leftover from a live sandbox of the same prefix), and
//! touches only names it owns. Everything goes through rtnetlink and plain file operations; no
//! command runs.

use std::path::Path;

use crate::net::error::Error;
use crate::net::namespace;
use crate::net::options::{EgressOptions, HOST_VETH_PREFIX};

/// Where versions before issue 13 mounted their namespaces (as `ip netns add` does).
const NETNS_DIRECTORY: &str = "/run/netns";

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Named network namespaces deleted (their names).
    pub namespaces: Vec<String>,
    /// Host-side veths deleted.
    pub host_links: Vec<String>,
}

/// Removes every leftover egress network of this configuration. Attempts everything and
/// reports the first failure, so one stuck link does not hide the others.
pub fn sweep(options: &EgressOptions) -> Result<SweepReport, Error> {
    options.validate()?;
    let mut report = SweepReport::default();
    let mut first_error = None;

    let mut host = namespace::host_socket(options)?;
    let links = host.links().map_err(|source| Error::Netlink {
        operation: String::from("list the host side's links"),
        source,
    })?;
    for link in links {
        if !is_sandbox_host_veth(&link.name) {
            continue;
        }
        match host.delete_link(link.index) {
            Ok(()) => report.host_links.push(link.name),
            // Gone already: deleting one end of a pair removes the other.
            Err(error) if error.raw_os_error() == Some(libc::ENODEV) => {}
            Err(source) => {
                first_error.get_or_insert(Error::Netlink {
                    operation: format!("delete the leftover veth {}", link.name),
                    source,
                });
            }
        }
    }

    let prefix = format!("{}-", options.namespace_prefix);
    for name in namespace_names(Path::new(NETNS_DIRECTORY))? {
        if !name.starts_with(&prefix) {
            continue;
        }
        let path = Path::new(NETNS_DIRECTORY).join(&name);
        // What `ip netns delete` does: detach the bind mount that holds it, remove the file.
        let _ = rustix::mount::unmount(&path, rustix::mount::UnmountFlags::DETACH);
        match std::fs::remove_file(&path) {
            Ok(()) => report.namespaces.push(name),
            Err(source) => {
                first_error.get_or_insert(Error::Io {
                    action: "removing",
                    path,
                    source,
                });
            }
        }
    }

    match first_error {
        Some(error) => Err(error),
        None => Ok(report),
    }
}

/// `swh<slot>x<hex>` (and `swh<slot>`, the names before issue 13).
fn is_sandbox_host_veth(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(HOST_VETH_PREFIX) else {
        return false;
    };
    let (slot, random) = rest.split_once('x').unwrap_or((rest, "0"));
    !slot.is_empty()
        && slot.chars().all(|c| c.is_ascii_digit())
        && !random.is_empty()
        && random.chars().all(|c| c.is_ascii_hexdigit())
}

fn namespace_names(directory: &Path) -> Result<Vec<String>, Error> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                action: "listing",
                path: directory.to_owned(),
                source,
            });
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io {
            action: "listing",
            path: directory.to_owned(),
            source,
        })?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sandbox_veths_are_selected() {
        let names = [
            "lo",
            "swh3",
            "swhx",
            "eth0",
            "swh12",
            "swh",
            "swh1a",
            "swh7x0a1b2c",
            "swh7x",
            "swhx12",
            "swh7xzz",
        ];
        let selected: Vec<&str> = names
            .into_iter()
            .filter(|name| is_sandbox_host_veth(name))
            .collect();
        assert_eq!(selected, ["swh3", "swh12", "swh7x0a1b2c"]);
    }
}
