//! The gvisor backend (G13): the same invocation as the local backend through runsc. Each
//! test builds a backend with its own state folder and cgroup parent, runs real steps, and
//! checks the outcome and that nothing is left behind (no runsc container, no scratch
//! folder, no cgroup). A few hostile probes from `tests/probes/` run here too.
//!
//! Every test here needs root (CI is root) and runsc (`apt-get install runsc`).

// Test helpers unwrap like the tests they serve: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use sandbox::gvisor::{GvisorBackend, GvisorOptions, Platform};
use sandbox::{
    EnvVar, Invocation, Isolation, Limits, NetworkMode, Observation, Outcome, PythonPin,
    UnknownReason,
};

use crate::hostile::support::{NoSecrets, SYSCALL_HELPER, report};

/// A backend in its own state folder; dropped with the folder at the end of the test.
struct Fixture {
    backend: GvisorBackend,
    state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let state = tempfile::tempdir().unwrap();
        let backend = GvisorBackend::for_tests(state.path())
            .unwrap_or_else(|error| panic!("the gvisor backend cannot be built: {error}"));
        Fixture {
            backend,
            state,
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn invocation(&self, code: &str, inputs: serde_json::Value) -> Invocation {
        Invocation {
            live: None,
            python: PythonPin {
                major: 3,
                minor: 11,
            },
            code: code.to_owned(),
            inputs_json: inputs.to_string(),
            env: Vec::new(),
            network: NetworkMode::None,
            limits: Limits::default(),
            files: workspace::StepFiles::scratch_folder(self.work.path().to_path_buf()),
            screen: Arc::new(NoSecrets),
        }
    }

    fn run(&self, invocation: Invocation) -> Observation {
        let observation = self
            .backend
            .run(invocation)
            .unwrap_or_else(|error| panic!("the gvisor backend failed: {error}"));
        assert_eq!(observation.backend, "gvisor");
        self.assert_nothing_left();
        observation
    }

    /// No runsc container, no scratch folder and no sandbox cgroup survives a run.
    fn assert_nothing_left(&self) {
        assert_eq!(
            self.backend.live_containers().unwrap(),
            Vec::<String>::new(),
            "a runsc container is left"
        );
        let scratch: Vec<_> = std::fs::read_dir(self.state.path().join("scratch"))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        assert!(scratch.is_empty(), "scratch folders are left: {scratch:?}");
        // No runsc process (run, sentry, gofer) of this backend's state survives: each names
        // the state folder on its command line.
        let state = self.state.path().to_string_lossy().into_owned();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(command_line) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let command_line = String::from_utf8_lossy(&command_line).replace('\0', " ");
            assert!(
                !command_line.contains(&state),
                "a runsc process is left: {} {command_line}",
                entry.path().display()
            );
        }
        for parent in self.backend.cgroup_layout().parent_dirs() {
            let groups: Vec<_> = std::fs::read_dir(&parent)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter(|entry| entry.path().is_dir())
                        .map(|entry| entry.path())
                        .collect()
                })
                .unwrap_or_default();
            assert!(groups.is_empty(), "sandbox cgroups are left: {groups:?}");
        }
    }
}

#[test]
fn g13_gvisor_trivial_step_succeeds_with_its_json_needs_root() {
    let fixture = Fixture::new();
    let observation = fixture.run(fixture.invocation(
        "def main():\n    print('hello from gvisor')\n    return {'answer': 42, 'list': [1, 'two', None]}\n",
        json!({}),
    ));
    let result = report(&observation);
    assert_eq!(result, json!({"answer": 42, "list": [1, "two", null]}));
    assert_eq!(
        String::from_utf8_lossy(&observation.stdout),
        "hello from gvisor\n"
    );
    assert!(observation.interpreter.starts_with("3.11."));
    assert!(
        observation
            .isolation_notes
            .iter()
            .any(|note| note.starts_with("gvisor (ptrace platform")),
        "{:?}",
        observation.isolation_notes
    );
}

