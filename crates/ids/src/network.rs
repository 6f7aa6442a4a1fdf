//! What a step, or an agent's scripts and tools, may reach on the network (G3, G11, G14): one
//! type for the workflow that declares it (`spec`), the sandbox that enforces it and the record
//! that keeps it before the sandbox starts (issue 37: three enums of the same two values
//! became this one, so no layer converts between copies).

use std::fmt;
use std::str::FromStr;

/// A network a step may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Network {
    /// A loopback and nothing else; no resolver. The default.
    #[default]
    None,
    /// The public internet through the egress policy, and nothing else.
    PublicEgress,
}

impl Network {
    /// Every value, in declaration order.
    pub const ALL: &'static [Network] = &[Network::None, Network::PublicEgress];

    /// The stable name written in workflows and records and shown to people.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::None => "none",
            Network::PublicEgress => "public_egress",
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for Network {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<Network, UnknownName> {
        Network::ALL
            .iter()
            .copied()
            .find(|network| network.as_str() == text)
            .ok_or_else(|| UnknownName {
                vocabulary: "network mode",
                name: text.to_owned(),
            })
    }
}

/// A stored name that this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {vocabulary} `{name}`")]
pub struct UnknownName {
    pub vocabulary: &'static str,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::Network;

    #[test]
    fn every_network_reads_back_from_its_name() {
        for network in Network::ALL {
            assert_eq!(network.as_str().parse::<Network>(), Ok(*network));
        }
        assert!("internet".parse::<Network>().is_err());
        assert_eq!(Network::default(), Network::None);
    }
}
