//! The test network (DESIGN section 7): a "host" namespace playing the platform's side, an
//! "internet" namespace at 203.0.113.1, and a "private" namespace holding an address in every
//! denied range that the kernel can route. Nothing in it is connected to the real host: every
//! packet a test sends stays inside these namespaces.
//!
//! ```text
//!  sandbox ns ──veth swh<slot>── host ns ──swtu── internet ns (203.0.113.1, .10-.12, .80,
//!   (EgressNetwork)   (gateway,    │                            resolver 198.51.100.53)
//!                      policy,     └──swtp── private ns (10.0.0.5, 172.16.0.5, ...)
//!                      forwarding)
//! ```

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sandbox::net::{EgressNetwork, EgressOptions, Uplink};

use crate::net::support::{
    IP, NFT, NSENTER, PYTHON, SANDBOX_PREFIX, TEST_NETNS_PREFIX, TestNetns, run_in,
    sweep_dead_test_namespaces, unique_tag,
};

pub const INTERNET: &str = "203.0.113.1";
pub const HOST_UPLINK_ADDRESS: &str = "203.0.113.254";
pub const HOST_PRIVATE_LINK_ADDRESS: &str = "10.254.0.1";
pub const PRIVATE_LINK_ADDRESS: &str = "10.254.0.2";
pub const ENDPOINT: &str = "203.0.113.80";
pub const RESOLVER: &str = "198.51.100.53";
pub const MULTI_NAME: &str = "multi.egress.test";
pub const MULTI_ADDRESSES: [&str; 3] = ["203.0.113.10", "203.0.113.11", "203.0.113.12"];
pub const TCP_PORT: u16 = 8080;
pub const UDP_PORT: u16 = 8081;
/// A port on the resolver's address other than 53: the exemption must not cover it.
pub const RESOLVER_OTHER_PORT: u16 = 5353;

/// One address in each denied IPv4 range, all held by the "private" namespace and routed to it
/// from the "host", so that without the policy a sandbox reaches every one of them.
pub const PRIVATE_TARGETS: &[(&str, &str)] = &[
    ("0.0.0.0/8", "0.0.0.5"),
    ("10.0.0.0/8", "10.0.0.5"),
    ("100.64.0.0/10", "100.64.0.5"),
    ("169.254.0.0/16", "169.254.169.254"),
    ("172.16.0.0/12", "172.16.0.5"),
    ("172.16.0.0/12", "172.31.255.5"),
    ("192.0.0.0/24", "192.0.0.5"),
    ("192.0.2.0/24", "192.0.2.5"),
    ("192.88.99.0/24", "192.88.99.5"),
    ("192.168.0.0/16", "192.168.0.5"),
    ("198.18.0.0/15", "198.18.0.5"),
    ("198.18.0.0/15", "198.19.0.5"),
    ("198.51.100.0/24", "198.51.100.5"),
    ("240.0.0.0/4", "240.0.0.5"),
    ("the address pool (another sandbox)", "10.231.255.254"),
];

/// Which uplink the policy masquerades to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UplinkChoice {
    DefaultRoute,
    NamedInterface,
}

/// Whether the host namespace routes (the platform's install docs require it on a real host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarding {
    On,
    Off,
}

