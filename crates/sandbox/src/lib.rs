//! Isolation backends for step invocations: the jail helper, seccomp policy, egress policy,
//! copy-back filter, runner harness, warm pool.

#![allow(unsafe_code)]

pub mod copyback;
pub mod net;
