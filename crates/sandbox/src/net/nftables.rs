//! Reading the installed egress policy over nfnetlink, without running `nft` (issue 13, part
//! 4): before a sandbox gets a network, the host side must hold the policy table with every
//! chain that polices sandbox veths, or no sandbox starts. This only reads; the table itself is
//! loaded once, when a backend starts ([`crate::net::install_policy`]), and nothing per step
//! ever changes it.
//!
//! The messages are `netlink-packet-netfilter`'s (the rust-netlink project's nfnetlink layer,
//! the same family as the rtnetlink messages of [`crate::net::netlink`]).

use std::io;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_netfilter::nftables::{ChainAttribute, ChainMessage, NfTablesMessage};
use netlink_packet_netfilter::{
    NetfilterHeader, NetfilterMessage, NetfilterMessageInner, NetfilterProtoFamily,
};
use netlink_sys::protocols::NETLINK_NETFILTER;
use netlink_sys::{Socket, SocketAddr};

/// The chains of the policy table: the verdict chain and every hook that jumps to it or
/// guards the host. A table missing one of them is not the policy.
pub(crate) const POLICY_CHAINS: [&str; 5] = [
    "from_sandbox",
    "prerouting",
    "forward",
    "input",
    "postrouting",
];

/// The names of the chains of the `inet` table `table` in the calling thread's network
/// namespace (empty when there is no such table).
pub(crate) fn inet_chains(table: &str) -> io::Result<Vec<String>> {
    let mut socket = Socket::new(NETLINK_NETFILTER)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    let request = NetfilterMessage::new(
        NetfilterHeader::new(NetfilterProtoFamily::Inet, 0, 0),
        NfTablesMessage::GetChain(ChainMessage {
            attributes: Vec::new(),
        }),
    );
    let mut packet = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(request));
    packet.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP;
    packet.header.sequence_number = 1;
    packet.finalize();
    let mut bytes = vec![0; packet.buffer_len()];
    packet.serialize(&mut bytes);
    socket.send(&bytes, 0)?;

    let mut chains = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let received = socket.recv(&mut &mut buffer[..], 0)?;
        let mut offset = 0;
        while offset < received {
            let reply = NetlinkMessage::<NetfilterMessage>::deserialize(&buffer[offset..received])
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.to_string()))?;
            let length = reply.header.length as usize;
            if length == 0 {
                return Ok(chains);
            }
            offset += length;
            match reply.payload {
                NetlinkPayload::Done(_) => return Ok(chains),
                NetlinkPayload::Error(error) => match error.code {
                    None => return Ok(chains),
                    Some(code) => return Err(io::Error::from_raw_os_error(-code.get())),
                },
                NetlinkPayload::InnerMessage(message) => {
                    if let NetfilterMessageInner::NfTables(NfTablesMessage::NewChain(chain)) =
                        message.inner
                        && let Some(name) = chain_of(&chain, table)
                    {
                        chains.push(name);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The chain's name, when it belongs to `table`.
fn chain_of(chain: &ChainMessage, table: &str) -> Option<String> {
    let in_table = chain
        .attributes
        .iter()
        .any(|attribute| matches!(attribute, ChainAttribute::Table(name) if name == table));
    if !in_table {
        return None;
    }
    chain
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            ChainAttribute::Name(name) => Some(name.clone()),
            _ => None,
        })
}
