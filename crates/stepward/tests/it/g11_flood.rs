//! Issue 11, finding 1: an unauthenticated flood of the password doors (`POST /welcome/*`,
//! `POST /signin`, `POST /api/signin`) from 4 loopback addresses × 64 connections for 10 s
//! neither grows the server's memory by 256 MiB nor makes a signed-in client's p99 on
//! `GET /api/runs` worse than 3× its p99 without the flood, measured in the same test.
//!
//! The real binary is flooded (its memory is its own process's); the flood stops by itself at
//! its deadline, or at once at the memory line. Every packet goes to loopback.

use std::net::Ipv4Addr;
use std::time::Duration;

use crate::flood::{FloodPlan, run};
use crate::http::{Server, owner_session};
use crate::support::Home;

#[test]
fn g11_an_unauthenticated_flood_neither_exhausts_memory_nor_slows_signed_in_clients() {
    let home = Home::new();
    let mut server = Server::start(&home, &["--owner-email", "ada@example.test"]);
    let address = server.address();
    let _first_start = server.next_line();
    let link = server.next_line();
    let path = link
        .strip_prefix(&format!("http://{address}"))
        .expect("a link to this server")
        .to_owned();
    let (session, _csrf) = owner_session(address, &path, "local", "ada@example.test");
    let report = run(&FloodPlan {
        target: address,
        server_pid: server.child.id(),
        session_cookie: session,
        sources: (2..=5).map(|last| Ipv4Addr::new(127, 0, 0, last)).collect(),
        connections_per_source: 64,
        quiet: Duration::from_secs(2),
        flood: Duration::from_secs(10),
        stop_growth_kib: 256 * 1024,
    });
    println!("g11 flood: {}", report.describe());
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
    assert!(server.child.try_wait().unwrap().is_none(), "the server still runs");
}
