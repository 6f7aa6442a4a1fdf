//! Lifecycle (G6): a process that tries to outlive its step is dead when the run returns, a
//! sandbox dies with the platform that started it, and a sandbox that served one step is
//! never used for another.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

/// Host pids whose command line holds `token`.
fn host_processes_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && cmdline
                .split(|byte| *byte == 0)
                .any(|argument| argument == token.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn g6_a_daemonised_child_is_dead_after_the_run_needs_root() {
    // The scan must be able to find a live process: this test's own command line.
    let own_argument = std::env::args().next().unwrap();
    assert!(host_processes_with(&own_argument).contains(&std::process::id()));

    let token = format!("stepward-daemon-token-{}", std::process::id());
    let observation = Probe::new(
        include_str!("../../probes/daemon.py"),
        json!({ "token": token }),
    )
    .run(Filter::Enforced);
    let answer = report(&observation);
    assert!(answer["daemon_pid"].as_u64().unwrap() > 0);
    let survivors = host_processes_with(&token);
    assert!(
        survivors.is_empty(),
        "processes outlived the step: {survivors:?}"
    );
}

#[test]
fn g6_a_used_sandbox_is_never_reused_needs_root() {
    let probe = include_str!("../../probes/reuse.py");
    let holder = tempfile::tempdir().unwrap();
    let first = report(
        &Probe::new(probe, json!({ "mark": "first-mark" }))
            .work_dir(holder.path().to_path_buf())
            .run(Filter::Enforced),
    );
    let second = report(
        &Probe::new(probe, json!({ "mark": "second-mark" }))
            .work_dir(holder.path().to_path_buf())
            .run(Filter::Enforced),
    );
    assert_eq!(first["found"]["tmp"], json!([]), "{first}");
    assert_eq!(second["found"]["tmp"], json!([]), "{second}");
    assert_eq!(second["found"]["work"], json!([]), "{second}");
}

/// Set in the environment of the "platform" process that the platform-death test starts (the
/// same test binary, running the same test): the token its sleeping step carries.
const PLATFORM_ROLE_TOKEN: &str = "STEPWARD_HOSTILE_PLATFORM_TOKEN";
/// The state folder the "platform" process uses, so the test can sweep after killing it.
const PLATFORM_ROLE_STATE: &str = "STEPWARD_HOSTILE_PLATFORM_STATE";

/// The file in the platform's state folder naming its cgroup parent.
const CGROUP_PARENT_FILE: &str = "cgroup-parent-for-the-test-sweep";

const PLATFORM_DEATH_TEST: &str =
    "hostile::lifecycle::g6_the_sandbox_dies_with_the_platform_killed_mid_step_needs_root";

/// Waits up to `limit` for `condition`, checking every 50 ms.
fn wait_for(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}

#[test]
fn g6_the_sandbox_dies_with_the_platform_killed_mid_step_needs_root() {
    if let Ok(token) = std::env::var(PLATFORM_ROLE_TOKEN) {
        // The platform's role: run a step that sleeps until this process is killed.
        let state = std::path::PathBuf::from(std::env::var(PLATFORM_ROLE_STATE).unwrap());
        let helper = std::path::Path::new(env!("CARGO_BIN_EXE_sandbox-jail"));
        let backend = sandbox::local::LocalBackend::for_tests(&state, helper).unwrap();
        // Tells the test which cgroup parent to sweep once this process is killed.
        let parent = &backend.options().cgroups.parent;
        std::fs::write(state.join(CGROUP_PARENT_FILE), parent).unwrap();
        // The step's folder inside the state folder, which the test removes: this process
        // is killed, so nothing it holds is ever dropped.
        let work = state.join("platform-role-work");
        std::fs::create_dir_all(&work).unwrap();
        let mut probe = Probe::new(
            include_str!("../../probes/sleeper.py"),
            json!({ "token": token }),
        )
        .work_dir(work);
        let invocation = probe.invocation_for_platform_role();
        let _ = sandbox::Isolation::run(&backend, invocation);
        return;
    }

    let token = format!("stepward-platform-death-{}", std::process::id());
    let state = tempfile::tempdir().unwrap();
    let mut platform = Command::new(std::env::current_exe().unwrap())
        .args([
            PLATFORM_DEATH_TEST,
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PLATFORM_ROLE_TOKEN, &token)
        .env(PLATFORM_ROLE_STATE, state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let platform_pid = platform.id();

    // The control: the step really is running in a sandbox before the platform dies.
    let running = wait_for(Duration::from_secs(20), || {
        !host_processes_with(&token).is_empty()
    });
    // SIGKILL: the platform gets no chance to clean up; only the sandbox's own lifeline can.
    let _ = platform.kill();
    let _ = platform.wait();
    let gone = wait_for(Duration::from_secs(10), || {
        host_processes_with(&token).is_empty()
    });

    // Remove what the killed platform left (its cgroups, scratch, slot locks), as the
    // platform's start-up sweep would, whatever the assertions below say.
    let mut options = sandbox::local::LocalOptions::new(
        state.path().to_path_buf(),
        (
            std::path::PathBuf::from(env!("CARGO_BIN_EXE_sandbox-jail")),
            Vec::new(),
        ),
    );
    options.slots = 64;
    let parent = std::fs::read_to_string(state.path().join(CGROUP_PARENT_FILE)).ok();
    let swept = parent.as_ref().map(|parent| {
        options.cgroups.parent = parent.clone();
        let swept = sandbox::local::sweep(&options);
        if let Ok(layout) = sandbox::cgroup::CgroupLayout::detect(&options.cgroups) {
            layout.remove_parents();
        }
        swept
    });

    assert!(running, "the step never started in the platform process");
    assert!(
        gone,
        "the sandbox outlived its platform: {:?}",
        host_processes_with(&token)
    );
    let parent = parent.expect("the platform never named its cgroup parent");
    assert!(
        parent.starts_with(&format!("stepward-test-{platform_pid}-")),
        "{parent}"
    );
    swept.unwrap().unwrap();
}
