//! The link, address and route operations of an egress network, as rtnetlink messages on a
//! socket of the namespace they change (issue 13, part 4): no `ip` process per sandbox.
//!
//! The messages are those of `netlink-packet-route` (the packet layer of the rust-netlink
//! project, which its `rtnetlink` crate drives asynchronously); the socket is `netlink-sys`'s,
//! used synchronously: the sandbox crate has no async runtime, and a backend may be called from
//! inside the server's, where blocking on a second one is not allowed. Every request asks for
//! an acknowledgement, so an error names the operation that failed.
//!
//! A socket belongs to the network namespace of the thread that opened it, for its whole life:
//! [`crate::net::namespace`] opens the sandbox side's inside the new namespace, and the host
//! side's inside `EgressOptions::host_netns` when tests put the platform side there.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd};

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::{Socket, SocketAddr};

/// An rtnetlink socket of one network namespace.
pub(crate) struct Rtnl {
    socket: Socket,
    sequence: u32,
    buffer: Vec<u8>,
}

/// A link as a dump lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub index: u32,
    pub name: String,
}

impl Rtnl {
    /// A socket in the calling thread's network namespace.
    pub(crate) fn open() -> io::Result<Rtnl> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Rtnl {
            socket,
            sequence: 0,
            buffer: vec![0; 32 * 1024],
        })
    }

    /// Creates the veth pair `host`/`peer`, the peer directly inside the namespace `peer_netns`
    /// (it never exists in the host's), both down. Returns the host end's index.
    pub(crate) fn create_veth(
        &mut self,
        host: &str,
        peer: &str,
        peer_netns: BorrowedFd<'_>,
    ) -> io::Result<u32> {
        let mut peer_message = LinkMessage::default();
        peer_message
            .attributes
            .push(LinkAttribute::IfName(peer.to_owned()));
        peer_message
            .attributes
            .push(LinkAttribute::NetNsFd(peer_netns.as_raw_fd()));
        let mut message = LinkMessage::default();
        message
            .attributes
            .push(LinkAttribute::IfName(host.to_owned()));
        message.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_message))),
        ]));
        self.acknowledged(
            RouteNetlinkMessage::NewLink(message),
            NLM_F_CREATE | NLM_F_EXCL,
        )?;
        self.index_of(host)
    }

    /// The index of the link called `name`.
    pub(crate) fn index_of(&mut self, name: &str) -> io::Result<u32> {
        let mut message = LinkMessage::default();
        message
            .attributes
            .push(LinkAttribute::IfName(name.to_owned()));
        let replies = self.exchange(RouteNetlinkMessage::GetLink(message), 0)?;
        replies
            .into_iter()
            .find_map(|reply| match reply {
                RouteNetlinkMessage::NewLink(link) => Some(link.header.index),
                _ => None,
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no link {name}")))
    }

    /// Every link of the namespace.
    pub(crate) fn links(&mut self) -> io::Result<Vec<Link>> {
        let replies = self.exchange(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(replies
            .into_iter()
            .filter_map(|reply| match reply {
                RouteNetlinkMessage::NewLink(link) => {
                    let name = link
                        .attributes
                        .iter()
                        .find_map(|attribute| match attribute {
                            LinkAttribute::IfName(name) => Some(name.clone()),
                            _ => None,
                        })?;
                    Some(Link {
                        index: link.header.index,
                        name,
                    })
                }
                _ => None,
            })
            .collect())
    }

    /// Sets the link up.
    pub(crate) fn set_up(&mut self, index: u32) -> io::Result<()> {
        let mut message = LinkMessage::default();
        message.header.index = index;
        message.header.flags = LinkFlags::Up;
        message.header.change_mask = LinkFlags::Up;
        self.acknowledged(RouteNetlinkMessage::SetLink(message), 0)
    }

    /// Adds `address/prefix_len` to the link.
    pub(crate) fn add_ipv4_address(
        &mut self,
        index: u32,
        address: Ipv4Addr,
        prefix_len: u8,
    ) -> io::Result<()> {
        let mut message = AddressMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.prefix_len = prefix_len;
        message.header.index = index;
        message
            .attributes
            .push(AddressAttribute::Local(address.into()));
        message
            .attributes
            .push(AddressAttribute::Address(address.into()));
        self.acknowledged(
            RouteNetlinkMessage::NewAddress(message),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Adds the IPv4 default route via `gateway` on the link.
    pub(crate) fn add_default_route(&mut self, index: u32, gateway: Ipv4Addr) -> io::Result<()> {
        let mut message = RouteMessage::default();
        message.header.address_family = AddressFamily::Inet;
        message.header.table = RouteHeader::RT_TABLE_MAIN;
        message.header.protocol = RouteProtocol::Boot;
        message.header.scope = RouteScope::Universe;
        message.header.kind = RouteType::Unicast;
        message
            .attributes
            .push(RouteAttribute::Gateway(RouteAddress::Inet(gateway)));
        message.attributes.push(RouteAttribute::Oif(index));
        self.acknowledged(
            RouteNetlinkMessage::NewRoute(message),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Removes `address/prefix_len` from the link.
    pub(crate) fn delete_ipv4_address(
        &mut self,
        index: u32,
        address: Ipv4Addr,
        prefix_len: u8,
    ) -> io::Result<()> {
        let mut message = AddressMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.prefix_len = prefix_len;
        message.header.index = index;
        message
            .attributes
            .push(AddressAttribute::Local(address.into()));
        message
            .attributes
            .push(AddressAttribute::Address(address.into()));
        self.acknowledged(RouteNetlinkMessage::DelAddress(message), 0)
    }

    /// Whether a link with this index exists.
    pub(crate) fn link_exists(&mut self, index: u32) -> io::Result<bool> {
        let mut message = LinkMessage::default();
        message.header.index = index;
        match self.exchange(RouteNetlinkMessage::GetLink(message), 0) {
            Ok(_) => Ok(true),
            Err(error) if error.raw_os_error() == Some(libc::ENODEV) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Deletes the link (for a veth: both ends).
    pub(crate) fn delete_link(&mut self, index: u32) -> io::Result<()> {
        let mut message = LinkMessage::default();
        message.header.index = index;
        self.acknowledged(RouteNetlinkMessage::DelLink(message), 0)
    }

    /// Sends one request that answers with an acknowledgement only.
    fn acknowledged(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.exchange(message, flags).map(drop)
    }

    /// Sends one request with `NLM_F_REQUEST | NLM_F_ACK | flags` and collects its answers until
    /// the acknowledgement (or, for a dump, its end); a negative acknowledgement is its errno.
    fn exchange(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.sequence = self.sequence.wrapping_add(1);
        let sequence = self.sequence;
        let mut packet =
            NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(message));
        packet.header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        packet.header.sequence_number = sequence;
        packet.finalize();
        let mut request = vec![0; packet.buffer_len()];
        packet.serialize(&mut request);
        self.socket.send(&request, 0)?;
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut replies = Vec::new();
        loop {
            let received = self.socket.recv(&mut &mut self.buffer[..], 0)?;
            let mut offset = 0;
            while offset < received {
                let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(
                    &self.buffer[offset..received],
                )
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.to_string()))?;
                let length = reply.header.length as usize;
                if length == 0 {
                    break;
                }
                offset += length;
                if reply.header.sequence_number != sequence {
                    // An answer to an earlier request that gave up; not ours.
                    continue;
                }
                match reply.payload {
                    NetlinkPayload::Error(error) => match error.code {
                        None if !dump => return Ok(replies),
                        None => {}
                        Some(code) => return Err(io::Error::from_raw_os_error(-code.get())),
                    },
                    NetlinkPayload::Done(_) => return Ok(replies),
                    NetlinkPayload::InnerMessage(inner) => replies.push(inner),
                    NetlinkPayload::Noop | NetlinkPayload::Overrun(_) => {}
                    _ => {}
                }
            }
        }
    }
}