/// A listener process inside a test namespace, killed (by its pid) on drop.
pub struct Listener {
    child: Child,
    pub log: PathBuf,
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole test network. Field order is drop order: listeners die before their namespaces.
pub struct Topology {
    pub options: EgressOptions,
    listeners: Vec<Listener>,
    pub host: TestNetns,
    pub internet: TestNetns,
    pub private: TestNetns,
    pub scratch: tempfile::TempDir,
}

impl Topology {
    /// Builds the namespaces, links, routes and listeners. The policy is not installed yet.
    pub fn build(uplink: UplinkChoice, forwarding: Forwarding) -> Topology {
        sweep_dead_test_namespaces();
        let tag = unique_tag();
        let scratch = tempfile::Builder::new()
            .prefix("stepward-net-")
            .tempdir()
            .unwrap();
        // The probe runs as an unprivileged user and must read its script and request.
        set_mode(scratch.path(), 0o755);
        for (name, text) in [
            ("listener.py", include_str!("listener.py")),
            ("dns_responder.py", include_str!("dns_responder.py")),
            ("probe.py", include_str!("probe.py")),
        ] {
            let path = scratch.path().join(name);
            std::fs::write(&path, text).unwrap();
            set_mode(&path, 0o644);
        }

        let host = TestNetns::create(format!("{TEST_NETNS_PREFIX}{tag}-host"));
        let internet = TestNetns::create(format!("{TEST_NETNS_PREFIX}{tag}-inet"));
        let private = TestNetns::create(format!("{TEST_NETNS_PREFIX}{tag}-priv"));
        let mut options = EgressOptions::with_resolver(RESOLVER.parse().unwrap());
        options.table_name = format!("swt{tag}");
        options.namespace_prefix = format!("{SANDBOX_PREFIX}{tag}");
        options.host_netns = Some(host.path.clone());
        options.test_internet_exemption = Some("203.0.113.0/24".parse().unwrap());
        options.platform_endpoints = vec![ENDPOINT.parse().unwrap()];
        options.uplink = match uplink {
            UplinkChoice::DefaultRoute => Uplink::DefaultRoute,
            UplinkChoice::NamedInterface => Uplink::Interface("swtu".to_owned()),
        };
        let mut topology = Topology {
            options,
            listeners: Vec::new(),
            host,
            internet,
            private,
            scratch,
        };
        topology.wire(forwarding);
        topology.start_listeners();
        topology
    }

    fn wire(&self, forwarding: Forwarding) {
        // The links are created directly inside the test namespaces; nothing touches the host.
        for (host_end, other_end, other) in [
            ("swtu", "inet0", &self.internet),
            ("swtp", "priv0", &self.private),
        ] {
            crate::net::support::run(
                IP,
                &[
                    "link",
                    "add",
                    host_end,
                    "netns",
                    &self.host.name,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    other_end,
                    "netns",
                    &other.name,
                ],
            );
        }
        for namespace in [&self.host, &self.internet, &self.private] {
            namespace.set_sysctl("net.ipv6.conf.all.disable_ipv6=1");
        }
        if forwarding == Forwarding::On {
            self.host.set_sysctl("net.ipv4.ip_forward=1");
        }
        self.host.ip_batch(&format!(
            "link set lo up\n\
             addr add {HOST_UPLINK_ADDRESS}/24 dev swtu\n\
             link set swtu up\n\
             addr add {HOST_PRIVATE_LINK_ADDRESS}/30 dev swtp\n\
             link set swtp up\n\
             route add default via {INTERNET} dev swtu\n\
             route add {RESOLVER}/32 via {INTERNET} dev swtu\n"
        ));
        let mut host_routes = String::new();
        for (_, address) in PRIVATE_TARGETS {
            host_routes.push_str(&format!(
                "route add {address}/32 via {PRIVATE_LINK_ADDRESS} dev swtp\n"
            ));
        }
        self.host.ip_batch(&host_routes);

        let mut internet = format!(
            "link set lo up\n\
             addr add {INTERNET}/24 dev inet0\n\
             link set inet0 up\n\
             addr add {RESOLVER}/32 dev lo\n\
             addr add {ENDPOINT}/32 dev lo\n\
             route add default via {HOST_UPLINK_ADDRESS} dev inet0\n"
        );
        for address in MULTI_ADDRESSES {
            internet.push_str(&format!("addr add {address}/32 dev lo\n"));
        }
        self.internet.ip_batch(&internet);

        let mut private = format!(
            "link set lo up\n\
             addr add {PRIVATE_LINK_ADDRESS}/30 dev priv0\n\
             link set priv0 up\n\
             route add default via {HOST_PRIVATE_LINK_ADDRESS} dev priv0\n"
        );
        for (_, address) in PRIVATE_TARGETS {
            private.push_str(&format!("addr add {address}/32 dev lo\n"));
        }
        self.private.ip_batch(&private);
    }

