//! One `public_egress` network per sandbox invocation, and the installation of the policy.

use std::fmt;
use std::io::Read as _;
use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::net::command::{Place, Tool, read_sysctl, run};
use crate::net::error::Error;
use crate::net::options::{
    EgressOptions, HOST_VETH_PREFIX, SANDBOX_VETH_PREFIX, is_interface_name,
};
use crate::net::ruleset::ruleset;

/// Where `ip netns add` puts its namespace handles.
pub(crate) const NETNS_DIRECTORY: &str = "/run/netns";

/// Installs (or atomically replaces) the nftables policy table in the host's namespace (or
/// `options.host_netns`). Idempotent: running it twice leaves the same table. The entries of
/// live sandboxes (`sandbox_links`) are carried over in the same transaction, so replacing the
/// policy never cuts off a running step.
pub fn install_policy(options: &EgressOptions) -> Result<(), Error> {
    options.validate()?;
    let place = Place::host(options.host_netns.as_deref());
    let mut program = ruleset(options);
    // A missing table simply has no entries to keep.
    let listing = run(
        place,
        Tool::Nft,
        &["list", "set", "inet", &options.table_name, "sandbox_links"],
        None,
    )
    .unwrap_or_default();
    let live = parse_link_elements(&listing);
    if !live.is_empty() {
        program.push_str(&format!(
            "add element inet {} sandbox_links {{ {} }}\n",
            options.table_name,
            live.join(", ")
        ));
    }
    run(place, Tool::Nft, &["-f", "-"], Some(&program))?;
    Ok(())
}

/// The `"swh3" . 10.231.0.14` entries of an `nft list set` output, each checked to be exactly
/// an interface name and an IPv4 address, so nothing else can be carried into the new table.
pub(crate) fn parse_link_elements(listing: &str) -> Vec<String> {
    let Some(start) = listing.find("elements = {") else {
        return Vec::new();
    };
    let rest = &listing[start + "elements = {".len()..];
    let Some(end) = rest.find('}') else {
        return Vec::new();
    };
    rest[..end]
        .split(',')
        .filter_map(|entry| {
            let (interface, address) = entry.trim().split_once(" . ")?;
            let interface = interface.strip_prefix('"')?.strip_suffix('"')?;
            let address: Ipv4Addr = address.trim().parse().ok()?;
            (interface.starts_with(HOST_VETH_PREFIX) && is_interface_name(interface))
                .then(|| format!("\"{interface}\" . {address}"))
        })
        .collect()
}

/// The network of one `public_egress` sandbox: a named network namespace owned by the host's
/// initial user namespace, joined by the jail; a veth pair to the host; and the sandbox's entry
/// in the policy's `sandbox_links` set. Dropping it removes all three.
pub struct EgressNetwork {
    namespace_name: String,
    netns_path: PathBuf,
    host_veth: String,
    sandbox_veth: String,
    gateway: Ipv4Addr,
    sandbox_address: Ipv4Addr,
    resolver: std::net::IpAddr,
    table_name: String,
    host_netns: Option<PathBuf>,
    created: Created,
}

/// What exists so far, so that a failure half-way (or a drop) removes exactly that.
#[derive(Debug, Default, Clone, Copy)]
struct Created {
    namespace: bool,
    veth: bool,
    link_element: bool,
}

impl fmt::Debug for EgressNetwork {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("EgressNetwork")
            .field("netns_path", &self.netns_path)
            .field("host_veth", &self.host_veth)
            .field("sandbox_veth", &self.sandbox_veth)
            .field("gateway", &self.gateway)
            .field("sandbox_address", &self.sandbox_address)
            .finish_non_exhaustive()
    }
}

impl EgressNetwork {
    /// Builds the network of one sandbox. `slot` is a small integer unique among the sandboxes
    /// alive at the same time (the jail's slot allocator gives it): it names the veths
    /// (`swh<slot>`, `sws<slot>`) and picks the /30 `pool + 4 * slot` (gateway `.1`, sandbox
    /// `.2`). Fails closed, naming what is missing: IPv4 forwarding off, the policy table
    /// absent, a slot outside the pool, a command failing.
    pub fn create(options: &EgressOptions, slot: u32) -> Result<EgressNetwork, Error> {
        options.validate()?;
        let capacity = options.pool_capacity();
        let pool_base = options
            .address_pool
            .ipv4_network_bits()
            .ok_or(Error::InvalidOption {
                option: "address_pool",
                value: options.address_pool.to_string(),
                reason: "must be an IPv4 range",
            })?;
        if slot >= capacity {
            return Err(Error::SlotOutOfRange {
                slot,
                pool: options.address_pool.to_string(),
                capacity,
            });
        }
        require_forwarding(options)?;

        let link_base = pool_base + slot * 4;
        let namespace_name = format!("{}-{slot}-{}", options.namespace_prefix, random_suffix()?);
        let mut network = EgressNetwork {
            netns_path: Path::new(NETNS_DIRECTORY).join(&namespace_name),
            namespace_name,
            host_veth: format!("{HOST_VETH_PREFIX}{slot}"),
            sandbox_veth: format!("{SANDBOX_VETH_PREFIX}{slot}"),
            gateway: Ipv4Addr::from(link_base + 1),
            sandbox_address: Ipv4Addr::from(link_base + 2),
            resolver: options.resolver,
            table_name: options.table_name.clone(),
            host_netns: options.host_netns.clone(),
            created: Created::default(),
        };
        // On any error below, dropping `network` removes what was already built.
        network.build()?;
        Ok(network)
    }

