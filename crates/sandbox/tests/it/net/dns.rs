//! G11 DNS: the configured resolver is written into resolv.conf and is the one exemption, on
//! port 53 only; a name with several addresses resolves to all of them.

use serde_json::json;

use crate::net::probe::{ProbeUser, reached, result, run_probe, tcp, udp};
use crate::net::topology::{
    Forwarding, MULTI_ADDRESSES, MULTI_NAME, RESOLVER, RESOLVER_OTHER_PORT, Topology, UplinkChoice,
};

#[test]
fn g11_resolver_on_port_53_only_and_a_name_resolves_to_all_its_addresses_needs_root() {
    // The resolver sits in a denied range (198.51.100.0/24), outside the test exemption
    // (203.0.113.0/24), so only the resolver exemption can open it.
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    topology.install_policy();
    let network = topology.create_network(2);
    assert!(
        network
            .resolv_conf()
            .lines()
            .any(|line| line == format!("nameserver {RESOLVER}"))
    );
    assert_eq!(
        network
            .resolv_conf()
            .lines()
            .filter(|line| line.starts_with("nameserver"))
            .count(),
        1
    );

    let request = json!({
        "resolve": [MULTI_NAME],
        "connect": [
            tcp("resolver/tcp53", RESOLVER, 53),
            tcp("resolver/tcp-other", RESOLVER, RESOLVER_OTHER_PORT),
            udp("resolver/udp-other", RESOLVER, RESOLVER_OTHER_PORT),
        ],
        "timeout": 1.5,
    });
    let report = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    let mut expected: Vec<&str> = MULTI_ADDRESSES.to_vec();
    expected.sort_unstable();
    assert_eq!(report["resolve"][MULTI_NAME], json!(expected), "{report}");
    assert!(reached(result(&report, "resolver/tcp53")), "{report}");
    assert!(!reached(result(&report, "resolver/tcp-other")), "{report}");
    assert!(!reached(result(&report, "resolver/udp-other")), "{report}");
    let hits = topology.hits();
    assert!(
        hits.iter()
            .any(|line| line.starts_with(&format!("dns: udp {RESOLVER} 53"))),
        "{hits:#?}"
    );
    assert!(
        !hits
            .iter()
            .any(|line| line.contains(&format!(" {RESOLVER_OTHER_PORT} "))),
        "{hits:#?}"
    );

    // Control: without the policy the other port answers, so the run above proves the rule.
    topology.remove_policy();
    let control = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert_eq!(result(&control, "resolver/tcp-other"), "hit", "{control}");
    assert_eq!(result(&control, "resolver/udp-other"), "hit", "{control}");
}

#[test]
fn g11_only_the_configured_resolver_is_exempt_needs_root() {
    let mut topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    // Another resolver is configured: the one in the test internet is just a denied address.
    topology.options.resolver = "198.51.100.99".parse().unwrap();
    topology.install_policy();
    let network = topology.create_network(4);
    let request = json!({
        "connect": [tcp("dns/tcp53", RESOLVER, 53), udp("dns/udp53", RESOLVER, 53)],
        "timeout": 1.5,
    });
    let report = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert!(!reached(result(&report, "dns/tcp53")), "{report}");
    assert!(!reached(result(&report, "dns/udp53")), "{report}");
    assert!(topology.hits().is_empty(), "{:#?}", topology.hits());
    // Control: the same probe reaches the responder on port 53 once the policy is gone.
    topology.remove_policy();
    let control = run_probe(&topology, &network, &request, ProbeUser::Sandboxed);
    assert!(reached(result(&control, "dns/tcp53")), "{control}");
}
