//! The egress network's life: it fails closed without forwarding or without the policy, the
//! sandbox cannot change its own addresses, routes or rules, drop and sweep remove everything,
//! and the test network never reaches anything but its own namespaces.

use sandbox::net::{EgressNetwork, Error, install_policy, sweep};
use serde_json::json;

use crate::net::probe::{ProbeUser, run_probe};
use crate::net::support::{IP, NFT, output, output_in, real_host_ip_forward, run_in};
use crate::net::topology::{Forwarding, Topology, UplinkChoice};

/// The host side's sandbox veths (`swh<slot>`).
fn host_sandbox_links(topology: &Topology) -> Vec<String> {
    topology
        .host
        .links()
        .into_iter()
        .filter(|link| link.starts_with("swh"))
        .collect()
}

/// Whether `path` still opens the namespace `identity` (after the network is gone its
/// descriptor is closed, and the number may since name something else).
fn still_names(path: &std::path::Path, identity: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == identity)
}

#[test]
fn g11_create_fails_closed_without_forwarding_needs_root() {
    let host_forwarding_before = real_host_ip_forward();
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::Off);
    topology.install_policy();
    let error = EgressNetwork::create(&topology.options, 1).unwrap_err();
    assert!(matches!(error, Error::ForwardingDisabled { .. }), "{error}");
    assert!(error.to_string().contains("net.ipv4.ip_forward"), "{error}");
    assert!(host_sandbox_links(&topology).is_empty());
    assert_eq!(real_host_ip_forward(), host_forwarding_before);
}

#[test]
fn g11_create_fails_closed_without_the_policy_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let error = EgressNetwork::create(&topology.options, 1).unwrap_err();
    assert!(matches!(error, Error::PolicyMissing { .. }), "{error}");
    assert!(
        error.to_string().contains(&topology.options.table_name),
        "{error}"
    );
    assert!(host_sandbox_links(&topology).is_empty());
    // A table of that name that lacks the policy's chains is not the policy either.
    run_in(
        &topology.host.path,
        NFT,
        &["add", "table", "inet", &topology.options.table_name],
    );
    let error = EgressNetwork::create(&topology.options, 1).unwrap_err();
    assert!(matches!(error, Error::PolicyMissing { .. }), "{error}");
    assert!(error.to_string().contains("from_sandbox"), "{error}");
    assert!(host_sandbox_links(&topology).is_empty());
    // Control: with the policy it works.
    topology.install_policy();
    let network = topology.create_network(1);
    assert!(network.netns_path().exists());
    assert_eq!(host_sandbox_links(&topology), [network.host_veth()]);
}

#[test]
fn g11_slot_outside_the_pool_is_refused_needs_root() {
    let mut topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.options.address_pool = "10.231.0.0/28".parse().unwrap();
    topology.install_policy();
    let error = EgressNetwork::create(&topology.options, 4).unwrap_err();
    assert!(
        matches!(
            error,
            Error::SlotOutOfRange {
                slot: 4,
                capacity: 4,
                ..
            }
        ),
        "{error}"
    );
    let last = topology.create_network(3);
    assert_eq!(last.sandbox_address().to_string(), "10.231.0.14");
    assert_eq!(last.gateway().to_string(), "10.231.0.13");
}

#[test]
fn g6_drop_removes_the_veth_pair_and_the_namespace_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(5);
    let identity = network.netns_identity();
    assert!(still_names(network.netns_path(), identity));
    // The namespace is the platform's descriptor on it: nothing is mounted under /run/netns.
    assert!(
        network
            .netns_path()
            .starts_with(format!("/proc/{}/fd", std::process::id())),
        "{}",
        network.netns_path().display()
    );
    let host_veth = network.host_veth().to_owned();
    assert!(host_veth.starts_with("swh5x"), "{host_veth}");
    assert_eq!(
        host_sandbox_links(&topology),
        std::slice::from_ref(&host_veth)
    );
    // Inside: loopback and the sandbox veth only, IPv6 off, the default route via the gateway.
    let inside = run_in(network.netns_path(), IP, &["-o", "link", "show"]);
    assert_eq!(inside.lines().count(), 2, "{inside}");
    assert!(inside.contains(": sws5@"), "{inside}");
    let addresses = run_in(network.netns_path(), IP, &["-o", "addr", "show"]);
    assert!(addresses.contains("inet 10.231.0.22/30"), "{addresses}");
    assert!(!addresses.contains("inet6"), "{addresses}");
    let routes = run_in(network.netns_path(), IP, &["route", "show"]);
    assert!(
        routes.contains("default via 10.231.0.21 dev sws5"),
        "{routes}"
    );
    for setting in [
        "net.ipv6.conf.all.disable_ipv6",
        "net.ipv6.conf.default.disable_ipv6",
    ] {
        let value = run_in(network.netns_path(), "/usr/sbin/sysctl", &["-n", setting]);
        assert_eq!(value.trim(), "1", "{setting}");
    }
    let host_addresses = run_in(
        &topology.host.path,
        IP,
        &["-o", "addr", "show", "dev", &host_veth],
    );
    assert!(
        host_addresses.contains("inet 10.231.0.21/30"),
        "{host_addresses}"
    );

    let path = network.netns_path().to_path_buf();
    network.destroy().unwrap();
    assert!(host_sandbox_links(&topology).is_empty());
    assert!(!still_names(&path, identity));
}

