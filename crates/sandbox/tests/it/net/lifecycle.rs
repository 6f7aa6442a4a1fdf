//! The egress network's life: it fails closed without forwarding or without the policy, the
//! sandbox cannot change its own addresses, routes or rules, drop and sweep remove everything,
//! and the test network never reaches anything but its own namespaces.

use sandbox::net::{EgressNetwork, Error, install_policy, sweep};
use serde_json::json;

use crate::net::probe::{ProbeUser, run_probe};
use crate::net::support::{IP, NFT, output, output_in, real_host_ip_forward, run_in};
use crate::net::topology::{Forwarding, Topology, UplinkChoice};

fn namespace_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

fn sandbox_namespaces(topology: &Topology) -> Vec<String> {
    let prefix = format!("{}-", topology.options.namespace_prefix);
    std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn link_elements(topology: &Topology) -> String {
    run_in(
        &topology.host.path,
        NFT,
        &[
            "list",
            "set",
            "inet",
            &topology.options.table_name,
            "sandbox_links",
        ],
    )
}

#[test]
fn g11_create_fails_closed_without_forwarding_needs_root() {
    let host_forwarding_before = real_host_ip_forward();
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::Off);
    topology.install_policy();
    let error = EgressNetwork::create(&topology.options, 1).unwrap_err();
    assert!(matches!(error, Error::ForwardingDisabled { .. }), "{error}");
    assert!(error.to_string().contains("net.ipv4.ip_forward"), "{error}");
    assert!(sandbox_namespaces(&topology).is_empty());
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
    assert!(sandbox_namespaces(&topology).is_empty());
    // Control: with the policy it works.
    topology.install_policy();
    let network = topology.create_network(1);
    assert!(network.netns_path().exists());
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
fn g6_drop_removes_namespace_veth_and_policy_element_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(5);
    let name = network
        .netns_path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with(&format!("{}-5-", topology.options.namespace_prefix)),
        "{name}"
    );
    assert!(namespace_exists(&name));
    assert!(topology.host.links().contains(&"swh5".to_owned()));
    assert!(
        link_elements(&topology).contains("\"swh5\" . 10.231.0.22"),
        "{}",
        link_elements(&topology)
    );
    // Inside: loopback and the sandbox veth only, IPv6 off, the default route via the gateway.
    let inside = run_in(network.netns_path(), IP, &["-o", "link", "show"]);
    assert_eq!(inside.lines().count(), 2, "{inside}");
    let routes = run_in(network.netns_path(), IP, &["route", "show"]);
    assert!(
        routes.contains("default via 10.231.0.21 dev sws5"),
        "{routes}"
    );
    let ipv6 = run_in(
        network.netns_path(),
        "/usr/sbin/sysctl",
        &["-n", "net.ipv6.conf.all.disable_ipv6"],
    );
    assert_eq!(ipv6.trim(), "1");

    network.destroy().unwrap();
    assert!(!namespace_exists(&name));
    assert!(!topology.host.links().contains(&"swh5".to_owned()));
    assert!(
        !link_elements(&topology).contains("swh5"),
        "{}",
        link_elements(&topology)
    );
}

#[test]
fn g6_sweep_removes_what_a_crash_left_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let first = topology.create_network(1);
    let second = topology.create_network(2);
    let names: Vec<String> = [&first, &second]
        .iter()
        .map(|network| {
            network
                .netns_path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // A crash: the process dies without running any drop.
    std::mem::forget(first);
    std::mem::forget(second);
    let report = sweep(&topology.options).unwrap();
    let mut swept = report.namespaces.clone();
    swept.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(swept, expected);
    let mut links = report.host_links.clone();
    links.sort();
    assert_eq!(links, ["swh1", "swh2"]);
    assert!(report.link_elements_flushed);
    for name in &names {
        assert!(!namespace_exists(name));
    }
    assert!(
        !topology
            .host
            .links()
            .iter()
            .any(|link| link.starts_with("swh"))
    );
    assert!(!link_elements(&topology).contains("swh"));
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
    assert_eq!(links, ["lo", "swh9", "swtp", "swtu"]);
    let mut internet = topology.internet.links();
    internet.sort();
    assert_eq!(internet, ["inet0", "lo"]);
    let mut private = topology.private.links();
    private.sort();
    assert_eq!(private, ["lo", "priv0"]);
    // None of the real host's interfaces is named like a test or sandbox link.
    let host_links =
        String::from_utf8_lossy(&output(IP, &["-o", "link", "show"]).stdout).into_owned();
    for name in ["swh9", "swtp", "swtu", "sws9"] {
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
    assert!(
        link_elements(&topology).contains("\"swh3\" . 10.231.0.14"),
        "{}",
        link_elements(&topology)
    );
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
