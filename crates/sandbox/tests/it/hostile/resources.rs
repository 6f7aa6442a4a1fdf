//! Resources (G10): fork, memory, CPU, disk, inode and descriptor bombs, output floods; each
//! is stopped by a limit and the run still ends with an observation.

use std::time::{Duration, Instant};

use sandbox::{Limits, Outcome, UnknownReason};
use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

pub(crate) fn small_limits() -> Limits {
    Limits {
        memory_bytes: 128 * 1024 * 1024,
        pids: 16,
        cpu_seconds: 3,
        wall: Duration::from_secs(10),
        file_size_bytes: 4 * 1024 * 1024,
        tmp_bytes: 8 * 1024 * 1024,
        work_bytes: 16 * 1024 * 1024,
        output_bytes: 64 * 1024,
        open_files: 64,
    }
}

#[test]
fn g10_a_fork_bomb_is_bounded_by_the_pids_limit_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/fork_bomb.py"),
        json!({ "ceiling": 10_000 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    let answer = report(&observation);
    let children = answer["children"].as_u64().unwrap();
    assert!(
        children < u64::from(limits.pids),
        "{children} children with pids {}",
        limits.pids
    );
    assert_eq!(
        answer["refusal"], 11,
        "fork must fail with EAGAIN: {answer}"
    );
}

#[test]
fn g10_a_memory_bomb_is_stopped_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/memory_bomb.py"),
        json!({ "ceiling_mib": 4096 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    match &observation.outcome {
        Outcome::Succeeded { result_json } => {
            let answer: serde_json::Value = serde_json::from_str(result_json).unwrap();
            assert_eq!(answer["stopped_by"], "MemoryError", "{answer}");
            assert!(answer["allocated_mib"].as_u64().unwrap() * 1024 * 1024 <= limits.memory_bytes);
        }
        Outcome::Failed { error, .. } => assert_eq!(error.kind, "MemoryError"),
        Outcome::Unknown { reason } => assert!(
            matches!(
                reason,
                UnknownReason::MemoryLimit | UnknownReason::Killed { .. }
            ),
            "{reason:?}"
        ),
        other => panic!("a memory bomb ended as {other:?}"),
    }
}

#[test]
fn g10_a_cpu_spin_is_stopped_needs_root() {
    let limits = small_limits();
    let started = Instant::now();
    let observation = Probe::new(include_str!("../../probes/cpu_spin.py"), json!({}))
        .limits(limits.clone())
        .run(Filter::Enforced);
    assert!(
        started.elapsed() < limits.wall + Duration::from_secs(5),
        "the spin ran for {:?}",
        started.elapsed()
    );
    assert!(
        matches!(
            observation.outcome,
            Outcome::Unknown {
                reason: UnknownReason::CpuLimit | UnknownReason::WallTimeout
            }
        ),
        "{:?}",
        observation.outcome
    );
}

#[test]
fn g10_filling_tmp_is_bounded_by_its_size_cap_needs_root() {
    let limits = small_limits();
    // Files of 2 MiB stay under the file-size limit: only the size of /tmp can stop this.
    let observation = Probe::new(
        include_str!("../../probes/disk_fill.py"),
        json!({ "folder": "/tmp", "ceiling_mib": 1024, "mib_per_file": 2 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    let answer = report(&observation);
    let written = answer["written_mib"].as_u64().unwrap() * 1024 * 1024;
    assert!(
        written <= limits.tmp_bytes,
        "wrote {written} bytes into /tmp"
    );
    assert_eq!(answer["refusal"], 28, "ENOSPC expected: {answer}");
}

#[test]
fn g10_one_huge_file_is_bounded_by_the_file_size_limit_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/disk_fill.py"),
        json!({ "folder": "/work", "ceiling_mib": 1024, "mib_per_file": 1024 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    let answer = report(&observation);
    let written = answer["written_mib"].as_u64().unwrap() * 1024 * 1024;
    assert!(
        written <= limits.file_size_bytes,
        "wrote {written} bytes into one file"
    );
    assert_eq!(answer["refusal"], 27, "EFBIG expected: {answer}");
    for file in &observation.copy_back.files {
        assert!(
            file.contents().unwrap_or_default().len() as u64 <= limits.file_size_bytes,
            "{:?}",
            file.path
        );
    }
}

#[test]
fn g10_an_inode_bomb_in_tmp_is_bounded_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/inode_bomb.py"),
        json!({ "folder": "/tmp", "ceiling": 2_000_000 }),
    )
    .limits(limits)
    .run(Filter::Enforced);
    match &observation.outcome {
        Outcome::Succeeded { result_json } => {
            let answer: serde_json::Value = serde_json::from_str(result_json).unwrap();
            assert_eq!(
                answer["refusal"], 28,
                "the inode cap must stop it: {answer}"
            );
        }
        Outcome::Unknown { reason } => assert!(
            matches!(
                reason,
                UnknownReason::WallTimeout | UnknownReason::MemoryLimit
            ),
            "{reason:?}"
        ),
        other => panic!("an inode bomb ended as {other:?}"),
    }
}

#[test]
fn g12_an_inode_bomb_in_work_is_copied_back_with_bounded_work_needs_root() {
    let observation = Probe::new(
        include_str!("../../probes/inode_bomb.py"),
        json!({ "folder": "/work", "ceiling": 5_000 }),
    )
    .limits(small_limits())
    .run(Filter::Enforced);
    let answer = report(&observation);
    assert!(answer["created"].as_u64().unwrap() > 1000, "{answer}");
    let copy_back = &observation.copy_back;
    assert!(copy_back.files.len() <= sandbox::copyback::CopyBackPolicy::default().max_files);
    assert!(
        copy_back.refusals.iter().any(|refusal| matches!(
            refusal.reason,
            sandbox::copyback::RefusalReason::TooMany { .. }
        )),
        "{:?}",
        copy_back.refusals.len()
    );
}

#[test]
fn g10_a_descriptor_bomb_is_bounded_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/fd_bomb.py"),
        json!({ "ceiling": 1_000_000 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    let answer = report(&observation);
    assert!(
        answer["opened"].as_u64().unwrap() < limits.open_files,
        "{answer}"
    );
    assert_eq!(answer["refusal"], 24, "EMFILE expected: {answer}");
}

#[test]
fn g10_an_output_flood_is_truncated_needs_root() {
    let limits = small_limits();
    let observation = Probe::new(
        include_str!("../../probes/output_flood.py"),
        json!({ "mib": 8 }),
    )
    .limits(limits.clone())
    .run(Filter::Enforced);
    assert!(observation.output_truncated);
    assert!(observation.stdout.len() + observation.stderr.len() <= limits.output_bytes);
}

/// What a socket-memory probe may queue: its memory limit, and a little slack for the buffers
/// the kernel grants before it charges (one skb per socket, forced allocations).
fn assert_socket_memory_bounded(observation: &sandbox::Observation, limits: &Limits, kind: &str) {
    let limit_mib = limits.memory_bytes >> 20;
    match &observation.outcome {
        Outcome::Succeeded { result_json } => {
            let answer: serde_json::Value = serde_json::from_str(result_json).unwrap();
            let queued = answer["queued_mib"].as_u64().unwrap();
            assert!(
                queued <= limit_mib + limit_mib / 8,
                "{kind}: {queued} MiB of socket buffers held against a limit of {limit_mib} MiB: \
                 {answer}"
            );
        }
        // Stopped at the limit by the memory controller: held too.
        Outcome::Unknown { reason } => assert!(
            matches!(
                reason,
                UnknownReason::MemoryLimit | UnknownReason::Killed { .. }
            ),
            "{kind}: {reason:?}"
        ),
        other => panic!(
            "{kind}: the probe ended as {other:?}\nstderr: {}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

/// Socket buffers are kernel memory a step pins; they count against its memory limit on this
/// host's memory controller (v1 or v2), so a step cannot hold the host's TCP and UDP memory
/// (sandbox review 3, F1: 512 MiB queued against a 256 MiB limit on cgroup v1).
#[test]
fn g10_socket_buffers_count_against_the_memory_limit_needs_root() {
    announce_memory_layout();
    let limits = Limits {
        memory_bytes: 96 * 1024 * 1024,
        pids: 16,
        open_files: 512,
        cpu_seconds: 30,
        wall: Duration::from_secs(60),
        ..small_limits()
    };
    for kind in ["tcp", "udp"] {
        let observation = Probe::new(
            include_str!("../../probes/socket_memory.py"),
            json!({ "kind": kind, "ceiling_mib": 320, "hold_s": 0 }),
        )
        .limits(limits.clone())
        .run(Filter::Enforced);
        assert_socket_memory_bounded(&observation, &limits, kind);
    }
}

/// Says which memory controller layout this run covers, and that the other was not run here.
pub(crate) fn announce_memory_layout() {
    let v1 = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .any(|line| {
            line.split(':').nth(1).is_some_and(|controllers| {
                controllers
                    .split(',')
                    .any(|controller| controller == "memory")
            })
        });
    let (here, absent) = if v1 { ("v1", "v2") } else { ("v2", "v1") };
    eprintln!(
        "socket memory: checked on this host's cgroup {here} memory controller; \
         NOT RUN on cgroup {absent} memory (absent here)"
    );
}
