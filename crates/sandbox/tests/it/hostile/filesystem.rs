//! The filesystem (G7, G10): host files, the runtime and root, /proc, cgroups, devices, and
//! executing anything written by the step.

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

const PROBE: &str = include_str!("../../probes/filesystem.py");

/// Host settings the probe OPENS for writing (never writes) to prove they are out of reach.
const PROC_SYS: &[&str] = &[
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/net/ipv4/ip_forward",
    "/proc/sysrq-trigger",
];

fn filesystem_report() -> serde_json::Value {
    report(&filesystem_observation())
}

fn filesystem_observation() -> sandbox::Observation {
    let repository_file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let host_paths = [
        "/etc/shadow",
        "/etc/passwd",
        "/etc/group",
        "/etc/hostname",
        "/etc/machine-id",
        "/root/.bash_history",
        "/var/log/dpkg.log",
        "/proc/1/root/etc/shadow",
        "/sys/kernel/notes",
        repository_file,
    ];
    Probe::new(
        PROBE,
        json!({ "host_paths": host_paths, "proc_sys_paths": PROC_SYS }),
    )
    .run(Filter::Enforced)
}

#[test]
fn g10_host_files_cannot_be_read_needs_root() {
    let answer = filesystem_report();
    let reads = answer["host_reads"].as_object().unwrap();
    assert_eq!(reads.len(), 10);
    for (path, outcome) in reads {
        // The sandbox's minimal /etc may have its own passwd, group and hostname; what it
        // shows must not be the host's file.
        let own_version_allowed =
            ["/etc/passwd", "/etc/group", "/etc/hostname"].contains(&path.as_str());
        if own_version_allowed && outcome["ok"] == true {
            let host = std::fs::read(path).unwrap_or_default();
            let host_start = String::from_utf8_lossy(&host[..host.len().min(4096)]).into_owned();
            assert_ne!(
                outcome["data"].as_str().unwrap(),
                host_start,
                "the host's {path} is visible"
            );
            continue;
        }
        assert_eq!(outcome["ok"], false, "{path} was readable: {outcome}");
    }
}

#[test]
fn g7_the_runtime_and_the_root_cannot_be_written_needs_root() {
    let answer = filesystem_report();
    for (what, outcome) in answer["runtime_writes"].as_object().unwrap() {
        assert_ne!(outcome["opened"], true, "{what} was writable: {outcome}");
        assert_ne!(outcome["created"], true, "{what} was writable: {outcome}");
        assert!(outcome["errno"].is_u64(), "{what}: {outcome}");
    }
}

#[test]
fn g10_proc_sys_and_host_knobs_cannot_be_opened_for_writing_needs_root() {
    let answer = filesystem_report();
    let proc_sys = answer["proc_sys"].as_object().unwrap();
    assert_eq!(proc_sys.len(), PROC_SYS.len());
    for (path, outcome) in proc_sys {
        assert_eq!(
            outcome["opened"], false,
            "{path} opened for writing: {outcome}"
        );
    }
}

/// G10: the sandbox's `/proc` is its own processes and nothing of the host: no kernel tables
/// (`modules`, `cpuinfo`, `mounts` of the host's namespaces...), no knobs (`sys`,
/// `sysrq-trigger`), none of the entries that a full procfs shows and the masks would have to
/// keep up with. The sandbox's own network devices stay readable through `/proc/self/net`.
/// (A kernel before 5.8 has no `subset=pid`: there the record must say so, and the masks are
/// tested by `review::g10_on_a_whole_procfs_the_masks_keep_host_kernel_state_out_of_reach`.)
#[test]
fn g10_proc_lists_only_the_sandboxs_own_processes_needs_root() {
    let observation = filesystem_observation();
    let answer = report(&observation);
    let listing = answer["proc_listing"].as_array().unwrap();
    if observation
        .isolation_notes
        .iter()
        .any(|note| note.contains("subset=pid"))
    {
        return;
    }
    assert!(!listing.is_empty(), "/proc is empty");
    for entry in listing {
        let entry = entry.as_str().unwrap();
        assert!(
            ["self", "thread-self"].contains(&entry) || entry.bytes().all(|b| b.is_ascii_digit()),
            "/proc shows {entry}, which is not one of the sandbox's processes: {listing:?}"
        );
    }
    let devices = &answer["own_network_devices"];
    assert_eq!(devices["ok"], true, "/proc/self/net/dev: {devices}");
}

#[test]
fn g10_proc_exe_of_every_visible_process_stays_inside_needs_root() {
    let answer = filesystem_report();
    for (pid, entry) in answer["proc_exe"].as_object().unwrap() {
        assert_eq!(
            entry["write"]["opened"], false,
            "/proc/{pid}/exe opened for writing"
        );
        let target = entry["target"].as_str().unwrap();
        assert!(
            target.starts_with("/usr/") || target.starts_with("unreadable"),
            "/proc/{pid}/exe points at {target}"
        );
    }
}

#[test]
fn g10_cgroup_release_agent_and_sys_are_out_of_reach_needs_root() {
    let answer = filesystem_report();
    for (path, outcome) in answer["release_agents"].as_object().unwrap() {
        assert_eq!(
            outcome["opened"], false,
            "{path} opened for writing: {outcome}"
        );
    }
    if let Some(listing) = answer["sys_listing"].as_array() {
        assert!(listing.is_empty(), "/sys shows the host: {listing:?}");
    }
}

#[test]
fn g7_dev_is_minimal_and_no_device_can_be_made_needs_root() {
    let answer = filesystem_report();
    for device in answer["devices"].as_array().unwrap() {
        let device = device.as_str().unwrap();
        assert!(
            [
                "null", "zero", "random", "urandom", "fd", "stdin", "stdout", "stderr", "shm",
                "pts", "ptmx"
            ]
            .contains(&device),
            "/dev/{device} is visible"
        );
    }
    for (path, outcome) in answer["dangerous_devices"].as_object().unwrap() {
        assert_eq!(outcome["ok"], false, "{path} was readable");
    }
    assert_ne!(answer["made_device"], true, "mknod of a device succeeded");
}

#[test]
fn g7_files_written_to_tmp_work_or_shm_cannot_be_executed_needs_root() {
    let answer = filesystem_report();
    for folder in ["exec_from_tmp", "exec_from_work", "exec_from_shm"] {
        for what in ["binary", "script"] {
            let outcome = &answer[folder][what];
            assert_eq!(outcome["ran"], false, "{folder} {what} ran: {outcome}");
            assert_eq!(
                outcome["errno"], 13,
                "{folder} {what} must fail with EACCES"
            );
        }
    }
    assert_eq!(answer["load_library_from_tmp"]["loaded"], false, "{answer}");
    assert_eq!(answer["load_library_from_shm"]["loaded"], false, "{answer}");
}
