//! The addresses no connection the platform makes on someone's behalf may reach (G11): every
//! private and special range, as data, and the one check every such connection passes.
//!
//! Two users: the sandbox writes these ranges into its nftables policy for `public_egress`
//! steps (where every IPv6 packet is dropped besides), and the `llm` crate checks every address a model provider's endpoint resolves to
//! before it connects. This crate does no IO: the host's own addresses and the platform's
//! configured endpoints are found by the caller and passed in as extra ranges.

#![forbid(unsafe_code)]

mod cidr;

use std::fmt;
use std::net::IpAddr;

pub use crate::cidr::{Cidr, CidrError};

/// Every IPv4 destination that is never reached (G11), besides the host's own addresses and
/// the platform's configured endpoints, which callers add.
pub const DENIED_IPV4: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
];

/// Every IPv6 destination that is never reached (G11), including the IPv4-mapped, NAT64, 6to4
/// and Teredo forms, through which an IPv4 address could otherwise be written in IPv6.
pub const DENIED_IPV6: &[&str] = &[
    "::/128",
    "::1/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "2001::/32",
    "2001:db8::/32",
    "2002::/16",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// More IPv6 destinations that are never reached (G11): the IPv4-compatible form
/// (`::a.b.c.d`, deprecated, but a stack may still route it as IPv4), SIIT's IPv4-translated
/// form (`::ffff:0:a.b.c.d`), the deprecated site-local range and the second documentation
/// range (RFC 9637).
///
/// A list of its own, not in [`DENIED_IPV6`], only so that the sandbox's generated nftables
/// ruleset (whose snapshot its crate owns) changes in a commit of that crate: the sandbox
/// drops every IPv6 packet of a sandbox anyway, so its policy already denies these. Every
/// caller reads both through [`denied_ranges`]; the model client does.
pub const MORE_DENIED_IPV6: &[&str] = &["::/96", "::ffff:0:0:0/96", "fec0::/10", "3fff::/20"];

/// Every range of G11's list: [`DENIED_IPV4`], [`DENIED_IPV6`] and [`MORE_DENIED_IPV6`].
pub fn denied_ranges() -> impl Iterator<Item = &'static str> {
    DENIED_IPV4
        .iter()
        .chain(DENIED_IPV6)
        .chain(MORE_DENIED_IPV6)
        .copied()
}

/// The prefix lengths RFC 6052 allows a NAT64 prefix.
const NAT64_PREFIX_LENGTHS: [u8; 6] = [32, 40, 48, 56, 64, 96];

/// Reads a network-specific NAT64 prefix an operator names (`2001:db8:64::/96`): an IPv6
/// range of 32, 40, 48, 56, 64 or 96 bits (RFC 6052), without host bits. Through it, every
/// IPv4 address, private ones too, can be written in IPv6; the whole prefix is denied, like
/// the well-known `64:ff9b::/96`.
pub fn nat64_prefix(text: &str) -> Result<Cidr, String> {
    let range: Cidr = text.trim().parse().map_err(|error: CidrError| {
        format!("{error}; a NAT64 prefix is written like 2001:db8:64::/96")
    })?;
    if range.is_ipv4() {
        return Err(format!(
            "`{text}` is an IPv4 range; a NAT64 prefix is IPv6, written like 2001:db8:64::/96"
        ));
    }
    if !NAT64_PREFIX_LENGTHS.contains(&range.prefix_len()) {
        return Err(format!(
            "`{text}` is /{}; a NAT64 prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052)",
            range.prefix_len()
        ));
    }
    Ok(range)
}

/// What a denied range is, in words a person reading a refusal understands.
pub fn describe(range: &str) -> &'static str {
    match range {
        "0.0.0.0/8" | "::/128" => "\"this network\", unspecified",
        "10.0.0.0/8" | "172.16.0.0/12" | "192.168.0.0/16" => "private (RFC 1918)",
        "100.64.0.0/10" => "shared address space (carrier-grade NAT)",
        "127.0.0.0/8" | "::1/128" => "loopback",
        "169.254.0.0/16" => "link-local, which holds the cloud metadata endpoint 169.254.169.254",
        "192.0.0.0/24" => "IETF protocol assignments",
        "192.0.2.0/24" | "198.51.100.0/24" | "203.0.113.0/24" | "2001:db8::/32" => "documentation",
        "192.88.99.0/24" | "2002::/16" => "6to4 relay",
        "198.18.0.0/15" => "benchmarking",
        "224.0.0.0/4" | "ff00::/8" => "multicast",
        "240.0.0.0/4" => "reserved",
        "255.255.255.255/32" => "broadcast",
        "::ffff:0:0/96" => "IPv4-mapped IPv6",
        "::/96" => "IPv4-compatible IPv6 (deprecated)",
        "::ffff:0:0:0/96" => "IPv4-translated IPv6 (SIIT)",
        "fec0::/10" => "site-local (deprecated private IPv6)",
        "3fff::/20" => "documentation (RFC 9637)",
        "64:ff9b::/96" | "64:ff9b:1::/48" => "NAT64",
        "100::/64" => "discard-only",
        "2001::/32" => "Teredo",
        "fc00::/7" => "unique local (private IPv6)",
        "fe80::/10" => "link-local",
        _ => "special-purpose",
    }
}

/// An address the check refused, and the range that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub address: IpAddr,
    pub range: Cidr,
    /// What the range is (`private (RFC 1918)`, `loopback`, `one of this host's addresses`).
    pub why: String,
}

