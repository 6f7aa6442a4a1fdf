//! The start-up sweep: removes egress networks left behind by a crash.
//!
//! It must run before any sandbox of this platform starts (it cannot tell a leftover from a
//! live sandbox of the same prefix), and touches only names it owns: namespaces
//! `<namespace_prefix>-*`, host links `swh*` in the host namespace, and the elements of the
//! policy's `sandbox_links` set.

use std::path::Path;

use crate::net::command::{Place, Tool, run};
use crate::net::egress::NETNS_DIRECTORY;
use crate::net::error::Error;
use crate::net::options::{EgressOptions, HOST_VETH_PREFIX, is_interface_name};

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Network namespaces deleted (their names).
    pub namespaces: Vec<String>,
    /// Host-side veths deleted.
    pub host_links: Vec<String>,
    /// Whether the `sandbox_links` set existed and was emptied.
    pub link_elements_flushed: bool,
}

/// Removes every leftover egress network of this configuration. Attempts everything and
/// reports the first failure, so one stuck namespace does not hide the others.
pub fn sweep(options: &EgressOptions) -> Result<SweepReport, Error> {
    options.validate()?;
    let host_place = Place::host(options.host_netns.as_deref());
    let mut report = SweepReport::default();
    let mut first_error = None;

    for link in host_links(host_place)? {
        match run(host_place, Tool::Ip, &["link", "del", &link], None) {
            Ok(_) => report.host_links.push(link),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }

    let prefix = format!("{}-", options.namespace_prefix);
    for name in namespace_names(Path::new(NETNS_DIRECTORY))? {
        if !name.starts_with(&prefix) {
            continue;
        }
        match run(Place::Here, Tool::Ip, &["netns", "delete", &name], None) {
            Ok(_) => report.namespaces.push(name),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }

    // A missing table is not an error: there is nothing to flush, and create() refuses to run
    // until install_policy has put the table back.
    let table_exists = run(
        host_place,
        Tool::Nft,
        &["list", "table", "inet", &options.table_name],
        None,
    )
    .is_ok();
    if table_exists {
        match run(
            host_place,
            Tool::Nft,
            &["flush", "set", "inet", &options.table_name, "sandbox_links"],
            None,
        ) {
            Ok(_) => report.link_elements_flushed = true,
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }

    match first_error {
        Some(error) => Err(error),
        None => Ok(report),
    }
}

/// The host-side sandbox veths, from `ip -o link show` lines such as
/// `7: swh3@if2: <BROADCAST,...> ...`.
fn host_links(place: Place<'_>) -> Result<Vec<String>, Error> {
    let listing = run(place, Tool::Ip, &["-o", "link", "show"], None)?;
    Ok(parse_link_names(&listing)
        .into_iter()
        .filter(|name| is_sandbox_host_veth(name))
        .collect())
}

fn is_sandbox_host_veth(name: &str) -> bool {
    name.strip_prefix(HOST_VETH_PREFIX)
        .is_some_and(|slot| !slot.is_empty() && slot.chars().all(|c| c.is_ascii_digit()))
}

pub(crate) fn parse_link_names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_owned())
        .filter(|name| is_interface_name(name))
        .collect()
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
    fn link_listing_is_parsed_and_only_sandbox_veths_are_selected() {
        let listing = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noop\\    link/loopback\n\
                       7: swh3@if2: <BROADCAST,MULTICAST,UP> mtu 1500\\    link/ether\n\
                       8: swhx@if2: <BROADCAST> mtu 1500\n\
                       9: eth0: <BROADCAST> mtu 1500\n\
                       10: swh12@if3: <BROADCAST> mtu 1500\n";
        let names = parse_link_names(listing);
        assert_eq!(names, ["lo", "swh3", "swhx", "eth0", "swh12"]);
        let selected: Vec<&String> = names
            .iter()
            .filter(|name| is_sandbox_host_veth(name))
            .collect();
        assert_eq!(selected, ["swh3", "swh12"]);
    }
}
