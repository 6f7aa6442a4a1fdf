//! Egress networks (G11): the public_egress namespace, its veth and nftables policy.
