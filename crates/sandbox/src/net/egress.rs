//! One `public_egress` network per sandbox invocation, and the installation of the policy.

use std::fmt;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use crate::net::command::{Place, Tool, run};
use crate::net::error::Error;
use crate::net::namespace;
use crate::net::netlink::Rtnl;
use crate::net::options::{EgressOptions, HOST_VETH_PREFIX, SANDBOX_VETH_PREFIX};
use crate::net::ruleset::ruleset;

/// Installs (or atomically replaces) the nftables policy table in the host's namespace (or
/// `options.host_netns`), once, when a backend starts. Idempotent: running it twice leaves the
/// same table. The table names no sandbox (every `swh*` veth is policed alike), so replacing
/// it never cuts a running step off its policy, and no step ever changes it.
pub fn install_policy(options: &EgressOptions) -> Result<(), Error> {
    options.validate()?;
    let place = Place::host(options.host_netns.as_deref());
    run(place, Tool::Nft, &["-f", "-"], Some(&ruleset(options)))?;
    Ok(())
}

/// The network of one `public_egress` sandbox: a network namespace of its own, made by the
/// platform and owned by the host's initial user namespace, joined by the jail (or by runsc);
/// and a veth pair to the host, policed by the table [`install_policy`] loaded. Built and
/// removed with rtnetlink messages only (no process, no firewall change). Dropping it removes
/// the veth pair and lets the namespace go.
pub struct EgressNetwork {
    /// Holds the namespace: it lives as long as this descriptor (or a sandbox in it).
    netns: Option<OwnedFd>,
    netns_path: PathBuf,
    identity: (u64, u64),
    host: Rtnl,
    host_veth: String,
    /// The host end's index, once the pair exists.
    host_index: Option<u32>,
    sandbox_veth: String,
    slot: u32,
    gateway: Ipv4Addr,
    sandbox_address: Ipv4Addr,
    resolver: std::net::IpAddr,
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

/// Every namespace's loopback has this index (the kernel's `LOOPBACK_IFINDEX`).
const LOOPBACK_INDEX: u32 = 1;

impl EgressNetwork {
    /// Builds the network of one sandbox. `slot` is a small integer unique among the sandboxes
    /// alive at the same time (the jail's slot allocator gives it): it picks the /30
    /// `pool + 4 * slot` (gateway `.1`, sandbox `.2`) and names the veths: `sws<slot>` inside,
    /// `swh<slot>x<random>` on the host side (the random part because the kernel frees the
    /// host end of a removed network a little later, see [`EgressNetwork::destroy`]). Fails closed, naming what is missing: IPv4 forwarding off, the policy table
    /// absent, a slot outside the pool, a netlink operation failing.
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
        // 1. A new namespace with IPv6 off, and a socket on each side; the host side is
        //    checked first (forwarding on, the whole policy table there), so that no sandbox
        //    ever gets a link the policy does not see.
        let made = namespace::make(options)?;
        let link_base = pool_base + slot * 4;
        let mut network = EgressNetwork {
            netns_path: PathBuf::from(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                made.netns.as_raw_fd()
            )),
            netns: Some(made.netns),
            identity: made.identity,
            host: made.host,
            host_veth: host_veth_name(slot)?,
            host_index: None,
            sandbox_veth: format!("{SANDBOX_VETH_PREFIX}{slot}"),
            slot,
            gateway: Ipv4Addr::from(link_base + 1),
            sandbox_address: Ipv4Addr::from(link_base + 2),
            resolver: options.resolver,
        };
        // On any error below, dropping `network` removes what was already built.
        network.build(made.inside)?;
        Ok(network)
    }

    /// The links, addresses and route, each a numbered step.
    fn build(&mut self, mut inside: Rtnl) -> Result<(), Error> {
        let failed = |operation: String| move |source| Error::Netlink { operation, source };
        // 2. The veth pair, its sandbox end created directly inside the new namespace. From
        //    the moment it exists the host end is policed: the table matches every `swh*`.
        let Some(netns) = self.netns.as_ref().map(AsFd::as_fd) else {
            return Err(Error::Namespace {
                action: "create the veth pair",
                source: std::io::Error::other("the network's namespace is already gone"),
            });
        };
        let mut created = self
            .host
            .create_veth(&self.host_veth, &self.sandbox_veth, netns);
        if created
            .as_ref()
            .is_err_and(|error| error.raw_os_error() == Some(libc::EEXIST))
        {
            // The random part of the name was taken (a one in sixteen million chance per
            // network of the same slot still being freed): once more with another.
            self.host_veth = host_veth_name(self.slot)?;
            created = self
                .host
                .create_veth(&self.host_veth, &self.sandbox_veth, netns);
        }
        let host_index = created.map_err(failed(format!(
            "create the veth pair {}/{}",
            self.host_veth, self.sandbox_veth
        )))?;
        self.host_index = Some(host_index);
        // 3. The host end: the gateway address of the slot's /30, up.
        self.host
            .add_ipv4_address(host_index, self.gateway, 30)
            .map_err(failed(format!(
                "add {}/30 to {}",
                self.gateway, self.host_veth
            )))?;
        self.host
            .set_up(host_index)
            .map_err(failed(format!("set {} up", self.host_veth)))?;
        // 4. Inside: loopback up, the sandbox end with its address, up, and the default route
        //    via the gateway.
        inside
            .set_up(LOOPBACK_INDEX)
            .map_err(failed(String::from("set the sandbox's lo up")))?;
        let sandbox_index = inside
            .index_of(&self.sandbox_veth)
            .map_err(failed(format!("find {} inside", self.sandbox_veth)))?;
        inside
            .add_ipv4_address(sandbox_index, self.sandbox_address, 30)
            .map_err(failed(format!(
                "add {}/30 to {}",
                self.sandbox_address, self.sandbox_veth
            )))?;
        inside
            .set_up(sandbox_index)
            .map_err(failed(format!("set {} up", self.sandbox_veth)))?;
        inside
            .add_default_route(sandbox_index, self.gateway)
            .map_err(failed(format!(
                "add the default route via {}",
                self.gateway
            )))?;
        Ok(())
    }

    /// The namespace file the jail opens and `setns`es into before its clone (and runsc
    /// joins): this process's descriptor on it, valid while this value lives.
    pub fn netns_path(&self) -> &Path {
        &self.netns_path
    }

    /// The namespace's device and inode: a joiner checks that the file it opened names this
    /// namespace and no other.
    pub fn netns_identity(&self) -> (u64, u64) {
        self.identity
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

    /// The host-side veth name (`swh<slot>x<random>`).
    pub fn host_veth(&self) -> &str {
        &self.host_veth
    }

    /// Removes the network as dropping it does, then waits until the kernel has freed the
    /// host end too (tests and the sweep's callers want to see it gone).
    pub fn destroy(mut self) -> Result<(), Error> {
        let index = self.host_index;
        self.teardown()?;
        drop(self.netns.take());
        if let Some(index) = index {
            wait_until_gone(&mut self.host, index)?;
        }
        Ok(())
    }

    /// Takes the slot's /30 off the host end (its address and with it the routes to the
    /// sandbox: the next network of this slot gets them), then lets the namespace go when
    /// `netns` closes right after. The kernel removes a namespace nobody holds on its own
    /// cleanup thread, with its veth end and so the host end: that costs RCU grace periods
    /// (milliseconds), which `RTM_DELLINK` would make this thread wait for. Nothing can use the
    /// link meanwhile: every process of the sandbox is dead, and the host end has no address.
    fn teardown(&mut self) -> Result<(), Error> {
        if let Some(index) = self.host_index.take() {
            match self.host.delete_ipv4_address(index, self.gateway, 30) {
                Ok(()) => {}
                // Gone already (a sweep, or an operator, removed the link).
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(libc::ENODEV | libc::EADDRNOTAVAIL)
                    ) => {}
                Err(source) => {
                    // The address cannot be taken back: remove the whole pair instead, and
                    // wait for it, so the slot's next network never finds its /30 taken.
                    self.host.delete_link(index).map_err(|_| Error::Netlink {
                        operation: format!("remove {}/30 from {}", self.gateway, self.host_veth),
                        source,
                    })?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for EgressNetwork {
    fn drop(&mut self) {
        // Never panics: a veth that cannot be removed now is removed by the next sweep. The
        // namespace goes when `netns` closes, right after.
        let _ = self.teardown();
    }
}

/// A host-side veth name for `slot`: `swh<slot>x` and six random hex digits (at most 15
/// characters for any slot of a /16 pool).
fn host_veth_name(slot: u32) -> Result<String, Error> {
    let mut bytes = [0u8; 3];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer we own.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if filled != bytes.len() as isize {
        return Err(Error::Namespace {
            action: "draw a random veth name",
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(format!(
        "{HOST_VETH_PREFIX}{slot}x{:02x}{:02x}{:02x}",
        bytes[0], bytes[1], bytes[2]
    ))
}

/// Waits until the link `index` no longer exists (its namespace's cleanup removed it).
fn wait_until_gone(host: &mut Rtnl, index: u32) -> Result<(), Error> {
    let deadline = std::time::Instant::now()
        .checked_add(std::time::Duration::from_secs(10))
        .unwrap_or_else(std::time::Instant::now);
    loop {
        match host.link_exists(index) {
            Ok(false) => return Ok(()),
            Ok(true) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Ok(true) => {
                return Err(Error::Netlink {
                    operation: format!("see the host end (link {index}) go within 10 seconds"),
                    source: std::io::Error::from(std::io::ErrorKind::TimedOut),
                });
            }
            Err(source) => {
                return Err(Error::Netlink {
                    operation: format!("look for link {index}"),
                    source,
                });
            }
        }
    }
}
