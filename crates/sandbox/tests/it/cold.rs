//! What a cold sandbox may have ready before its request (issue 13): the spare jail helper
//! holds no namespace of any kind until a request takes it, and a sandbox built ahead of an
//! announced request serves exactly that request. Real sandboxes, so root (CI is root).

// Test helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::local::LocalBackend;
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};

struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

fn backend(state: &Path) -> LocalBackend {
    LocalBackend::for_tests(state, Path::new(env!("CARGO_BIN_EXE_sandbox-jail"))).unwrap()
}

fn pin(backend: &LocalBackend) -> PythonPin {
    backend.runtimes().list().first().unwrap().pin
}

fn invocation(backend: &LocalBackend, work: &Path) -> Invocation {
    Invocation {
        live: None,
        python: pin(backend),
        code: String::from(
            "import socket\n\
             def main():\n    \
                 with socket.socket() as server:\n        \
                     server.bind(('127.0.0.1', 0))\n        \
                     server.listen()\n        \
                     with socket.create_connection(server.getsockname()):\n            \
                         return {'loopback': True}\n",
        ),
        inputs_json: String::from("{}"),
        env: Vec::new(),
        network: NetworkMode::None,
        limits: Limits::default(),
        files: workspace::StepFiles::scratch_folder(work.to_path_buf()),
        screen: Arc::new(NoSecrets),
    }
}

fn succeeded(observation: &sandbox::Observation) -> serde_json::Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "expected success, got {other:?}\nstderr: {}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

fn namespace(pid: &str, kind: &str) -> std::path::PathBuf {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).unwrap()
}

/// A spare helper waiting for its request is in every namespace of the platform: it made
/// none ahead of time (the network namespace of a `none` sandbox is made once the request has
/// taken the spare), and a request it then serves gets a fresh network namespace with a
/// working loopback.
#[test]
fn g6_a_spare_helper_holds_no_namespace_before_its_request_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend = backend(state.path());
    // The first request spawns its own helper and, off its path, the first spare.
    let observation = backend.run(invocation(&backend, work.path())).unwrap();
    assert_eq!(succeeded(&observation)["loopback"], true);
    let started = Instant::now();
    let spare = loop {
        if let Some(pid) = backend.spare_helper_pid() {
            break pid.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no spare helper appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    // Blocked reading the control pipe (fd 4): it has done everything it does before a
    // request.
    let started = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{spare}/syscall"))
        .unwrap()
        .starts_with("0 0x4 ")
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the spare helper never waited on its control pipe"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for kind in ["net", "mnt", "pid", "user", "ipc", "uts", "cgroup"] {
        assert_eq!(
            namespace(&spare, kind),
            namespace("self", kind),
            "the waiting spare helper already has a {kind} namespace of its own"
        );
    }
    let observation = backend.run(invocation(&backend, work.path())).unwrap();
    assert_eq!(succeeded(&observation)["loopback"], true);
}

/// A sandbox built ahead of an announced request (the CLI's first code step) is the one that
/// request gets: a request arriving while it is still being built waits for it rather than
/// building a second one beside it, and nothing is built again afterwards.
#[test]
fn g6_a_sandbox_built_ahead_serves_its_request_alone_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend = backend(state.path());
    backend.prepare_ahead(pin(&backend), NetworkMode::None);
    // At once: the sandbox built ahead is not ready yet.
    let observation = backend.run(invocation(&backend, work.path())).unwrap();
    assert_eq!(succeeded(&observation)["loopback"], true);
    // Had the request built its own, the one built ahead would turn up idle now.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        backend.idle_sandboxes(),
        0,
        "a sandbox built ahead was left unused"
    );
    // Announced and left to finish: it waits, ready, and the request claims it.
    backend.prepare_ahead(pin(&backend), NetworkMode::None);
    let started = Instant::now();
    while backend.idle_sandboxes() != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the sandbox built ahead never got ready"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let observation = backend.run(invocation(&backend, work.path())).unwrap();
    assert_eq!(succeeded(&observation)["loopback"], true);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        backend.idle_sandboxes(),
        0,
        "a sandbox was built again after the claim"
    );
}

/// `stepward run` starts its first sandbox's helper before the backend exists
/// ([`sandbox::local::EarlyHelper`]) and builds that sandbox up to its plan on its own thread:
/// the sandbox serves the request, with its own working loopback, and nothing is left idle.
/// A helper started for another network mode is ended unused, and the sandbox is built all
/// the same.
#[test]
fn g6_a_sandbox_built_ahead_with_an_early_helper_serves_its_request_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend = backend(state.path());
    for early_network in [NetworkMode::None, NetworkMode::PublicEgress] {
        let early = sandbox::local::EarlyHelper::start(backend.options(), early_network).unwrap();
        backend.prepare_ahead_with(pin(&backend), NetworkMode::None, early);
        let started = Instant::now();
        while backend.idle_sandboxes() != 1 {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the sandbox built ahead never got ready ({early_network:?} helper)"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let observation = backend.run(invocation(&backend, work.path())).unwrap();
        assert_eq!(succeeded(&observation)["loopback"], true);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(backend.idle_sandboxes(), 0, "{early_network:?} helper");
    }
}

