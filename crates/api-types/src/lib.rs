//! JSON wire types shared by the CLI's --json output and the HTTP API.

#![forbid(unsafe_code)]