impl fmt::Display for Denied {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} is in {} ({})",
            self.address, self.range, self.why
        )
    }
}

/// An extra range the caller denies, with what it is (`one of this host's addresses`, `the
/// platform's database`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraRange {
    pub range: Cidr,
    pub why: String,
}

/// Checks one address against G11's deny list and the caller's extra ranges. An IPv4-mapped
/// IPv6 address is denied as a whole range, so `::ffff:10.0.0.1` never passes for a public one.
pub fn check(address: IpAddr, extra: &[ExtraRange]) -> Result<(), Denied> {
    for text in denied_ranges() {
        // The lists are constants checked by a test; a range that did not parse would make
        // this check deny nothing, so it fails closed instead.
        let range = match text.parse::<Cidr>() {
            Ok(range) => range,
            Err(_) => {
                return Err(Denied {
                    address,
                    range: Cidr::host(address),
                    why: format!("the deny list entry {text} is malformed"),
                });
            }
        };
        if range.contains(address) {
            return Err(Denied {
                address,
                range,
                why: describe(text).to_owned(),
            });
        }
    }
    for extra_range in extra {
        if extra_range.range.contains(address) {
            return Err(Denied {
                address,
                range: extra_range.range,
                why: extra_range.why.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g11_every_listed_range_parses_and_has_a_description() {
        for range in DENIED_IPV4 {
            let parsed: Cidr = range.parse().unwrap();
            assert!(parsed.is_ipv4(), "{range}");
            assert_ne!(describe(range), "special-purpose", "{range}");
        }
        for range in DENIED_IPV6.iter().chain(MORE_DENIED_IPV6) {
            let parsed: Cidr = range.parse().unwrap();
            assert!(!parsed.is_ipv4(), "{range}");
            assert_ne!(describe(range), "special-purpose", "{range}");
        }
        assert_eq!(
            denied_ranges().count(),
            DENIED_IPV4.len() + DENIED_IPV6.len() + MORE_DENIED_IPV6.len()
        );
    }

    #[test]
    fn g11_a_nat64_prefix_is_ipv6_of_an_rfc_6052_length() {
        assert_eq!(
            nat64_prefix("2001:db8:64::/96").unwrap().to_string(),
            "2001:db8:64::/96"
        );
        nat64_prefix("2001:db8::/32").unwrap();
        for bad in [
            "10.0.0.0/8",
            "2001:db8:64::/33",
            "2001:db8:64::1/96",
            "nat64",
            "::/0",
        ] {
            let error = nat64_prefix(bad).unwrap_err();
            assert!(error.contains("NAT64"), "{bad}: {error}");
        }
    }

    #[test]
    fn g11_the_named_ranges_are_denied_and_public_addresses_pass() {
        for denied in [
            "10.0.0.1",
            "172.20.1.1",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.251",
            "240.0.0.1",
            "203.0.113.7",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
        ] {
            let address: IpAddr = denied.parse().unwrap();
            let refusal = check(address, &[]).unwrap_err();
            assert!(refusal.range.contains(address), "{denied}");
        }
        for public in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "160.79.104.10"] {
            check(public.parse().unwrap(), &[]).unwrap();
        }
    }

    #[test]
    fn g11_ipv4_compatible_siit_site_local_and_the_new_documentation_range_are_denied() {
        for (denied, why) in [
            // IPv4-compatible (deprecated): ::10.0.0.1, ::127.0.0.1, and ::8.8.8.8 as a form.
            ("::a00:1", "IPv4-compatible"),
            ("::7f00:1", "IPv4-compatible"),
            ("::808:808", "IPv4-compatible"),
            // SIIT, IPv4-translated: ::ffff:0:10.0.0.1.
            ("::ffff:0:a00:1", "IPv4-translated"),
            ("::ffff:0:a9fe:a9fe", "IPv4-translated"),
            ("fec0::1", "site-local"),
            ("feff::1", "site-local"),
            ("3fff::1", "documentation"),
            ("3fff:fff:ffff::1", "documentation"),
        ] {
            let address: IpAddr = denied.parse().unwrap();
            let refusal = check(address, &[]).unwrap_err();
            assert!(refusal.why.contains(why), "{denied}: {refusal}");
        }
        // Still public: the ranges end where they should.
        for public in [
            "::1:0:0:1",
            "::fffe:0:a00:1",
            "ff00::1:0:0:0:1",
            "3fff:1000::1",
            "2600::1",
        ] {
            let address: IpAddr = public.parse().unwrap();
            if let Err(refusal) = check(address, &[]) {
                assert!(
                    ![
                        "IPv4-compatible",
                        "IPv4-translated",
                        "site-local",
                        "documentation"
                    ]
                    .iter()
                    .any(|why| refusal.why.contains(why)),
                    "{public}: {refusal}"
                );
            }
        }
    }

    #[test]
    fn g11_extra_ranges_are_denied_with_their_reason() {
        let extra = [ExtraRange {
            range: "198.100.1.7".parse().unwrap(),
            why: "one of this host's addresses".to_owned(),
        }];
        let refusal = check("198.100.1.7".parse().unwrap(), &extra).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "198.100.1.7 is in 198.100.1.7/32 (one of this host's addresses)"
        );
        check("198.100.1.8".parse().unwrap(), &extra).unwrap();
    }

    #[test]
    fn g11_a_refusal_names_the_range_in_words() {
        let refusal = check("10.0.0.1".parse().unwrap(), &[]).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "10.0.0.1 is in 10.0.0.0/8 (private (RFC 1918))"
        );
    }
}
