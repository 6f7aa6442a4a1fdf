//! The configuration of `public_egress` networks, and its validation.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use crate::net::cidr::Cidr;
use crate::net::error::Error;

/// The default pool the sandboxes' /30 links are carved from.
pub const DEFAULT_ADDRESS_POOL: &str = "10.231.0.0/16";
/// The default nftables table (family `inet`).
pub const DEFAULT_TABLE_NAME: &str = "stepward";
/// The default prefix of the named network namespaces that versions before issue 13 made per
/// sandbox (`sw-<slot>-<random>` under `/run/netns`); the sweep removes leftovers with it.
pub const DEFAULT_NAMESPACE_PREFIX: &str = "sw";
/// Host-side veth names are this prefix and the slot; the policy matches it (`swh*`).
pub const HOST_VETH_PREFIX: &str = "swh";
/// Sandbox-side veth names are this prefix and the slot.
pub const SANDBOX_VETH_PREFIX: &str = "sws";

/// Where sandbox traffic leaves the host, translated to the host's address (masquerade).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uplink {
    /// Whatever interface the route to a destination uses (every interface but the sandboxes').
    DefaultRoute,
    /// Only this interface; sandbox traffic routed anywhere else is dropped.
    Interface(String),
}

/// How `public_egress` networks are built and policed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressOptions {
    /// The IPv4 pool the per-sandbox /30 links come from; it is itself a denied destination.
    pub address_pool: Cidr,
    /// Where traffic leaves the host (masquerade).
    pub uplink: Uplink,
    /// The one exemption from the deny list, on port 53 only (UDP and TCP); written into the
    /// sandbox's resolv.conf. Must be IPv4: sandboxes have no IPv6.
    pub resolver: IpAddr,
    /// The platform's API, database and object store: denied even when public.
    pub platform_endpoints: Vec<Cidr>,
    /// TEST ONLY: a range reachable despite the deny list (the tests' "internet",
    /// 203.0.113.0/24). `None` (the default) in every real deployment. It never opens the host's
    /// own addresses or the platform endpoints.
    pub test_internet_exemption: Option<Cidr>,
    /// The nftables table (family `inet`) that holds the policy.
    pub table_name: String,
    /// The network namespace that plays the host (gateway, policy, forwarding). `None` is the
    /// real host; tests point it at a namespace they made, so no host setting is ever touched.
    pub host_netns: Option<PathBuf>,
    /// The prefix of the named namespaces earlier versions made per sandbox under `/run/netns`;
    /// the sweep removes only leftovers with it (namespaces are unnamed now). Tests use a
    /// unique prefix so that a test's sweep never touches another test's names.
    pub namespace_prefix: String,
}

impl EgressOptions {
    /// The defaults (pool 10.231.0.0/16, table `stepward`, the real host, the default route as
    /// uplink, no endpoints, no test exemption) with the given resolver.
    pub fn with_resolver(resolver: IpAddr) -> EgressOptions {
        EgressOptions {
            address_pool: Cidr::ipv4(Ipv4Addr::new(10, 231, 0, 0), 16),
            uplink: Uplink::DefaultRoute,
            resolver,
            platform_endpoints: Vec::new(),
            test_internet_exemption: None,
            table_name: DEFAULT_TABLE_NAME.to_owned(),
            host_netns: None,
            namespace_prefix: DEFAULT_NAMESPACE_PREFIX.to_owned(),
        }
    }