#[test]
fn g11_building_and_removing_a_sandbox_network_never_changes_the_firewall_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    // The whole ruleset of the host side, not only the policy table: nothing else may change
    // either. Counters move with traffic, and no traffic flows here.
    let ruleset = || run_in(&topology.host.path, NFT, &["list", "ruleset"]);
    let before = ruleset();
    let first = topology.create_network(2);
    let second = topology.create_network(3);
    assert_eq!(ruleset(), before, "a sandbox network changed the firewall");
    drop(first);
    assert_eq!(ruleset(), before);
    drop(second);
    assert_eq!(ruleset(), before);
    assert!(
        !before.contains("swh2") && !before.contains("swh3"),
        "{before}"
    );
}

#[test]
fn g6_sweep_removes_what_a_crash_left_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let first = topology.create_network(1);
    let second = topology.create_network(2);
    let mut expected = vec![first.host_veth().to_owned(), second.host_veth().to_owned()];
    expected.sort();
    // Another process's leftovers: networks whose owner never ran their drop (this test keeps
    // their namespaces alive by leaking the descriptors; a crashed platform's would close).
    std::mem::forget(first);
    std::mem::forget(second);
    // And a named namespace with the prefix, as versions before issue 13 mounted them.
    let legacy = format!("{}-7-0badf00d", topology.options.namespace_prefix);
    crate::net::support::run(IP, &["netns", "add", &legacy]);
    let report = sweep(&topology.options).unwrap();
    let mut links = report.host_links.clone();
    links.sort();
    assert_eq!(links, expected);
    assert_eq!(report.namespaces, std::slice::from_ref(&legacy));
    assert!(!std::path::Path::new("/run/netns").join(&legacy).exists());
    assert!(host_sandbox_links(&topology).is_empty());
    // A second sweep finds nothing, and the slots can be used again.
    let again = sweep(&topology.options).unwrap();
    assert!(again.namespaces.is_empty() && again.host_links.is_empty());
    let reused = topology.create_network(1);
    assert!(reused.netns_path().exists());
}

#[test]
fn g11_install_policy_is_idempotent_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    install_policy(&topology.options).unwrap();
    let first = topology.list_policy();
    install_policy(&topology.options).unwrap();
    assert_eq!(topology.list_policy(), first);
    assert!(first.contains("chain prerouting"), "{first}");
    // Only one table of that name exists.
    let tables = output_in(&topology.host.path, NFT, &["list", "tables"]);
    let listing = String::from_utf8_lossy(&tables.stdout);
    assert_eq!(
        listing.matches(&topology.options.table_name).count(),
        1,
        "{listing}"
    );
}

#[test]
fn g11_sandbox_cannot_change_its_addresses_routes_links_or_rules_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(6);
    let veth = "sws6";
    let sandboxed = run_probe(
        &topology,
        &network,
        &json!({"netlink": {"veth": veth}}),
        ProbeUser::Sandboxed,
    );
    for change in [
        "add_address",
        "add_route",
        "delete_default_route",
        "link_down",
        "nft_new_table",
    ] {
        assert_eq!(
            sandboxed["netlink"][change], "EPERM",
            "{change}: {sandboxed}"
        );
    }
    // Control: the same netlink messages from host root succeed (and are undone), so the
    // EPERMs above come from the namespace's ownership, not from a malformed probe.
    let control = run_probe(
        &topology,
        &network,
        &json!({"netlink": {"veth": veth, "undo": true}}),
        ProbeUser::HostRootControl,
    );
    for change in ["add_address", "add_route", "nft_new_table"] {
        assert_eq!(control["netlink"][change], "ok", "{change}: {control}");
    }
    let routes = run_in(network.netns_path(), IP, &["route", "show"]);
    assert!(routes.contains("default via"), "{routes}");
    assert!(!routes.contains("192.0.2.201"), "{routes}");
}

#[test]
fn g11_test_network_is_sealed_from_the_real_host_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(9);
    // The host namespace links only to test namespaces and the sandbox: no packet can leave.
    let mut links = topology.host.links();
    links.sort();
    let mut expected = vec![
        "lo".to_owned(),
        network.host_veth().to_owned(),
        "swtp".to_owned(),
        "swtu".to_owned(),
    ];
    expected.sort();
    assert_eq!(links, expected);
    let mut internet = topology.internet.links();
    internet.sort();
    assert_eq!(internet, ["inet0", "lo"]);
    let mut private = topology.private.links();
    private.sort();
    assert_eq!(private, ["lo", "priv0"]);
    // None of the real host's interfaces is named like a test or sandbox link.
    let host_links =
        String::from_utf8_lossy(&output(IP, &["-o", "link", "show"]).stdout).into_owned();
    for name in [network.host_veth(), "swtp", "swtu", "sws9"] {
        assert!(
            !host_links.contains(&format!(": {name}")),
            "{name} leaked to the host: {host_links}"
        );
    }
    drop(network);
}

#[test]
fn g11_reinstalling_the_policy_keeps_live_sandboxes_policed_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(3);
    install_policy(&topology.options).unwrap();
    let request = json!({
        "connect": [
            crate::net::probe::tcp("internet/tcp", crate::net::topology::INTERNET, crate::net::topology::TCP_PORT),
            crate::net::probe::tcp("private", "10.0.0.5", crate::net::topology::TCP_PORT),
        ],
        "timeout": 1.5,
    });
    let report = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert_eq!(
        crate::net::probe::result(&report, "internet/tcp"),
        "hit",
        "{report}"
    );
    assert!(
        !crate::net::probe::reached(crate::net::probe::result(&report, "private")),
        "{report}"
    );
}