    /// Four commands, each a numbered step; the order never leaves a usable link unpoliced.
    fn build(&mut self) -> Result<(), Error> {
        // 1. The sandbox's entry in the policy, before its link exists. This is also the check
        //    that the policy is installed: without the table the command fails, and no sandbox
        //    starts. Packets from a veth without an entry are dropped as spoofed.
        let element = self.link_element();
        let script = format!(
            "add element inet {} sandbox_links {{ {element} }}\n",
            self.table_name
        );
        match run(self.host_place(), Tool::Nft, &["-f", "-"], Some(&script)) {
            Ok(_) => self.created.link_element = true,
            Err(Error::CommandFailed {
                command, stderr, ..
            }) => {
                return Err(Error::PolicyMissing {
                    table: self.table_name.clone(),
                    host: self.host_description(),
                    detail: format!("`{command}`: {stderr}"),
                });
            }
            Err(other) => return Err(other),
        }

        // 2. The namespace and the veth pair, in one `ip` run in the host's namespace. `ip`
        //    runs as the platform (host root), so the namespace is owned by the initial user
        //    namespace: nothing in the sandbox's user namespace holds CAP_NET_ADMIN over it.
        //    The sandbox end is created directly inside the new namespace.
        let host_batch = format!(
            "netns add {namespace}\n\
             link add {host} type veth peer name {sandbox} netns {namespace}\n\
             addr add {gateway}/30 dev {host}\n\
             link set {host} up\n",
            namespace = self.namespace_name,
            host = self.host_veth,
            sandbox = self.sandbox_veth,
            gateway = self.gateway,
        );
        let host_result = run(
            self.host_place(),
            Tool::Ip,
            &["-batch", "-"],
            Some(&host_batch),
        );
        // Whatever part of the batch ran is removed on drop.
        self.created.namespace = true;
        self.created.veth = true;
        host_result?;

        // 3. IPv6 off in the sandbox's namespace (its own sysctls, never the host's: the check
        //    refuses if the path were the caller's namespace). Removing the link-local address
        //    the veth got a moment ago is part of turning it off.
        self.refuse_if_callers_namespace()?;
        run(
            Place::Netns(&self.netns_path),
            Tool::Sysctl,
            &[
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
            None,
        )?;

        // 4. Inside: loopback, the veth with its /30, the default route via the host side.
        let sandbox_batch = format!(
            "link set lo up\n\
             addr add {address}/30 dev {sandbox}\n\
             link set {sandbox} up\n\
             route add default via {gateway}\n",
            address = self.sandbox_address,
            sandbox = self.sandbox_veth,
            gateway = self.gateway,
        );
        run(
            Place::Here,
            Tool::Ip,
            &["-netns", &self.namespace_name, "-batch", "-"],
            Some(&sandbox_batch),
        )?;
        Ok(())
    }

    /// The namespace file the jail opens and `setns`es into before its clone.
    pub fn netns_path(&self) -> &Path {
        &self.netns_path
    }

    /// The contents of the sandbox's `/etc/resolv.conf`: the configured resolver only.
    pub fn resolv_conf(&self) -> String {
        format!(
            "# stepward public_egress: the configured resolver is the only one reachable.\n\
             nameserver {}\n\
             options timeout:2 attempts:2\n",
            self.resolver
        )
    }

    /// The sandbox's own address on its /30.
    pub fn sandbox_address(&self) -> Ipv4Addr {
        self.sandbox_address
    }

    /// The host side of the veth (the sandbox's default gateway).
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The host-side veth name (`swh<slot>`).
    pub fn host_veth(&self) -> &str {
        &self.host_veth
    }

    /// Removes the veth, the namespace and the policy entry, reporting the first failure.
    /// Everything is attempted even after a failure.
    pub fn destroy(mut self) -> Result<(), Error> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), Error> {
        let mut first_error = None;
        // Deleting the host end removes the pair at once (deleting only the namespace would
        // free it asynchronously, and the next sandbox of this slot could find the name taken).
        let mut batch = String::new();
        if self.created.veth {
            batch.push_str(&format!("link del {}\n", self.host_veth));
        }
        if self.created.namespace {
            batch.push_str(&format!("netns del {}\n", self.namespace_name));
        }
        if !batch.is_empty() {
            // -force goes on past a failed line; what is still there afterwards is the error.
            let result = run(
                self.host_place(),
                Tool::Ip,
                &["-force", "-batch", "-"],
                Some(&batch),
            );
            match result {
                Ok(_) => {
                    self.created.veth = false;
                    self.created.namespace = false;
                }
                Err(error) => {
                    // A line may have failed only because its object was already gone.
                    self.created.veth = self.created.veth && self.host_link_exists();
                    self.created.namespace = self.created.namespace && self.netns_path.exists();
                    if self.created.veth || self.created.namespace {
                        first_error.get_or_insert(error);
                    }
                }
            }
        }
        if self.created.link_element {
            let script = format!(
                "delete element inet {} sandbox_links {{ {} }}\n",
                self.table_name,
                self.link_element()
            );
            match run(self.host_place(), Tool::Nft, &["-f", "-"], Some(&script)) {
                Ok(_) => self.created.link_element = false,
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn host_description(&self) -> String {
        match &self.host_netns {
            Some(path) => format!("the network namespace {}", path.display()),
            None => "the host's network namespace".to_owned(),
        }
    }

    fn host_place(&self) -> Place<'_> {
        Place::host(self.host_netns.as_deref())
    }

    fn host_link_exists(&self) -> bool {
        run(
            self.host_place(),
            Tool::Ip,
            &["link", "show", "dev", &self.host_veth],
            None,
        )
        .is_ok()
    }

    fn link_element(&self) -> String {
        format!("\"{}\" . {}", self.host_veth, self.sandbox_address)
    }

    fn refuse_if_callers_namespace(&self) -> Result<(), Error> {
        let own_path = Path::new("/proc/self/ns/net");
        let own = std::fs::metadata(own_path).map_err(|source| Error::Io {
            action: "inspecting",
            path: own_path.to_owned(),
            source,
        })?;
        let created = std::fs::metadata(&self.netns_path).map_err(|source| Error::Io {
            action: "inspecting",
            path: self.netns_path.clone(),
            source,
        })?;
        if own.dev() == created.dev() && own.ino() == created.ino() {
            return Err(Error::NotANewNamespace {
                path: self.netns_path.clone(),
            });
        }
        Ok(())
    }
}

impl Drop for EgressNetwork {
    fn drop(&mut self) {
        // Never panics: what cannot be removed now is removed by the next sweep.
        let _ = self.teardown();
    }
}

/// IPv4 forwarding must already be on where the host side lives: the platform never changes
/// host settings. On the real host the file is read directly; a test's host namespace is read
/// through `sysctl` inside it.
fn require_forwarding(options: &EgressOptions) -> Result<(), Error> {
    const SETTING: &str = "net.ipv4.ip_forward";
    let value = match &options.host_netns {
        None => {
            let path = Path::new("/proc/sys/net/ipv4/ip_forward");
            std::fs::read_to_string(path)
                .map_err(|source| Error::Io {
                    action: "reading",
                    path: path.to_owned(),
                    source,
                })?
                .trim()
                .to_owned()
        }
        Some(netns) => read_sysctl(Place::Netns(netns), SETTING)?,
    };
    if value != "1" {
        return Err(Error::ForwardingDisabled {
            setting: SETTING,
            value,
            host: options.host_description(),
        });
    }
    Ok(())
}

fn random_suffix() -> Result<String, Error> {
    let path = Path::new("/dev/urandom");
    let mut bytes = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut bytes))
        .map_err(|source| Error::Io {
            action: "reading",
            path: path.to_owned(),
            source,
        })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_link_elements_are_parsed_and_anything_else_is_dropped() {
        let listing = "table inet stepward {\n\tset sandbox_links {\n\t\ttype ifname . ipv4_addr\n\
                       \t\telements = { \"swh3\" . 10.231.0.14,\n\t\t\t     \"swh5\" . 10.231.0.22,\n\
                       \t\t\t     \"eth0\" . 10.0.0.1, \"swh6\" . accept }\n\t}\n}\n";
        assert_eq!(
            parse_link_elements(listing),
            ["\"swh3\" . 10.231.0.14", "\"swh5\" . 10.231.0.22"]
        );
        assert!(
            parse_link_elements("table inet stepward {\n\tset sandbox_links {\n\t}\n}\n")
                .is_empty()
        );
        assert!(parse_link_elements("").is_empty());
    }
}
