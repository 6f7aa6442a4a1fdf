//! Unit tests of the generated nftables ruleset: every denied range is dropped, the exemptions
//! are narrow and ordered before the drops, the test exemption is off by default.

use std::net::IpAddr;

use crate::net::cidr::Cidr;
use crate::net::options::{EgressOptions, Uplink};
use crate::net::ruleset::{DENIED_IPV4, DENIED_IPV6, ruleset};

fn default_options() -> EgressOptions {
    EgressOptions::with_resolver("192.0.2.53".parse().unwrap())
}

/// The elements line of a named set, as the list of its ranges.
fn set_elements(text: &str, set_name: &str) -> Vec<String> {
    let start = text
        .find(&format!("set {set_name} {{"))
        .unwrap_or_else(|| panic!("set {set_name} missing from:\n{text}"));
    let body = &text[start..];
    let end = body.find("\n    }").unwrap();
    let body = &body[..end];
    match body.find("elements = { ") {
        Some(position) => {
            let list = &body[position + "elements = { ".len()..];
            let list = &list[..list.find(" }").unwrap()];
            list.split(", ").map(str::to_owned).collect()
        }
        None => Vec::new(),
    }
}

/// The rules of one chain, in order.
fn chain_rules(text: &str, chain_name: &str) -> Vec<String> {
    let start = text
        .find(&format!("chain {chain_name} {{"))
        .unwrap_or_else(|| panic!("chain {chain_name} missing"));
    let body = &text[start..];
    let end = body.find("\n    }").unwrap();
    body[..end]
        .lines()
        .skip(1)
        .map(|rule| rule.trim().to_owned())
        .collect()
}

fn position_of(rules: &[String], needle: &str) -> usize {
    rules
        .iter()
        .position(|rule| rule.contains(needle))
        .unwrap_or_else(|| panic!("no rule contains {needle:?} in {rules:#?}"))
}

#[test]
fn g11_every_denied_range_is_in_a_set_that_a_drop_rule_uses() {
    let options = default_options();
    let text = ruleset(&options);
    let parse_all = |elements: Vec<String>| -> Vec<Cidr> {
        elements
            .iter()
            .map(|element| element.parse().unwrap())
            .collect()
    };
    let denied_v4 = parse_all(set_elements(&text, "denied_v4"));
    let denied_v6 = parse_all(set_elements(&text, "denied_v6"));
    // Every range of G11's list as netguard gives it to all its users (the model client reads
    // the same iterator), so a range added there cannot be missing here.
    let mut listed = 0;
    for range in netguard::denied_ranges() {
        // Each listed range must parse, so a typo cannot silently shrink the deny list.
        let parsed: Cidr = range.parse().unwrap();
        let (set, name) = if parsed.is_ipv4() {
            (&denied_v4, "denied_v4")
        } else {
            (&denied_v6, "denied_v6")
        };
        assert!(set.contains(&parsed), "{range} missing from {name}");
        listed += 1;
    }
    assert!(listed >= DENIED_IPV4.len() + DENIED_IPV6.len());
    let rules = chain_rules(&text, "from_sandbox");
    assert!(
        rules
            .iter()
            .any(|rule| rule.starts_with("ip daddr @denied_v4") && rule.contains(" drop"))
    );
    assert!(
        rules
            .iter()
            .any(|rule| rule.starts_with("ip6 daddr @denied_v6") && rule.contains(" drop"))
    );
    assert!(
        rules
            .iter()
            .any(|rule| rule.starts_with("meta nfproto ipv6") && rule.contains(" drop"))
    );
}

#[test]
fn g11_named_ranges_of_the_guarantee_are_all_denied() {
    // The ranges G11 names in words, written independently of DENIED_IPV4/DENIED_IPV6.
    let must_be_denied = [
        "10.0.0.5",
        "172.16.0.5",
        "172.31.255.254",
        "192.168.0.5",
        "100.64.0.5",
        "127.0.0.1",
        "169.254.169.254",
        "0.0.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.1",
        "198.51.100.1",
        "203.0.113.1",
        "198.18.0.5",
        "198.19.255.1",
        "192.88.99.1",
        "192.0.0.9",
        "::1",
        "::",
        "fd00::1",
        "fc00::1",
        "fe80::1",
        "::ffff:10.0.0.5",
        "::ffff:8.8.8.8",
        "64:ff9b::a00:5",
        "64:ff9b:1::1",
        "2002:a00:5::1",
        "2001:db8::1",
        "2001:0:1::1",
        "ff02::1",
        "100::1",
        // IPv4-compatible (deprecated; a stack may still route it as IPv4), SIIT's
        // IPv4-translated form, site-local (deprecated) and the second documentation range.
        "::10.0.0.5",
        "::ffff:0:a00:5",
        "fec0::1",
        "3fff::1",
    ];
    // What the generated policy drops, not what a constant says.
    let text = ruleset(&default_options());
    let all: Vec<Cidr> = set_elements(&text, "denied_v4")
        .iter()
        .chain(&set_elements(&text, "denied_v6"))
        .map(|range| range.parse().unwrap())
        .collect();
    for address in must_be_denied {
        let address: IpAddr = address.parse().unwrap();
        assert!(
            all.iter().any(|range| range.contains(address)),
            "{address} is not denied"
        );
    }
    for public in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
        let address: IpAddr = public.parse().unwrap();
        assert!(
            !all.iter().any(|range| range.contains(address)),
            "{public} is denied"
        );
    }
}