#[test]
fn g13_gvisor_inputs_env_and_the_folder_reach_the_step_and_changes_come_back_needs_root() {
    let fixture = Fixture::new();
    std::fs::write(fixture.work.path().join("data.txt"), "seven").unwrap();
    let mut invocation = fixture.invocation(
        r#"import os
def main(factor, word):
    with open('/work/data.txt') as handle:
        data = handle.read()
    with open('/work/out.txt', 'w') as handle:
        handle.write(word * factor)
    return {'doubled': factor * 2, 'data': data, 'environ': dict(os.environ), 'uid': os.getuid(), 'cwd': os.getcwd()}
"#,
        json!({"factor": 3, "word": "ab"}),
    );
    invocation.env = vec![EnvVar {
        name: String::from("DECLARED_VARIABLE"),
        value: zeroize::Zeroizing::new(String::from("declared-value")),
    }];
    let observation = fixture.run(invocation);
    let result = report(&observation);
    assert_eq!(result["doubled"], 6);
    assert_eq!(result["data"], "seven");
    assert_eq!(result["cwd"], "/work");
    assert_ne!(result["uid"], 0);
    let environ = result["environ"].as_object().unwrap();
    for name in environ.keys() {
        assert!(
            name == "DECLARED_VARIABLE" || name == "LC_CTYPE",
            "unexpected variable {name}: {environ:?}"
        );
    }
    assert_eq!(environ["DECLARED_VARIABLE"], "declared-value");
    let files: Vec<(String, Vec<u8>)> = observation
        .copy_back
        .files
        .iter()
        .map(|file| {
            (
                file.path.to_string(),
                file.contents().unwrap_or_default().to_vec(),
            )
        })
        .collect();
    assert_eq!(files, vec![(String::from("out.txt"), b"ababab".to_vec())]);
    // The host folder itself is never written.
    assert!(!fixture.work.path().join("out.txt").exists());
}

#[test]
fn g9_gvisor_third_party_import_is_needs_repair_before_anything_ran_needs_root() {
    let fixture = Fixture::new();
    let observation = fixture.run(fixture.invocation(
        r#"with open('/work/ran.txt', 'w') as handle:
    handle.write('the step ran')
import requests
def main():
    return requests.get('https://example.com').status_code
"#,
        json!({}),
    ));
    match &observation.outcome {
        Outcome::NeedsRepair { module, detail } => {
            assert_eq!(module, "requests");
            assert!(detail.contains("step.py:3"), "{detail}");
        }
        other => panic!("expected needs_repair, got {other:?}"),
    }
    assert!(
        observation.copy_back.files.is_empty(),
        "the step's code ran: {:?}",
        observation.copy_back.files
    );
}

#[test]
fn g6_gvisor_timeout_is_unknown_and_nothing_is_left_needs_root() {
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation(
        r#"import os, time
def main():
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
    time.sleep(600)
"#,
        json!({}),
    );
    invocation.limits.wall = Duration::from_secs(3);
    let started = Instant::now();
    let observation = fixture.run(invocation);
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::WallTimeout
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the timeout took {:?}",
        started.elapsed()
    );
}

