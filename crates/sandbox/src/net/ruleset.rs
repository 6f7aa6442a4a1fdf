//! The nftables ruleset of the `public_egress` policy (G11), as a pure function of the options.
//!
//! Shape (one `inet` table, replaced atomically by one `nft -f -` transaction):
//! - sets `denied_v4`/`denied_v6` (every private and special range, plus the address pool),
//!   `endpoints_v4`/`endpoints_v6` (the platform's API, database, object store), and
//!   `test_internet_v4`/`_v6` only when the test-only exemption is set;
//! - chain `from_sandbox`, the verdict on every packet a sandbox sends: spoofed source (not
//!   in the pool, not the sandbox end `.2` of a /30, or not routed back through the veth it
//!   came from) → drop; resolver on port 53 → accept; platform endpoints → drop; the host's own addresses
//!   (`fib daddr type local`, broadcast, multicast, anycast) → drop; [test internet → accept];
//!   denied ranges → drop; any other IPv6 → drop;
//! - `prerouting` (filter, priority raw = -300, before conntrack and any DNAT) and `forward`
//!   (filter) jump to it for packets arriving on a sandbox veth (`iifname "swh*"`); `forward`
//!   also lets only replies into a sandbox and, with a named uplink, lets sandbox traffic leave
//!   only through it;
//! - `input` (filter): from a sandbox veth only the resolver on port 53, nothing else;
//! - `postrouting` (nat, srcnat): masquerade the pool towards the uplink.
//!
//! The exemptions sit before the drops and are as narrow as the options allow; the test
//! exemption comes after the endpoint and host-address drops, so it can never open those.
//!
//! Nothing in the table names a sandbox: every veth whose name starts with `swh` is policed by
//! the same rules from the moment it exists, and the spoofing checks follow from the slot's
//! /30 (the sandbox end is always `.2`, and the reverse-path lookup finds the veth that holds
//! the gateway `.1`). So the table is loaded once, when a backend starts, and no step ever
//! changes the firewall (issue 13, part 4).

use std::fmt::Write as _;

use crate::net::cidr::Cidr;
use crate::net::options::{EgressOptions, HOST_VETH_PREFIX, Uplink};

/// Every IPv4 and IPv6 destination a sandbox may never reach (G11), besides the host's own
/// addresses, the address pool and the configured endpoints. The lists live in `netguard`,
/// which the model client's endpoint check shares. Sandboxes have no IPv6 at all (it is
/// disabled in their namespace and every other IPv6 packet is dropped too); the IPv6 list is
/// defence in depth and documents the IPv4-mapped, IPv4-compatible, SIIT, NAT64, 6to4 and
/// Teredo forms, site-local and both documentation ranges.
pub use netguard::{DENIED_IPV4, DENIED_IPV6, MORE_DENIED_IPV6};