    fn start_listeners(&mut self) {
        let mut internet_specs = Vec::new();
        for address in [INTERNET, ENDPOINT, MULTI_ADDRESSES[0]] {
            internet_specs.push(format!("tcp:{address}:{TCP_PORT}"));
            internet_specs.push(format!("udp:{address}:{UDP_PORT}"));
        }
        internet_specs.push(format!("tcp:{RESOLVER}:{RESOLVER_OTHER_PORT}"));
        internet_specs.push(format!("udp:{RESOLVER}:{RESOLVER_OTHER_PORT}"));
        let mut private_specs = Vec::new();
        for (_, address) in PRIVATE_TARGETS {
            private_specs.push(format!("tcp:{address}:{TCP_PORT}"));
            private_specs.push(format!("udp:{address}:{UDP_PORT}"));
        }
        // The host's own addresses: a wildcard bind covers the gateway of every sandbox too. UDP
        // also binds each fixed address, so replies leave from the address that was asked.
        let host_specs = vec![
            format!("tcp:0.0.0.0:{TCP_PORT}"),
            format!("udp:{HOST_PRIVATE_LINK_ADDRESS}:{UDP_PORT}"),
            format!("udp:{HOST_UPLINK_ADDRESS}:{UDP_PORT}"),
            format!("udp:0.0.0.0:{UDP_PORT}"),
        ];

        let internet_path = self.internet.path.clone();
        let private_path = self.private.path.clone();
        let host_path = self.host.path.clone();
        let listener = self.script("listener.py");
        let responder = self.script("dns_responder.py");
        let internet_listener = self.spawn(&internet_path, "internet", &listener, &internet_specs);
        let private_listener = self.spawn(&private_path, "private", &listener, &private_specs);
        let host_listener = self.spawn(&host_path, "host", &listener, &host_specs);
        let mut dns_arguments = vec![RESOLVER.to_owned(), MULTI_NAME.to_owned()];
        dns_arguments.extend(MULTI_ADDRESSES.iter().map(|address| (*address).to_owned()));
        let dns = self.spawn(&internet_path, "dns", &responder, &dns_arguments);
        self.listeners
            .extend([internet_listener, private_listener, host_listener, dns]);
    }

    fn script(&self, name: &str) -> String {
        self.scratch.path().join(name).display().to_string()
    }

    fn spawn(&self, netns: &Path, label: &str, script: &str, arguments: &[String]) -> Listener {
        let log = self.scratch.path().join(format!("{label}.log"));
        std::fs::write(&log, "").unwrap();
        let mut command = Command::new(NSENTER);
        command
            .arg(format!("--net={}", netns.display()))
            .arg("--")
            .arg(PYTHON)
            .args(["-I", "-S", script])
            .arg(&log)
            .args(arguments)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().unwrap();
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first_line)
            .unwrap();
        let listener = Listener { child, log };
        assert_eq!(
            first_line.trim(),
            "ready",
            "the {label} listener did not start"
        );
        listener
    }

    /// Every line the listeners and the resolver logged so far, as `label: line`.
    pub fn hits(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for listener in &self.listeners {
            let label = listener
                .log
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&listener.log).unwrap();
            lines.extend(text.lines().map(|line| format!("{label}: {line}")));
        }
        lines
    }

    /// Forgets the hits so far (between a policy run and a control run).
    pub fn clear_hits(&self) {
        for listener in &self.listeners {
            std::fs::write(&listener.log, "").unwrap();
        }
    }

    pub fn install_policy(&self) {
        sandbox::net::install_policy(&self.options).unwrap();
    }

    /// Removes the policy table, for the control run that shows every target is reachable.
    pub fn remove_policy(&self) {
        run_in(
            &self.host.path,
            NFT,
            &["delete", "table", "inet", &self.options.table_name],
        );
    }

    /// The policy table as nft prints it (for messages and comparisons).
    pub fn list_policy(&self) -> String {
        let listing = output_in_host(self, &["list", "table", "inet", &self.options.table_name]);
        String::from_utf8_lossy(&listing.stdout).into_owned()
    }

    pub fn create_network(&self, slot: u32) -> EgressNetwork {
        EgressNetwork::create(&self.options, slot).unwrap()
    }
}

fn output_in_host(topology: &Topology, arguments: &[&str]) -> std::process::Output {
    crate::net::support::output_in(&topology.host.path, NFT, arguments)
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Listeners first (they pin nothing, but their logs are no longer needed), then whatever
        // sandbox networks a failed test left, then the namespaces themselves (field drops).
        self.listeners.clear();
        let _ = sandbox::net::sweep(&self.options);
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