#[test]
fn g11_gvisor_network_none_has_no_interface_but_loopback_needs_root() {
    use std::os::linux::net::SocketAddrExt;
    let fixture = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let abstract_name = format!("stepward-gvisor-test-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
    let _abstract_listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    let observation = fixture.run(fixture.invocation(
        include_str!("../probes/network_none.py"),
        json!({"port": port, "abstract_name": abstract_name}),
    ));
    let answer = report(&observation);
    assert_eq!(answer["proc_net_dev"], json!(["lo"]), "{answer}");
    if answer["if_nameindex"].is_array() {
        assert_eq!(answer["if_nameindex"], json!(["lo"]), "{answer}");
    }
    assert!(
        answer["resolve_public_name"].is_string(),
        "a name resolved: {answer}"
    );
    assert_ne!(answer["host_loopback"], "connected", "{answer}");
    assert_ne!(answer["host_abstract_socket"], "connected", "{answer}");
}

#[test]
fn g11_gvisor_public_egress_without_an_egress_configuration_is_refused_needs_root() {
    // With one, the conformance suite runs every listener test on gvisor too
    // (conformance::g11_conformance_public_egress_...).
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation("def main():\n    return 1\n", json!({}));
    invocation.network = NetworkMode::PublicEgress;
    let observation = fixture.run(invocation);
    match &observation.outcome {
        Outcome::Refused { reason } => {
            assert!(reason.contains("public_egress"), "{reason}");
            assert!(reason.contains("not configured"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // And a server asks first, before it starts a run: the answer names what to configure.
    assert_eq!(
        fixture.backend.availability(
            PythonPin {
                major: 3,
                minor: 11
            },
            NetworkMode::PublicEgress
        ),
        Err(sandbox::Unavailable::EgressNotConfigured)
    );
}

#[test]
fn g13_gvisor_missing_runsc_fails_closed() {
    let state = tempfile::tempdir().unwrap();
    let mut options = GvisorOptions::new(state.path().to_path_buf());
    options.runsc = Path::new("/nonexistent/runsc").to_path_buf();
    let error = GvisorBackend::new(options)
        .err()
        .expect("a backend without runsc");
    let text = error.to_string();
    assert!(text.contains("/nonexistent/runsc"), "{text}");
    assert!(text.contains("install runsc"), "{text}");
    let mut options = GvisorOptions::new(state.path().to_path_buf());
    options.platform = Platform::Systrap;
    if let Err(error) = GvisorBackend::new(options) {
        assert!(error.to_string().contains("systrap"), "{error}");
    }
}

#[test]
fn g13_gvisor_runs_on_systrap_where_runsc_offers_it_else_ptrace_and_records_which_needs_root() {
    let listed = std::process::Command::new("/usr/bin/runsc")
        .args(["help", "platforms"])
        .output()
        .unwrap();
    let offers_systrap = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .any(|line| line.trim() == "systrap");
    let fixture = Fixture::new();
    let observation = fixture.run(fixture.invocation("def main():\n    return 1\n", json!({})));
    let expected = if offers_systrap {
        "gvisor platform: systrap"
    } else {
        "gvisor platform: ptrace, the fallback: this runsc"
    };
    assert!(
        observation
            .isolation_notes
            .iter()
            .any(|note| note.starts_with(expected)),
        "{:?}",
        observation.isolation_notes
    );
}

#[test]
fn g10_gvisor_host_files_and_proc_sys_stay_out_of_reach_needs_root() {
    const PROC_SYS: &[&str] = &[
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/kernel/hostname",
        "/proc/sys/vm/drop_caches",
        "/proc/sys/net/ipv4/ip_forward",
        "/proc/sysrq-trigger",
    ];
    let fixture = Fixture::new();
    let repository_file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let host_paths = [
        "/etc/shadow",
        "/etc/passwd",
        "/etc/hostname",
        "/root/.bash_history",
        "/proc/1/root/etc/shadow",
        "/sys/kernel/notes",
        repository_file,
    ];
    let observation = fixture.run(fixture.invocation(
        include_str!("../probes/filesystem.py"),
        json!({ "host_paths": host_paths, "proc_sys_paths": PROC_SYS }),
    ));
    let answer = report(&observation);
    for (path, outcome) in answer["host_reads"].as_object().unwrap() {
        if path == "/etc/passwd" && outcome["ok"] == true {
            // The sandbox's own passwd (its user, root and nobody by name), never the host's.
            let host = std::fs::read_to_string("/etc/passwd").unwrap();
            let seen = outcome["data"].as_str().unwrap();
            assert_ne!(seen, host, "the host's {path} is visible: {outcome}");
            assert!(
                seen.lines()
                    .all(|line| line.starts_with("root:x:0:0:root:/nonexistent:")
                        || line.starts_with("sandbox:")
                        || line.starts_with("nobody:")),
                "the host's {path} is visible: {outcome}"
            );
            continue;
        }
        assert_eq!(outcome["ok"], false, "{path} was readable: {outcome}");
    }
    for (path, outcome) in answer["proc_sys"].as_object().unwrap() {
        assert_ne!(
            outcome["opened"], true,
            "{path} opened for writing: {outcome}"
        );
    }
    assert!(
        answer["sys_listing"].is_null() || answer["sys_listing"] == json!([]),
        "/sys shows something: {}",
        answer["sys_listing"]
    );
    for folder in ["exec_from_tmp", "exec_from_work"] {
        for what in ["binary", "script"] {
            let outcome = &answer[folder][what];
            assert_eq!(outcome["ran"], false, "{folder} {what} ran: {outcome}");
        }
    }
    // Unlike the host kernel, gVisor maps a library from a noexec folder and allows mknod in
    // its own tmpfs; both stay inside its kernel. Each run must say so in its notes.
    let noted = |what: &str| {
        observation
            .isolation_notes
            .iter()
            .any(|note| note.starts_with("noexec and nodev inside gVisor") && note.contains(what))
    };
    if answer["load_library_from_tmp"]["loaded"] == true {
        assert!(
            noted("mapped executable"),
            "{:?}",
            observation.isolation_notes
        );
    }
    if answer["made_device"] == true {
        assert!(noted("mknod"), "{:?}", observation.isolation_notes);
        // The node is gVisor's own device, and never reaches a host disk or memory device.
        for (path, outcome) in answer["dangerous_devices"].as_object().unwrap() {
            assert_eq!(outcome["ok"], false, "{path} was readable: {outcome}");
        }
    }
    for (what, outcome) in answer["runtime_writes"].as_object().unwrap() {
        assert_ne!(outcome["opened"], true, "{what} was writable: {outcome}");
        assert_ne!(outcome["created"], true, "{what} was writable: {outcome}");
    }
}

#[test]
fn g7_gvisor_pid_1_and_the_host_stay_invisible_needs_root() {
    let fixture = Fixture::new();
    let observation = fixture.run(fixture.invocation(
        include_str!("../probes/leaks.py"),
        json!({ "host_pid": std::process::id() }),
    ));
    let answer = report(&observation);
    // gVisor gives the first process a HOME from the sandbox's own /etc/passwd when the spec
    // sets none (the harness then clears it); nothing else, and no host value, is there.
    let pid1_environ = &answer["pid1_environ"];
    if pid1_environ["ok"] == true {
        let text = pid1_environ["data"].as_str().unwrap();
        let entries: Vec<&str> = text.split('\0').filter(|entry| !entry.is_empty()).collect();
        for entry in &entries {
            assert!(
                entry.starts_with("HOME=")
                    && !std::env::vars().any(|(name, value)| format!("{name}={value}") == *entry),
                "/proc/1/environ holds {entry:?}: {entries:?}"
            );
        }
    }
    assert_eq!(answer["host_pid_visible"], false, "{answer}");
    assert_eq!(answer["signal_host_pid"], "no such process", "{answer}");
    assert_eq!(answer["climbed_to"], "/");
    assert_eq!(answer["hostname"], "sandbox");
    let root_listing: Vec<&str> = answer["root_listing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry.as_str().unwrap())
        .collect();
    for host_only in ["root", "home", "boot", "var", "srv", "opt"] {
        assert!(
            !root_listing.contains(&host_only),
            "/{host_only} is visible: {root_listing:?}"
        );
    }
}

/// Capabilities, privilege changes, and ptrace and process_vm_readv aimed at the host's
/// test process (which must not exist in the sandbox) and at the sandbox's own first process.
const PTRACE_PROBE: &str = r#"
PTRACE_ATTACH = 16
def main(host_pid):
    status = {}
    with open('/proc/self/status') as handle:
        for line in handle:
            key, _, value = line.partition(':')
            status[key] = value.strip()
    attach_host = raw_syscall(101, PTRACE_ATTACH, host_pid, 0, 0)
    attach_init = raw_syscall(101, PTRACE_ATTACH, 1, 0, 0)
    buffer = ctypes.create_string_buffer(16)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buffer, ctypes.c_void_p), 16)
    remote = (ctypes.c_void_p * 2)(4096, 16)
    no_new_privs = raw_syscall(157, 39, 0, 0, 0, 0)
    read_host = raw_syscall(310, host_pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    try:
        os.setuid(0)
        setuid_root = 'succeeded'
    except OSError as error:
        setuid_root = error.errno
    return {'CapEff': status.get('CapEff'), 'CapPrm': status.get('CapPrm'),
            'CapBnd': status.get('CapBnd'), 'NoNewPrivs': no_new_privs,
            'uid': os.getuid(), 'attach_host': attach_host, 'attach_init': attach_init,
            'read_host': read_host, 'setuid_root': setuid_root}
"#;

#[test]
fn g10_gvisor_no_capabilities_and_no_ptrace_of_the_host_needs_root() {
    let fixture = Fixture::new();
    let code = format!("{SYSCALL_HELPER}\n{PTRACE_PROBE}");
    let observation =
        fixture.run(fixture.invocation(&code, json!({ "host_pid": std::process::id() })));
    let answer = report(&observation);
    for set in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(answer[set], "0000000000000000", "{set}: {answer}");
    }
    // gVisor's /proc/self/status has no NoNewPrivs line; prctl(PR_GET_NO_NEW_PRIVS) answers.
    assert_eq!(answer["NoNewPrivs"], json!([1, null]), "{answer}");
    assert_eq!(answer["uid"], 1000);
    assert_ne!(answer["setuid_root"], "succeeded", "{answer}");
    // The host's process does not exist in the sandbox: attaching to it or reading its memory
    // fails; attaching to the sandbox's own first process (itself) is refused too.
    assert_eq!(answer["attach_host"][0], -1, "{answer}");
    assert_eq!(answer["attach_init"][0], -1, "{answer}");
    assert_eq!(answer["read_host"][0], -1, "{answer}");
    assert_eq!(answer["attach_host"][1], "ESRCH", "{answer}");
    // gVisor does not implement process_vm_readv at all.
    assert!(
        ["ESRCH", "ENOSYS"].contains(&answer["read_host"][1].as_str().unwrap()),
        "{answer}"
    );
}

fn small_limits() -> Limits {
    Limits {
        memory_bytes: 128 * 1024 * 1024,
        pids: 16,
        cpu_seconds: 3,
        wall: Duration::from_secs(15),
        file_size_bytes: 4 * 1024 * 1024,
        tmp_bytes: 8 * 1024 * 1024,
        work_bytes: 16 * 1024 * 1024,
        output_bytes: 64 * 1024,
        open_files: 64,
    }
}

#[test]
fn g10_gvisor_an_output_flood_is_truncated_needs_root() {
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation(
        include_str!("../probes/output_flood.py"),
        json!({ "mib": 8 }),
    );
    invocation.limits = small_limits();
    let observation = fixture.run(invocation);
    assert!(observation.output_truncated);
    assert!(observation.stdout.len() + observation.stderr.len() <= small_limits().output_bytes);
    assert!(observation.stdout.len() + observation.stderr.len() > small_limits().output_bytes / 2);
}

#[test]
fn g10_gvisor_a_memory_bomb_is_stopped_needs_root() {
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation(
        include_str!("../probes/memory_bomb.py"),
        json!({ "ceiling_mib": 4096 }),
    );
    invocation.limits = small_limits();
    let observation = fixture.run(invocation);
    match &observation.outcome {
        Outcome::Succeeded { result_json } => {
            let answer: serde_json::Value = serde_json::from_str(result_json).unwrap();
            assert_eq!(answer["stopped_by"], "MemoryError", "{answer}");
            assert!(
                answer["allocated_mib"].as_u64().unwrap() * 1024 * 1024
                    <= small_limits().memory_bytes
            );
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
fn g10_gvisor_a_cpu_spin_is_stopped_needs_root() {
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation(include_str!("../probes/cpu_spin.py"), json!({}));
    invocation.limits = small_limits();
    let started = Instant::now();
    let observation = fixture.run(invocation);
    assert!(
        started.elapsed() < small_limits().wall + Duration::from_secs(5),
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
fn g6_gvisor_sweep_removes_what_a_crash_left_needs_root() {
    let fixture = Fixture::new();
    let leftover = fixture
        .backend
        .leave_a_running_container_for_sweep_test(
            fixture.invocation("import time\ndef main():\n    time.sleep(600)\n", json!({})),
        )
        .unwrap();
    assert_eq!(
        fixture.backend.live_containers().unwrap(),
        vec![leftover.clone()]
    );
    assert!(leftover.starts_with(sandbox::gvisor::CONTAINER_PREFIX));
    // While it runs: gVisor's file proxy is in the sandbox's user namespace, mapped by one
    // line to a non-zero host range, and runs as a non-zero host uid.
    let state = fixture.state.path().to_string_lossy().into_owned();
    let mut gofers = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(command_line) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let command_line = String::from_utf8_lossy(&command_line).replace('\0', " ");
        if !command_line.contains(&state) || !command_line.starts_with("runsc-gofer") {
            continue;
        }
        gofers += 1;
        let uid_map = std::fs::read_to_string(entry.path().join("uid_map")).unwrap();
        let lines: Vec<Vec<u64>> = uid_map
            .lines()
            .map(|line| {
                line.split_whitespace()
                    .map(|field| field.parse().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(lines.len(), 1, "{uid_map}");
        assert_eq!(lines[0][0], 0, "{uid_map}");
        assert_ne!(
            lines[0][1], 0,
            "the gofer's namespace maps to host root: {uid_map}"
        );
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap();
        let uid_line = status
            .lines()
            .find(|line| line.starts_with("Uid:"))
            .unwrap();
        assert!(
            uid_line.split_whitespace().skip(1).all(|uid| uid != "0"),
            "the gofer runs as host root: {uid_line}"
        );
    }
    assert_eq!(gofers, 1, "expected one runsc-gofer of this backend");
    let report = sandbox::gvisor::sweep(fixture.backend.options()).unwrap();
    assert_eq!(report.containers, 1, "{report:?}");
    assert_eq!(report.scratch_dirs, 1, "{report:?}");
    assert!(report.cgroups >= 1, "{report:?}");
    fixture.assert_nothing_left();
}

#[test]
fn g10_gvisor_a_fork_bomb_is_bounded_by_the_pids_limit_needs_root() {
    let fixture = Fixture::new();
    let mut invocation = fixture.invocation(
        include_str!("../probes/fork_bomb.py"),
        json!({ "ceiling": 10_000 }),
    );
    invocation.limits = small_limits();
    let observation = fixture.run(invocation);
    let answer = report(&observation);
    let children = answer["children"].as_u64().unwrap();
    assert!(
        children < u64::from(small_limits().pids),
        "{children} children with pids {}",
        small_limits().pids
    );
}

#[test]
fn g10_gvisor_tmp_and_single_files_are_bounded_needs_root() {
    let fixture = Fixture::new();
    let limits = small_limits();
    let mut invocation = fixture.invocation(
        include_str!("../probes/disk_fill.py"),
        json!({ "folder": "/tmp", "ceiling_mib": 1024, "mib_per_file": 2 }),
    );
    invocation.limits = limits.clone();
    let answer = report(&fixture.run(invocation));
    let written = answer["written_mib"].as_u64().unwrap() * 1024 * 1024;
    assert!(
        written <= limits.tmp_bytes,
        "wrote {written} bytes into /tmp: {answer}"
    );
    let mut invocation = fixture.invocation(
        include_str!("../probes/disk_fill.py"),
        json!({ "folder": "/work", "ceiling_mib": 1024, "mib_per_file": 1024 }),
    );
    invocation.limits = limits.clone();
    let observation = fixture.run(invocation);
    let answer = report(&observation);
    let written = answer["written_mib"].as_u64().unwrap() * 1024 * 1024;
    assert!(
        written <= limits.file_size_bytes,
        "wrote {written} bytes into one file: {answer}"
    );
    for file in &observation.copy_back.files {
        assert!(file.contents().unwrap_or_default().len() as u64 <= limits.file_size_bytes);
    }
}

const COPY_BACK_SECRET: &str = "sk-live-gvisor-0123456789";

/// Knows the test secret plainly and in base64, as the redactor's screen would.
struct KnowsTheSecret;

impl sandbox::copyback::SecretScreen for KnowsTheSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        // base64 of COPY_BACK_SECRET: c2stbGl2ZS1ndmlzb3ItMDEyMzQ1Njc4OQ==
        let encoded: &[u8] = b"c2stbGl2ZS1ndmlzb3ItMDEyMzQ1Njc4OQ";
        [COPY_BACK_SECRET.as_bytes(), encoded].iter().any(|needle| {
            content
                .windows(needle.len())
                .any(|window| window == *needle)
        })
    }
}

#[test]
fn g12_gvisor_links_devices_protected_paths_and_secrets_do_not_come_back_needs_root() {
    use sandbox::copyback::RefusalReason;
    let fixture = Fixture::new();
    std::fs::write(fixture.work.path().join("existing.md"), b"existing").unwrap();
    std::fs::write(fixture.work.path().join(".secrets"), b"REAL=hidden").unwrap();
    let oversize = sandbox::copyback::CopyBackPolicy::default().max_file_bytes + 1;
    let mut invocation = fixture.invocation(
        include_str!("../probes/copyback_escape.py"),
        json!({ "oversize_bytes": oversize }),
    );
    invocation.env = vec![EnvVar {
        name: String::from("PROBE_SECRET"),
        value: zeroize::Zeroizing::new(String::from(COPY_BACK_SECRET)),
    }];
    invocation.screen = Arc::new(KnowsTheSecret);
    let observation = fixture.run(invocation);
    let answer = report(&observation);
    assert_eq!(answer["saw_secrets_file"], false, "{answer}");
    assert_ne!(answer["traversal_relative"], "succeeded", "{answer}");
    assert_ne!(answer["traversal_absolute"], "succeeded", "{answer}");
    let copy_back = &observation.copy_back;
    let returned: Vec<&str> = copy_back
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(returned, ["result.csv"], "{:?}", copy_back.refusals);
    let refused = |path: &str| -> Option<&RefusalReason> {
        copy_back
            .refusals
            .iter()
            .find(|refusal| refusal.path == path)
            .map(|refusal| &refusal.reason)
    };
    for path in ["passwd-link", "root-link"] {
        assert_eq!(
            refused(path),
            Some(&RefusalReason::SymlinkOrHardlink),
            "{path}"
        );
    }
    assert!(matches!(
        refused("oversize.bin"),
        Some(RefusalReason::TooLarge { .. })
    ));
    assert!(matches!(
        refused(".secrets"),
        Some(RefusalReason::ProtectedPath { .. })
    ));
    assert_eq!(
        refused("plain-secret.txt"),
        Some(&RefusalReason::HoldsSecret)
    );
    assert_eq!(
        refused("encoded-secret.txt"),
        Some(&RefusalReason::HoldsSecret)
    );
    for path in ["hard-link.txt", "original.txt"] {
        assert_eq!(
            refused(path),
            Some(&RefusalReason::SymlinkOrHardlink),
            "{path}"
        );
    }
    if answer["setuid"] == "succeeded" {
        assert_eq!(refused("setuid-file"), Some(&RefusalReason::SetIdBits));
    }
    // gVisor's file proxy refuses to make a device node on the host's disk.
    assert_ne!(answer["device"], "succeeded", "{answer}");
    assert!(refused("a-device").is_none(), "{:?}", copy_back.refusals);
    // The host folder is untouched.
    let mut names: Vec<String> = std::fs::read_dir(fixture.work.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".secrets", "existing.md"]);
}

#[test]
fn g6_gvisor_warm_sandboxes_serve_one_invocation_each_and_get_the_folder_after_the_claim_needs_root()
 {
    let state = tempfile::tempdir().unwrap();
    let backend =
        GvisorBackend::for_tests_with(state.path(), |options| options.pool_size = 1).unwrap();
    let work = tempfile::tempdir().unwrap();
    let invocation = |code: &str| Invocation {
        live: None,
        python: PythonPin {
            major: 3,
            minor: 11,
        },
        code: code.to_owned(),
        inputs_json: String::from("{}"),
        env: Vec::new(),
        network: NetworkMode::None,
        limits: Limits::default(),
        files: workspace::StepFiles::scratch_folder(work.path().to_path_buf()),
        screen: Arc::new(NoSecrets),
    };
    // The harness reports the process's age: a warm sandbox's interpreter started before the
    // request; a used one is never handed out again (the marker in /tmp would show).
    let code = "import os, time\ndef main():\n    reused = os.path.exists('/tmp/used')\n    open('/tmp/used', 'w').write('x')\n    with open('/proc/self/stat') as handle:\n        start = int(handle.read().rsplit(')', 1)[1].split()[19])\n    with open('/proc/uptime') as handle:\n        uptime = float(handle.read().split()[0])\n    return {'reused': reused, 'folder': sorted(os.listdir('/work')), 'age': uptime - start / os.sysconf('SC_CLK_TCK')}\n";
    let first = backend.run(invocation(code)).unwrap();
    let Outcome::Succeeded { result_json } = &first.outcome else {
        panic!("{:?}", first.outcome);
    };
    let first: serde_json::Value = serde_json::from_str(result_json).unwrap();
    assert_eq!(first["reused"], false);
    let started = Instant::now();
    while backend.idle_sandboxes() != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the pool never filled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(
        work.path().join("late.txt"),
        "written after the pool filled",
    )
    .unwrap();
    let second = backend.run(invocation(code)).unwrap();
    let Outcome::Succeeded { result_json } = &second.outcome else {
        panic!("{:?}", second.outcome);
    };
    let second: serde_json::Value = serde_json::from_str(result_json).unwrap();
    assert_eq!(
        second["reused"], false,
        "a sandbox served a second invocation"
    );
    assert_eq!(second["folder"], json!(["late.txt"]), "{second}");
    assert!(
        second["age"].as_f64().unwrap() >= 0.45,
        "not a warm sandbox: {second}"
    );
    drop(backend);
}

/// When some printed bytes were told, and which.
type Told = (Instant, Vec<u8>);

/// The run page's live view (issue 38) on gVisor too: what a step prints reaches
/// [`Invocation::live`] while the step still runs, not only at its end.
#[test]
fn gvisor_a_steps_printed_output_is_told_as_it_prints_needs_root() {
    let fixture = Fixture::new();
    let seen: Arc<std::sync::Mutex<Vec<Told>>> = Arc::default();
    let mut invocation = fixture.invocation(
        "import sys, time\n\ndef main():\n    print('first line', flush=True)\n    \
         time.sleep(1.5)\n    print('second line', flush=True)\n    return 1\n",
        json!({}),
    );
    let sink = Arc::clone(&seen);
    invocation.live = Some(Arc::new(move |_stream, bytes: &[u8]| {
        sink.lock().unwrap().push((Instant::now(), bytes.to_vec()));
    }));
    let observation = fixture.run(invocation);
    let ended = Instant::now();
    assert!(matches!(observation.outcome, Outcome::Succeeded { .. }));
    let seen = seen.lock().unwrap();
    let first = seen
        .iter()
        .find(|(_, bytes)| String::from_utf8_lossy(bytes).contains("first line"))
        .unwrap_or_else(|| panic!("the first line was never told: {seen:?}"));
    assert!(
        ended.duration_since(first.0) >= Duration::from_millis(1000),
        "the first line was told only at the end"
    );
    let all: Vec<u8> = seen.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
    assert!(String::from_utf8_lossy(&all).contains("second line"));
}
