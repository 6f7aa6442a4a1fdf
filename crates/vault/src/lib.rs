//! Envelope encryption of each account's secrets and connections; names-only listing; rotation.

#![forbid(unsafe_code)]