    /// Checks everything that is written into nftables text or interface names, so that no
    /// option can inject rules, and that the pool can hold at least one sandbox.
    pub fn validate(&self) -> Result<(), Error> {
        if !is_nft_identifier(&self.table_name) {
            return Err(Error::InvalidOption {
                option: "table_name",
                value: self.table_name.clone(),
                reason: "must be 1-32 ASCII letters, digits or underscores, starting with a letter",
            });
        }
        if !is_namespace_prefix(&self.namespace_prefix) {
            return Err(Error::InvalidOption {
                option: "namespace_prefix",
                value: self.namespace_prefix.clone(),
                reason: "must be 1-16 lowercase ASCII letters or digits",
            });
        }
        if let Uplink::Interface(name) = &self.uplink
            && (!is_interface_name(name) || name.starts_with(HOST_VETH_PREFIX))
        {
            return Err(Error::InvalidOption {
                option: "uplink",
                value: name.clone(),
                reason: "must be an interface name of 1-15 characters from [A-Za-z0-9_.-], not a sandbox veth",
            });
        }
        if !self.address_pool.is_ipv4() || self.address_pool.prefix_len() > 30 {
            return Err(Error::InvalidOption {
                option: "address_pool",
                value: self.address_pool.to_string(),
                reason: "must be an IPv4 range of /30 or wider",
            });
        }
        if !self.resolver.is_ipv4() {
            return Err(Error::InvalidOption {
                option: "resolver",
                value: self.resolver.to_string(),
                reason: "must be an IPv4 address: sandboxes have no IPv6",
            });
        }
        Ok(())
    }

    /// How many /30 links, hence concurrent sandboxes, the pool holds.
    pub fn pool_capacity(&self) -> u32 {
        let host_bits = 32u32.saturating_sub(u32::from(self.address_pool.prefix_len()));
        // A /30 per sandbox: 2^(host_bits - 2) links, capped to what a u32 slot can name.
        1u32.checked_shl(host_bits.saturating_sub(2))
            .unwrap_or(u32::MAX)
    }

    /// A description of where the host side lives, for messages.
    pub(crate) fn host_description(&self) -> String {
        match &self.host_netns {
            Some(path) => format!("the network namespace {}", path.display()),
            None => "the host's network namespace".to_owned(),
        }
    }
}

fn is_nft_identifier(text: &str) -> bool {
    let mut characters = text.chars();
    matches!(characters.next(), Some(first) if first.is_ascii_alphabetic())
        && text.len() <= 32
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_namespace_prefix(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 16
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

pub(crate) fn is_interface_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 15
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> EgressOptions {
        EgressOptions::with_resolver("192.0.2.53".parse().unwrap())
    }

    #[test]
    fn defaults_match_the_contract() {
        let options = options();
        assert_eq!(options.address_pool.to_string(), DEFAULT_ADDRESS_POOL);
        assert_eq!(options.table_name, "stepward");
        assert_eq!(options.test_internet_exemption, None);
        assert_eq!(options.host_netns, None);
        assert_eq!(options.pool_capacity(), 16384);
        options.validate().unwrap();
    }

    #[test]
    fn names_that_could_inject_nft_text_are_rejected() {
        let mut bad_table = options();
        bad_table.table_name = "x { }; flush ruleset".to_owned();
        assert!(bad_table.validate().is_err());
        let mut bad_uplink = options();
        bad_uplink.uplink = Uplink::Interface("eth0\" accept".to_owned());
        assert!(bad_uplink.validate().is_err());
        let mut sandbox_uplink = options();
        sandbox_uplink.uplink = Uplink::Interface("swh1".to_owned());
        assert!(sandbox_uplink.validate().is_err());
        let mut bad_prefix = options();
        bad_prefix.namespace_prefix = "../x".to_owned();
        assert!(bad_prefix.validate().is_err());
    }

    #[test]
    fn ipv6_resolver_and_odd_pools_are_rejected() {
        let mut v6 = options();
        v6.resolver = "2001:db8::53".parse().unwrap();
        assert!(v6.validate().is_err());
        let mut narrow = options();
        narrow.address_pool = "10.231.0.0/31".parse().unwrap();
        assert!(narrow.validate().is_err());
        let mut v6_pool = options();
        v6_pool.address_pool = "fd00::/64".parse().unwrap();
        assert!(v6_pool.validate().is_err());
    }
}
