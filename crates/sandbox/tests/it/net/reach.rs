//! G11 reachability: from inside a sandbox's network, every denied range and the host's own
//! addresses stay unreached while the test internet is reached; a control run without the
//! policy shows every one of those targets would have been reached.

use sandbox::net::EgressNetwork;
use serde_json::{Value, json};

use crate::net::probe::{ProbeUser, reached, result, run_probe, tcp, tcp6, udp};
use crate::net::support::real_host_ip_forward;
use crate::net::topology::{
    ENDPOINT, Forwarding, HOST_PRIVATE_LINK_ADDRESS, HOST_UPLINK_ADDRESS, INTERNET,
    PRIVATE_TARGETS, RESOLVER, RESOLVER_OTHER_PORT, TCP_PORT, Topology, UDP_PORT, UplinkChoice,
};

/// Whether a control run without the policy can reach the target (IPv6 destinations cannot:
/// the sandbox has no IPv6 at all, with or without the policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    ReachableWithoutPolicy,
    NoIpv6Route,
}

/// Every target that must stay unreached, with its probe request entry.
pub fn denied_targets(network: &EgressNetwork) -> Vec<(String, Value, Control)> {
    let gateway = network.gateway().to_string();
    let mut targets = pair("host: gateway (veth host side)", &gateway);
    let mapped_id = format!("ipv4-mapped gateway [::ffff:{gateway}]/tcp");
    targets.push((
        mapped_id.clone(),
        tcp6(&mapped_id, &format!("::ffff:{gateway}"), TCP_PORT),
        Control::ReachableWithoutPolicy,
    ));
    targets.extend(denied_targets_without_gateway());
    targets
}

/// A TCP and a UDP target on one address, both reachable without the policy.
fn pair(label: &str, address: &str) -> Vec<(String, Value, Control)> {
    let tcp_id = format!("{label} {address}/tcp");
    let udp_id = format!("{label} {address}/udp");
    vec![
        (
            tcp_id.clone(),
            tcp(&tcp_id, address, TCP_PORT),
            Control::ReachableWithoutPolicy,
        ),
        (
            udp_id.clone(),
            udp(&udp_id, address, UDP_PORT),
            Control::ReachableWithoutPolicy,
        ),
    ]
}

/// The denied targets that do not depend on the sandbox's slot.
pub fn denied_targets_without_gateway() -> Vec<(String, Value, Control)> {
    let mut targets = Vec::new();
    for (range, address) in PRIVATE_TARGETS {
        targets.extend(pair(&format!("private {range}"), address));
    }
    targets.extend(pair("host: private link", HOST_PRIVATE_LINK_ADDRESS));
    targets.extend(pair(
        "host: public uplink address inside the exempt range",
        HOST_UPLINK_ADDRESS,
    ));
    targets.extend(pair("platform endpoint inside the exempt range", ENDPOINT));
    for (proto, entry) in [
        (
            "tcp",
            tcp("resolver other port/tcp", RESOLVER, RESOLVER_OTHER_PORT),
        ),
        (
            "udp",
            udp("resolver other port/udp", RESOLVER, RESOLVER_OTHER_PORT),
        ),
    ] {
        targets.push((
            format!("resolver other port/{proto}"),
            entry,
            Control::ReachableWithoutPolicy,
        ));
    }
    for (label, address, control) in [
        (
            "ipv4-mapped 10.0.0.5",
            "::ffff:10.0.0.5",
            Control::ReachableWithoutPolicy,
        ),
        (
            "ipv4-mapped host uplink",
            "::ffff:203.0.113.254",
            Control::ReachableWithoutPolicy,
        ),
        ("nat64 10.0.0.5", "64:ff9b::a00:5", Control::NoIpv6Route),
        (
            "nat64 local-use 10.0.0.5",
            "64:ff9b:1::a00:5",
            Control::NoIpv6Route,
        ),
        ("6to4 10.0.0.5", "2002:a00:5::1", Control::NoIpv6Route),
        ("teredo", "2001:0:a00:5::1", Control::NoIpv6Route),
        ("unique local", "fd00::5", Control::NoIpv6Route),
        ("loopback", "::1", Control::NoIpv6Route),
        ("documentation", "2001:db8::5", Control::NoIpv6Route),
    ] {
        let id = format!("{label} [{address}]/tcp");
        targets.push((id.clone(), tcp6(&id, address, TCP_PORT), control));
    }
    targets
}