/// The CPUs the calling thread may run on (`Cpus_allowed_list`, e.g. `0-1,4`).
fn own_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let list = status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split(',')
        .flat_map(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap()
        })
        .collect()
}

/// A woken helper makes a `none` sandbox's network namespace on another CPU than the
/// platform's thread, which goes on making the sandbox meanwhile; the sandbox it then starts
/// may run on every CPU the platform may: a helper it spawned itself (the first request) and
/// the spare (the second) alike.
#[test]
fn a_cold_sandbox_may_run_on_every_cpu_the_platform_may_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend = backend(state.path());
    let cpus = own_cpus();
    if cpus.len() < 2 {
        eprintln!("one CPU allowed: no other CPU to wake the helper on, nothing to check");
        return;
    }
    for request in ["first (its own helper)", "second (the spare)"] {
        let observation = backend
            .run(Invocation {
                live: None,
                code: String::from(
                    "import os\ndef main():\n    return {'cpus': sorted(os.sched_getaffinity(0))}\n",
                ),
                ..invocation(&backend, work.path())
            })
            .unwrap();
        assert_eq!(
            succeeded(&observation)["cpus"],
            serde_json::json!(cpus),
            "the {request} request's sandbox"
        );
        // The second request takes the spare once it waits.
        let started = Instant::now();
        while backend.spare_helper_pid().is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no spare helper appeared"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether `dir` is a mount point of its own, and on a tmpfs.
fn tmpfs_mount_point(dir: &Path) -> (bool, bool) {
    use std::os::unix::fs::MetadataExt;
    let own = std::fs::metadata(dir).unwrap().dev();
    let parent = std::fs::metadata(dir.parent().unwrap()).unwrap().dev();
    let tmpfs = rustix::fs::statfs(dir).unwrap().f_type == libc::TMPFS_MAGIC;
    (own != parent, tmpfs)
}

/// A tmpfs this test mounted, unmounted however the test ends.
struct TestMount(std::path::PathBuf);

impl Drop for TestMount {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.0, rustix::mount::UnmountFlags::DETACH);
    }
}

/// Issue 13: each sandbox makes and removes its scratch folder on a tmpfs the backend mounted
/// (a journalled mkdir and rmdir on the data directory's filesystem cost several times the
/// whole folder's work on a tmpfs), which goes with the backend, and which the start-up sweep
/// unmounts when a killed platform left it behind.
#[test]
fn g6_scratch_folders_live_on_a_tmpfs_that_goes_with_the_backend_needs_root() {
    // Under the target folder, not /tmp, which is itself a tmpfs on many hosts.
    let state = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let scratch = state.path().join("scratch");
    let work = tempfile::tempdir().unwrap();
    let state_on_tmpfs = rustix::fs::statfs(state.path()).unwrap().f_type == libc::TMPFS_MAGIC;
    let backend = backend(state.path());
    // Where the state folder already is on a tmpfs, nothing is mounted over it.
    assert_eq!(tmpfs_mount_point(&scratch), (!state_on_tmpfs, true));
    succeeded(&backend.run(invocation(&backend, work.path())).unwrap());
    drop(backend);
    assert_eq!(tmpfs_mount_point(&scratch), (false, state_on_tmpfs));
    if state_on_tmpfs {
        return;
    }
    let mount_tmpfs = |source: &str| {
        rustix::mount::mount(
            source,
            &scratch,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .unwrap();
    };
    // What a killed platform leaves: the tmpfs, with a folder in it.
    mount_tmpfs(sandbox::local::SCRATCH_TMPFS_SOURCE);
    let _left = TestMount(scratch.clone());
    std::fs::create_dir(scratch.join("sb-0-1")).unwrap();
    let mut options = sandbox::local::LocalOptions::new(
        state.path().to_path_buf(),
        (
            std::path::PathBuf::from(env!("CARGO_BIN_EXE_sandbox-jail")),
            Vec::new(),
        ),
    );
    // A cgroup parent of this test's own, removed again: the sweep looks at its groups too.
    options.cgroups.parent = format!("stepward-test-{}-scratch-sweep", std::process::id());
    options.slots = 64;
    let sweep = || {
        let report = sandbox::local::sweep(&options);
        if let Ok(layout) = sandbox::cgroup::CgroupLayout::detect(&options.cgroups) {
            layout.remove_parents();
        }
        report.unwrap()
    };
    assert_eq!(sweep().scratch_dirs, 1);
    assert_eq!(tmpfs_mount_point(&scratch), (false, false));
    // A tmpfs someone else mounted there is emptied like the folder, but stays mounted.
    mount_tmpfs("tmpfs");
    assert_eq!(sweep().scratch_dirs, 0);
    assert_eq!(tmpfs_mount_point(&scratch), (true, true));
}
