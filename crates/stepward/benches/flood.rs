//! `scripts/bench`'s figure for issue 11, finding 1: a release `stepward serve` flooded on its
//! password doors from 4 loopback addresses × 64 connections (`STEPWARD_BENCH_FLOOD_SECONDS`,
//! default 10), beside the same signed-in client's p99 without the flood, measured in this
//! run. The flood code is the test's (`tests/it/flood.rs`, run by
//! `tests/it/unauthenticated_flood.rs`). Every packet goes to loopback; the server is stopped
//! by its pid when this ends.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../tests/it/flood.rs"]
mod flood;
#[path = "../tests/it/http.rs"]
mod http;
#[path = "../tests/it/support.rs"]
mod support;

use std::time::Duration;

fn main() {
    let seconds = std::env::var("STEPWARD_BENCH_FLOOD_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(10);
    let home = support::Home::new();
    let (server, plan) = flood::start_signed_in(&home, Duration::from_secs(seconds));
    eprintln!(
        "flooding 4 addresses x 64 connections for {seconds} s (2 s without the flood first)"
    );
    let report = flood::run(&plan);
    drop(server);
    let ratio = report.flood_p99.as_secs_f64() / report.quiet_p99.as_secs_f64().max(1e-6);
    let growth_mib = report.growth_kib() / 1024;
    println!(
        "peak RSS growth under the flood: {growth_mib} MiB (target < 256 MiB){}",
        if growth_mib < 256 && !report.stopped_early {
            ""
        } else {
            "   MISSED"
        }
    );
    println!(
        "signed-in GET /api/runs p99: {:.2} ms under the flood, {:.2} ms without it (same run): \
         {ratio:.2}x (target < 3x){}",
        report.flood_p99.as_secs_f64() * 1000.0,
        report.quiet_p99.as_secs_f64() * 1000.0,
        if ratio < 3.0 { "" } else { "   MISSED" }
    );
    println!("detail: {}", report.describe());
}