/// The nftables program that installs (or atomically replaces) the policy table.
///
/// The options must have passed [`EgressOptions::validate`]: names are written verbatim.
pub fn ruleset(options: &EgressOptions) -> String {
    let table = &options.table_name;
    let veths = format!("\"{HOST_VETH_PREFIX}*\"");
    let resolver = options.resolver;
    let pool = options.address_pool;
    let mut text = String::new();
    let out = &mut text;

    line(
        out,
        0,
        "# stepward public_egress policy (the public internet only). Generated; install_policy replaces it.",
    );
    // Creating then deleting the table inside one transaction makes the replacement atomic and
    // idempotent: there is never a moment without the policy, and no stale rule survives.
    line(out, 0, &format!("table inet {table} {{}}"));
    line(out, 0, &format!("delete table inet {table}"));
    line(out, 0, &format!("table inet {table} {{"));

    let mut denied_v4: Vec<String> = DENIED_IPV4
        .iter()
        .map(|range| (*range).to_owned())
        .collect();
    denied_v4.push(pool.to_string());
    interval_set(out, "denied_v4", "ipv4_addr", &denied_v4);
    let denied_v6: Vec<String> = DENIED_IPV6
        .iter()
        .chain(MORE_DENIED_IPV6)
        .map(|range| (*range).to_owned())
        .collect();
    interval_set(out, "denied_v6", "ipv6_addr", &denied_v6);
    let (endpoints_v4, endpoints_v6) = split_families(&options.platform_endpoints);
    interval_set(out, "endpoints_v4", "ipv4_addr", &endpoints_v4);
    interval_set(out, "endpoints_v6", "ipv6_addr", &endpoints_v6);
    if let Some(exemption) = options.test_internet_exemption {
        let (exempt_v4, exempt_v6) = split_families(&[exemption]);
        line(
            out,
            1,
            "# TEST ONLY: the tests' stand-in for the internet. Never set in production.",
        );
        interval_set(out, "test_internet_v4", "ipv4_addr", &exempt_v4);
        interval_set(out, "test_internet_v6", "ipv6_addr", &exempt_v6);
    }
    blank(out);

    line(out, 1, "chain from_sandbox {");
    line(
        out,
        2,
        &format!("ip saddr != {pool} counter drop comment \"spoofed: not from the address pool\""),
    );
    line(
        out,
        2,
        "ip saddr & 0.0.0.3 != 0.0.0.2 counter drop comment \"spoofed: not the sandbox end of its /30\"",
    );
    line(
        out,
        2,
        "fib saddr . iif oif missing counter drop comment \"spoofed: not routed back through this veth\"",
    );
    line(
        out,
        2,
        &format!(
            "ip daddr {resolver} meta l4proto {{ tcp, udp }} th dport 53 counter accept comment \"resolver, port 53 only\""
        ),
    );
    line(
        out,
        2,
        "ip daddr @endpoints_v4 counter drop comment \"platform endpoints\"",
    );
    line(
        out,
        2,
        "ip6 daddr @endpoints_v6 counter drop comment \"platform endpoints\"",
    );
    line(
        out,
        2,
        "fib daddr type { local, broadcast, anycast, multicast } counter drop comment \"the host's own addresses\"",
    );
    if options.test_internet_exemption.is_some() {
        line(
            out,
            2,
            "ip daddr @test_internet_v4 counter accept comment \"TEST ONLY exemption\"",
        );
        line(
            out,
            2,
            "ip6 daddr @test_internet_v6 counter accept comment \"TEST ONLY exemption\"",
        );
    }
    line(
        out,
        2,
        "ip daddr @denied_v4 counter drop comment \"private and special ranges\"",
    );
    line(
        out,
        2,
        "ip6 daddr @denied_v6 counter drop comment \"private and special ranges\"",
    );
    line(
        out,
        2,
        "meta nfproto ipv6 counter drop comment \"sandboxes have no IPv6\"",
    );
    line(out, 1, "}");
    blank(out);

    line(out, 1, "chain prerouting {");
    line(
        out,
        2,
        "type filter hook prerouting priority raw; policy accept;",
    );
    line(out, 2, &format!("iifname {veths} jump from_sandbox"));
    line(out, 1, "}");
    blank(out);

    line(out, 1, "chain forward {");
    line(
        out,
        2,
        "type filter hook forward priority filter; policy accept;",
    );
    line(
        out,
        2,
        &format!("oifname {veths} ct state established,related accept"),
    );
    line(
        out,
        2,
        &format!(
            "oifname {veths} counter drop comment \"nothing opens a connection into a sandbox\""
        ),
    );
    if let Uplink::Interface(uplink) = &options.uplink {
        line(
            out,
            2,
            &format!(
                "iifname {veths} oifname != \"{uplink}\" counter drop comment \"only through the uplink\""
            ),
        );
    }
    line(out, 2, &format!("iifname {veths} jump from_sandbox"));
    line(out, 1, "}");
    blank(out);

    line(out, 1, "chain input {");
    line(
        out,
        2,
        "type filter hook input priority filter; policy accept;",
    );
    line(
        out,
        2,
        &format!(
            "iifname {veths} ip daddr {resolver} meta l4proto {{ tcp, udp }} th dport 53 accept"
        ),
    );
    line(
        out,
        2,
        &format!("iifname {veths} counter drop comment \"the host is not a destination\""),
    );
    line(out, 1, "}");
    blank(out);

    line(out, 1, "chain postrouting {");
    line(
        out,
        2,
        "type nat hook postrouting priority srcnat; policy accept;",
    );
    match &options.uplink {
        Uplink::DefaultRoute => line(
            out,
            2,
            &format!("ip saddr {pool} oifname != {veths} masquerade"),
        ),
        Uplink::Interface(uplink) => line(
            out,
            2,
            &format!("ip saddr {pool} oifname \"{uplink}\" masquerade"),
        ),
    }
    line(out, 1, "}");
    line(out, 0, "}");
    text
}

fn split_families(ranges: &[Cidr]) -> (Vec<String>, Vec<String>) {
    let v4 = ranges
        .iter()
        .filter(|range| range.is_ipv4())
        .map(Cidr::to_string)
        .collect();
    let v6 = ranges
        .iter()
        .filter(|range| !range.is_ipv4())
        .map(Cidr::to_string)
        .collect();
    (v4, v6)
}

fn interval_set(out: &mut String, name: &str, kind: &str, elements: &[String]) {
    line(out, 1, &format!("set {name} {{"));
    line(out, 2, &format!("type {kind}"));
    line(out, 2, "flags interval");
    // Overlapping ranges (an endpoint inside a denied range, a pool inside 10/8) are legal
    // configuration; auto-merge lets nft accept them instead of failing the install.
    line(out, 2, "auto-merge");
    if !elements.is_empty() {
        line(out, 2, &format!("elements = {{ {} }}", elements.join(", ")));
    }
    line(out, 1, "}");
}

fn line(out: &mut String, depth: usize, content: &str) {
    // Writing into a String cannot fail.
    let _ = writeln!(out, "{:indent$}{content}", "", indent = depth * 4);
}

fn blank(out: &mut String) {
    out.push('\n');
}

#[cfg(test)]
#[path = "ruleset_tests.rs"]
mod tests;