#[test]
fn g11_test_internet_exemption_off_by_default() {
    let options = default_options();
    assert_eq!(options.test_internet_exemption, None);
    let text = ruleset(&options);
    assert!(!text.contains("test_internet"), "{text}");
    assert!(!text.contains("TEST ONLY"), "{text}");
    // The only accept in the sandbox chain is the resolver on port 53.
    let accepts: Vec<String> = chain_rules(&text, "from_sandbox")
        .into_iter()
        .filter(|rule| rule.contains(" accept"))
        .collect();
    assert_eq!(accepts.len(), 1, "{accepts:#?}");
    assert!(accepts[0].starts_with("ip daddr 192.0.2.53 meta l4proto { tcp, udp } th dport 53"));
}

#[test]
fn g11_test_exemption_never_opens_endpoints_or_the_host() {
    let mut options = default_options();
    options.test_internet_exemption = Some("203.0.113.0/24".parse().unwrap());
    options.platform_endpoints = vec![
        "203.0.113.80".parse().unwrap(),
        "2001:db8::80".parse().unwrap(),
    ];
    let text = ruleset(&options);
    assert_eq!(set_elements(&text, "test_internet_v4"), ["203.0.113.0/24"]);
    assert_eq!(set_elements(&text, "endpoints_v4"), ["203.0.113.80/32"]);
    assert_eq!(set_elements(&text, "endpoints_v6"), ["2001:db8::80/128"]);
    let rules = chain_rules(&text, "from_sandbox");
    let spoof = position_of(&rules, "fib saddr . iif oif missing");
    let resolver = position_of(&rules, "th dport 53");
    let endpoints = position_of(&rules, "ip daddr @endpoints_v4");
    let host = position_of(&rules, "fib daddr type");
    let exemption = position_of(&rules, "ip daddr @test_internet_v4");
    let denied = position_of(&rules, "ip daddr @denied_v4");
    assert!(spoof < resolver && resolver < endpoints && endpoints < host);
    assert!(host < exemption && exemption < denied, "{rules:#?}");
}

#[test]
fn g11_prerouting_runs_before_dnat_and_input_admits_only_the_resolver() {
    let text = ruleset(&default_options());
    let prerouting = chain_rules(&text, "prerouting");
    assert_eq!(
        prerouting[0],
        "type filter hook prerouting priority raw; policy accept;"
    );
    assert_eq!(prerouting[1], "iifname \"swh*\" jump from_sandbox");
    let forward = chain_rules(&text, "forward");
    assert!(forward.contains(&"iifname \"swh*\" jump from_sandbox".to_owned()));
    let input = chain_rules(&text, "input");
    assert_eq!(input.len(), 3, "{input:#?}");
    assert!(input[1].contains("ip daddr 192.0.2.53") && input[1].contains("th dport 53 accept"));
    assert!(input[2].starts_with("iifname \"swh*\" counter drop"));
}

#[test]
fn g11_address_pool_is_itself_denied_and_masqueraded() {
    let mut options = default_options();
    options.address_pool = "100.127.0.0/16".parse().unwrap();
    let text = ruleset(&options);
    assert!(set_elements(&text, "denied_v4").contains(&"100.127.0.0/16".to_owned()));
    let postrouting = chain_rules(&text, "postrouting");
    assert_eq!(
        postrouting[1],
        "ip saddr 100.127.0.0/16 oifname != \"swh*\" masquerade"
    );
}

#[test]
fn g11_named_uplink_is_the_only_exit() {
    let mut options = default_options();
    options.uplink = Uplink::Interface("eth1".to_owned());
    let text = ruleset(&options);
    let forward = chain_rules(&text, "forward");
    let only_uplink = position_of(&forward, "oifname != \"eth1\" counter drop");
    let jump = position_of(&forward, "jump from_sandbox");
    assert!(only_uplink < jump);
    assert_eq!(
        chain_rules(&text, "postrouting")[1],
        "ip saddr 10.231.0.0/16 oifname \"eth1\" masquerade"
    );
}

#[test]
fn g11_ruleset_snapshot_default() {
    insta::assert_snapshot!("ruleset_default", ruleset(&default_options()));
}

#[test]
fn g11_ruleset_snapshot_test_topology() {
    let mut options = default_options();
    options.table_name = "swtest".to_owned();
    options.uplink = Uplink::Interface("swtu".to_owned());
    options.test_internet_exemption = Some("203.0.113.0/24".parse().unwrap());
    options.platform_endpoints = vec!["203.0.113.80".parse().unwrap()];
    insta::assert_snapshot!("ruleset_test_topology", ruleset(&options));
}
