//! IP address ranges (`10.0.0.0/8`, `fc00::/7`), always stored in their network form.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IPv4 or IPv6 range. The host bits are cleared on construction, so two ways of writing the
/// same range compare equal and the nftables text never carries a host address by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

impl Cidr {
    /// The range of `prefix_len` leading bits of `address`; an error if the prefix is longer than
    /// the address.
    pub fn new(address: IpAddr, prefix_len: u8) -> Result<Cidr, CidrError> {
        let max = max_prefix_len(address);
        if prefix_len > max {
            return Err(CidrError {
                text: format!("{address}/{prefix_len}"),
                reason: "the prefix is longer than the address",
            });
        }
        Ok(Cidr {
            network: mask(address, prefix_len),
            prefix_len,
        })
    }

    /// An IPv4 range from its parts, usable in constants; a prefix over 32 is clamped to 32 and
    /// host bits are cleared.
    pub const fn ipv4(address: Ipv4Addr, prefix_len: u8) -> Cidr {
        let prefix_len = if prefix_len > 32 { 32 } else { prefix_len };
        let bits = address.to_bits();
        let kept = if prefix_len == 0 {
            0
        } else {
            bits & (u32::MAX << (32 - prefix_len as u32))
        };
        Cidr {
            network: IpAddr::V4(Ipv4Addr::from_bits(kept)),
            prefix_len,
        }
    }

    /// The range holding exactly one address.
    pub fn host(address: IpAddr) -> Cidr {
        Cidr {
            network: address,
            prefix_len: max_prefix_len(address),
        }
    }

    /// The first address of the range.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// How many leading bits are fixed.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// True for an IPv4 range.
    pub fn is_ipv4(&self) -> bool {
        self.network.is_ipv4()
    }

    /// True when `address` lies inside the range (never across families).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                mask(address, self.prefix_len) == self.network
            }
            _ => false,
        }
    }

    /// The IPv4 network as a number, for address arithmetic inside a pool.
    pub fn ipv4_network_bits(&self) -> Option<u32> {
        match self.network {
            IpAddr::V4(v4) => Some(u32::from(v4)),
            IpAddr::V6(_) => None,
        }
    }
}

fn max_prefix_len(address: IpAddr) -> u8 {
    match address {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

fn mask(address: IpAddr, prefix_len: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = if prefix_len == 0 {
                0
            } else {
                bits & (u32::MAX << (32 - u32::from(prefix_len)))
            };
            IpAddr::V4(Ipv4Addr::from(kept))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = if prefix_len == 0 {
                0
            } else {
                bits & (u128::MAX << (128 - u32::from(prefix_len)))
            };
            IpAddr::V6(Ipv6Addr::from(kept))
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.network, self.prefix_len)
    }
}

/// A text that should be an address range is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an IP address range (expected ADDRESS/PREFIX): {reason}")]
pub struct CidrError {
    pub text: String,
    pub reason: &'static str,
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// Parses `ADDRESS/PREFIX`; a bare address is a single-address range. Host bits must be zero,
    /// because `10.0.0.5/8` is more often a typo than a range.
    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        let invalid = |reason| CidrError {
            text: text.to_owned(),
            reason,
        };
        let (address_text, prefix_text) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address_text
            .parse()
            .map_err(|_| invalid("the address part is not an IP address"))?;
        let Some(prefix_text) = prefix_text else {
            return Ok(Cidr::host(address));
        };
        let prefix_len: u8 = prefix_text
            .parse()
            .map_err(|_| invalid("the prefix is not a number"))?;
        let cidr = Cidr::new(address, prefix_len)?;
        if cidr.network != address {
            return Err(invalid("the address has bits set beyond the prefix"));
        }
        Ok(cidr)
    }
}

impl From<IpAddr> for Cidr {
    fn from(address: IpAddr) -> Cidr {
        Cidr::host(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_single_addresses() {
        let range: Cidr = "10.0.0.0/8".parse().unwrap();
        assert_eq!(range.to_string(), "10.0.0.0/8");
        assert!(range.contains("10.1.2.3".parse().unwrap()));
        assert!(!range.contains("11.0.0.0".parse().unwrap()));
        assert!(!range.contains("::ffff:10.0.0.5".parse().unwrap()));
        let single: Cidr = "255.255.255.255".parse().unwrap();
        assert_eq!(single.to_string(), "255.255.255.255/32");
        let v6: Cidr = "fc00::/7".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert_eq!("::/128".parse::<Cidr>().unwrap().to_string(), "::/128");
    }

    #[test]
    fn rejects_host_bits_long_prefixes_and_garbage() {
        assert!("10.0.0.5/8".parse::<Cidr>().is_err());
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("fc00::/129".parse::<Cidr>().is_err());
        assert!("ten/8".parse::<Cidr>().is_err());
        assert!("10.0.0.0/x".parse::<Cidr>().is_err());
    }

    #[test]
    fn new_clears_host_bits() {
        let cidr = Cidr::new("10.231.7.9".parse().unwrap(), 16).unwrap();
        assert_eq!(cidr.to_string(), "10.231.0.0/16");
        assert_eq!(
            Cidr::new("1.2.3.4".parse().unwrap(), 0)
                .unwrap()
                .to_string(),
            "0.0.0.0/0"
        );
    }
}
