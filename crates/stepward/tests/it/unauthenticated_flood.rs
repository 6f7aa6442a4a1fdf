//! Issue 11, finding 1: an unauthenticated flood of the password doors (`POST /welcome/*`,
//! `POST /signin`, `POST /api/signin`) from 4 loopback addresses × 64 connections for 10 s
//! neither grows the server's memory by 256 MiB nor makes a signed-in client's p99 on
//! `GET /api/runs` worse than 3× its p99 without the flood, measured in the same test.
//!
//! The real binary is flooded (its memory is its own process's); the flood stops by itself at
//! its deadline, or at once at the memory line. Every packet goes to loopback.

use std::time::Duration;

use crate::flood::{run, start_signed_in};
use crate::support::Home;

#[test]
fn an_unauthenticated_flood_neither_exhausts_memory_nor_slows_signed_in_clients() {
    let home = Home::new();
    let (mut server, plan) = start_signed_in(&home, Duration::from_secs(10));
    let report = run(&plan);
    println!("flood: {}", report.describe());
    assert!(
        !report.stopped_early && report.growth_kib() < 256 * 1024,
        "the server's memory grew too much: {}",
        report.describe()
    );
    assert!(
        report.quiet_samples >= 100 && report.flood_samples >= 100,
        "too few signed-in requests were answered: {}",
        report.describe()
    );
    assert!(
        report.flood_p99 < report.quiet_p99 * 3,
        "the flood slowed a signed-in client: {}",
        report.describe()
    );
    assert_eq!(
        report.signed_in_failures,
        0,
        "signed-in requests failed: {}",
        report.describe()
    );
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server still runs"
    );
}
