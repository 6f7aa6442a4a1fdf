//! The hostile suite (issue 3): each case is a stdlib Python step from `tests/probes/` that
//! tries to escape, leak or exhaust something and reports what it saw; the test runs it in the
//! real local backend and asserts that nothing escaped. Syscall denials run twice: once in the
//! sandbox, once in the same sandbox with the seccomp filter off (the `test-controls` feature),
//! which proves the probe really reaches the kernel.
//!
//! Every test here needs root (CI is root): namespaces, cgroups and id maps.

// Test helpers unwrap like the tests they serve: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod copy_back;
mod filesystem;
mod leaks;
mod legitimate;
mod lifecycle;
mod network;
mod privileges;
pub(crate) mod resources;
pub(crate) mod support;
mod syscalls;