pub fn positive_targets() -> Vec<Value> {
    vec![
        tcp("internet/tcp", INTERNET, TCP_PORT),
        udp("internet/udp", INTERNET, UDP_PORT),
    ]
}

fn request(network: &EgressNetwork) -> Value {
    let mut entries = positive_targets();
    entries.extend(
        denied_targets(network)
            .into_iter()
            .map(|(_, entry, _)| entry),
    );
    json!({"connect": entries, "timeout": 1.5})
}

pub fn assert_positive_control(report: &Value) {
    assert_eq!(
        result(report, "internet/tcp"),
        "hit",
        "positive control (TCP) not reached: {report}"
    );
    assert_eq!(
        result(report, "internet/udp"),
        "hit",
        "positive control (UDP) not reached: {report}"
    );
}

#[test]
fn g11_every_denied_range_and_the_host_unreached_internet_reached_needs_root() {
    let host_forwarding_before = real_host_ip_forward();
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(3);
    let request = request(&network);

    // 1. With the policy: the positive control answers, nothing else does.
    let report = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert_positive_control(&report);
    let mut leaks = Vec::new();
    for (id, _, _) in denied_targets(&network) {
        let outcome = result(&report, &id);
        if reached(outcome) {
            leaks.push(format!("{id}: {outcome}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "reached with the policy in place: {leaks:#?}\n{}",
        topology.list_policy()
    );
    // The listeners agree: the only packets that arrived anywhere were for 203.0.113.1.
    let hits = topology.hits();
    assert!(!hits.is_empty());
    for line in &hits {
        assert!(
            line.starts_with(&format!("internet: tcp {INTERNET} "))
                || line.starts_with(&format!("internet: udp {INTERNET} ")),
            "a listener was reached: {line}\nall: {hits:#?}"
        );
    }

    // 2. Control: the same probe without the policy reaches every target it can route to, so
    //    the run above proves the policy, not a broken setup.
    topology.clear_hits();
    topology.remove_policy();
    let control = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert_positive_control(&control);
    let mut unreached = Vec::new();
    for (id, _, control_kind) in denied_targets(&network) {
        let outcome = result(&control, &id);
        match control_kind {
            Control::ReachableWithoutPolicy if !reached(outcome) => {
                unreached.push(format!("{id}: {outcome}"))
            }
            Control::NoIpv6Route if reached(outcome) => {
                unreached.push(format!("{id} reached over IPv6: {outcome}"))
            }
            _ => {}
        }
    }
    assert!(
        unreached.is_empty(),
        "the control run does not behave as the topology promises: {unreached:#?}"
    );
    assert!(topology.hits().len() >= hits.len());

    drop(network);
    assert_eq!(
        real_host_ip_forward(),
        host_forwarding_before,
        "the real host's forwarding changed"
    );
}

#[test]
fn g11_named_uplink_reaches_internet_and_nothing_else_needs_root() {
    let topology = Topology::build(UplinkChoice::NamedInterface, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(7);
    let mut entries = positive_targets();
    entries.push(tcp("private", "10.0.0.5", TCP_PORT));
    entries.push(tcp("metadata", "169.254.169.254", TCP_PORT));
    entries.push(tcp("gateway", &network.gateway().to_string(), TCP_PORT));
    let report = run_probe(
        &topology,
        &network,
        &json!({"connect": entries, "timeout": 1.5}),
        ProbeUser::Sandboxed,
    );
    assert_positive_control(&report);
    for id in ["private", "metadata", "gateway"] {
        assert!(!reached(result(&report, id)), "{id} reached: {report}");
    }
    // Masquerade happened: the internet saw the host's uplink address, not the sandbox's.
    let hits = topology.hits();
    assert!(
        hits.iter()
            .any(|line| line.ends_with(&format!("from {HOST_UPLINK_ADDRESS}"))),
        "{hits:#?}"
    );
    assert!(
        !hits
            .iter()
            .any(|line| line.contains(&network.sandbox_address().to_string())),
        "{hits:#?}"
    );
}

#[test]
fn g11_test_internet_denied_without_the_test_exemption_needs_root() {
    let mut topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let entries = json!({"connect": positive_targets(), "timeout": 1.5});

    // Production default: no exemption, so 203.0.113.0/24 is a denied documentation range.
    topology.options.test_internet_exemption = None;
    topology.install_policy();
    let network = topology.create_network(1);
    let report = run_probe(&topology, &network, &entries, ProbeUser::Sandboxed);
    assert!(!reached(result(&report, "internet/tcp")), "{report}");
    assert!(!reached(result(&report, "internet/udp")), "{report}");
    assert!(topology.hits().is_empty(), "{:#?}", topology.hits());
    drop(network);

    // Control: the same topology with the test-only exemption reaches it.
    topology.options.test_internet_exemption = Some("203.0.113.0/24".parse().unwrap());
    topology.install_policy();
    let network = topology.create_network(1);
    let report = run_probe(&topology, &network, &entries, ProbeUser::Sandboxed);
    assert_positive_control(&report);
}

#[test]
fn g11_denied_before_address_translation_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(8);
    // The host forwards ports the way a container runtime would: one of its own addresses, and
    // an address inside the exempt test internet, both translated to a private address; and a
    // private address translated to the (exempt) internet, which only a check made before the
    // translation can stop.
    let dnat = format!(
        "table ip {table}_dnat {{\n\
         \x20   chain prerouting {{\n\
         \x20       type nat hook prerouting priority dstnat; policy accept;\n\
         \x20       ip daddr {HOST_UPLINK_ADDRESS} tcp dport 9090 dnat to 10.0.0.5:{TCP_PORT}\n\
         \x20       ip daddr 203.0.113.99 tcp dport {TCP_PORT} dnat to 10.0.0.5:{TCP_PORT}\n\
         \x20       ip daddr 10.0.0.77 tcp dport {TCP_PORT} dnat to {INTERNET}:{TCP_PORT}\n\
         \x20   }}\n\
         }}\n",
        table = topology.options.table_name
    );
    let script = topology.scratch.path().join("dnat.nft");
    std::fs::write(&script, dnat).unwrap();
    crate::net::support::run_in(
        &topology.host.path,
        crate::net::support::NFT,
        &["-f", &script.display().to_string()],
    );
    let request = json!({
        "connect": [
            tcp("host address forwarded to 10.0.0.5", HOST_UPLINK_ADDRESS, 9090),
            tcp("exempt address forwarded to 10.0.0.5", "203.0.113.99", TCP_PORT),
            tcp("private address forwarded to the internet", "10.0.0.77", TCP_PORT),
            tcp("internet/tcp", INTERNET, TCP_PORT),
        ],
        "timeout": 1.5,
    });
    let report = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert_eq!(result(&report, "internet/tcp"), "hit", "{report}");
    let forwarded = [
        "host address forwarded to 10.0.0.5",
        "exempt address forwarded to 10.0.0.5",
        "private address forwarded to the internet",
    ];
    for id in forwarded {
        assert!(!reached(result(&report, id)), "{id}: {report}");
    }
    // Only the direct probe of the internet arrived anywhere.
    let hits = topology.hits();
    assert_eq!(hits.len(), 1, "{hits:#?}");
    // Control: without the policy every forward leads to its listener.
    topology.remove_policy();
    let control = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    for id in forwarded {
        assert_eq!(result(&control, id), "hit", "{id}: {control}");
    }
}

/// Each enforcement point holds on its own: with the prerouting chain emptied, forward and input
/// still deny; with forward and input emptied, prerouting still denies.
#[test]
fn g11_prerouting_and_forward_plus_input_each_deny_alone_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let table = topology.options.table_name.clone();
    let flush = |chain: &str| {
        crate::net::support::run_in(
            &topology.host.path,
            crate::net::support::NFT,
            &["flush", "chain", "inet", &table, chain],
        );
    };
    for emptied in [&["prerouting"][..], &["forward", "input"][..]] {
        topology.install_policy();
        let network = topology.create_network(4);
        for chain in emptied {
            flush(chain);
        }
        let mut entries = positive_targets();
        entries.extend(
            denied_targets(&network)
                .into_iter()
                .map(|(_, entry, _)| entry),
        );
        let report = run_probe(
            &topology,
            &network,
            &json!({"connect": entries, "timeout": 1.5}),
            ProbeUser::Sandboxed,
        );
        assert_positive_control(&report);
        let leaks: Vec<String> = denied_targets(&network)
            .into_iter()
            .map(|(id, _, _)| (result(&report, &id).to_owned(), id))
            .filter(|(outcome, _)| reached(outcome))
            .map(|(outcome, id)| format!("{id}: {outcome}"))
            .collect();
        assert!(
            leaks.is_empty(),
            "with {emptied:?} emptied: {leaks:#?}\n{}",
            topology.list_policy()
        );
        topology.clear_hits();
    }
}

/// Anti-spoofing without a rule per sandbox: a packet from a sandbox veth whose source is not
/// that sandbox's own address (another sandbox's, another slot's gateway end, an address
/// outside the pool) is dropped. The probe runs as root of the sandbox's namespace, more than
/// any sandbox ever holds, to put those addresses on its veth; a control run without the
/// policy shows each of them would have arrived.
#[test]
fn g11_a_source_other_than_the_sandbox_own_address_is_dropped_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(3);
    assert_eq!(network.sandbox_address().to_string(), "10.231.0.14");
    let spoofed = [
        ("another sandbox's address", "10.231.0.6"),
        ("another slot's gateway end", "10.231.0.5"),
        ("an address outside the pool", "203.0.113.77"),
    ];
    for (_, address) in spoofed {
        crate::net::support::run_in(
            network.netns_path(),
            crate::net::support::IP,
            &["addr", "add", &format!("{address}/32"), "dev", "sws3"],
        );
    }
    let mut entries = vec![udp_from("own address", "10.231.0.14")];
    entries.extend(
        spoofed
            .iter()
            .map(|(label, address)| udp_from(label, address)),
    );
    let request = json!({"connect": entries, "timeout": 1.5});

    let report = run_probe(&topology, &network, &request, ProbeUser::HostRootControl);
    assert_eq!(result(&report, "own address"), "hit", "{report}");
    for (label, _) in spoofed {
        assert!(!reached(result(&report, label)), "{label}: {report}");
    }
    // The listeners agree: one datagram arrived, the one from the sandbox's own address.
    let hits = topology.hits();
    assert_eq!(hits.len(), 1, "{hits:#?}");

    // Control: without the policy every spoofed datagram arrives.
    topology.clear_hits();
    topology.remove_policy();
    run_probe(&topology, &network, &request, ProbeUser::HostRootControl);
    let hits = topology.hits();
    assert_eq!(hits.len(), 1 + spoofed.len(), "{hits:#?}");
}

/// A UDP datagram to the test internet from a chosen source address.
fn udp_from(id: &str, source: &str) -> Value {
    let mut entry = udp(id, INTERNET, UDP_PORT);
    entry["source"] = json!(source);
    entry
}
