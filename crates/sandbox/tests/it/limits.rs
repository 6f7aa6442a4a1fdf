//! Declared limits (issue 13, part 3) reach a warm sandbox when it is claimed: the pool is
//! never split by limits; the cgroup values and the rlimits of the waiting interpreter are set
//! from outside, and `/work` is resized, before the folder's copy, the code and the inputs go
//! in. Each test proves the sandbox it got was warm (its interpreter started before the
//! request) and that the declared value, not the prepared default, is in force.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::local::LocalBackend;
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin, UnknownReason};

use crate::hostile::support::NoSecrets;

/// How long the test waits, once a warm sandbox is idle, before it claims it: a sandbox whose
/// interpreter is older than this was built before the request.
const AGE_BEFORE_CLAIM: Duration = Duration::from_millis(400);

const REPORT: &str = r#"
import os, resource, time
def _age():
    with open("/proc/self/stat") as handle:
        start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
    # The time since boot, as /proc/uptime gives it (a sandbox's /proc lists its processes only).
    uptime = time.clock_gettime(time.CLOCK_BOOTTIME)
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
def _nice():
    with open("/proc/self/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[16])
def main():
    work = os.statvfs("/work")
    return {
        "age": _age(),
        "nice": _nice(),
        "as": resource.getrlimit(resource.RLIMIT_AS)[1],
        "data": resource.getrlimit(resource.RLIMIT_DATA)[1],
        "cpu": resource.getrlimit(resource.RLIMIT_CPU)[1],
        "work_bytes": work.f_blocks * work.f_frsize,
    }
"#;

struct Warm {
    backend: LocalBackend,
    work: tempfile::TempDir,
    _state: tempfile::TempDir,
}

impl Warm {
    /// A backend with a pool of one, filled by a first request with the default limits.
    fn new() -> Warm {
        let state = tempfile::tempdir().unwrap();
        let backend = LocalBackend::for_tests_with(
            state.path(),
            Path::new(env!("CARGO_BIN_EXE_sandbox-jail")),
            |options| options.pool_size = 1,
        )
        .unwrap();
        let warm = Warm {
            backend,
            work: tempfile::tempdir().unwrap(),
            _state: state,
        };
        let first = warm
            .backend
            .run(warm.invocation("def main():\n    return 1\n", Limits::default()))
            .unwrap();
        assert!(matches!(first.outcome, Outcome::Succeeded { .. }));
        warm.wait_for_idle();
        warm
    }

    fn wait_for_idle(&self) {
        let started = Instant::now();
        while self.backend.idle_sandboxes() != 1 {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the pool never filled"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(AGE_BEFORE_CLAIM);
    }

    fn invocation(&self, code: &str, limits: Limits) -> Invocation {
        Invocation {
            live: None,
            python: PythonPin {
                major: 3,
                minor: 11,
            },
            code: code.to_owned(),
            inputs_json: String::from("{}"),
            env: Vec::new(),
            network: NetworkMode::None,
            limits,
            files: workspace::StepFiles::scratch_folder(self.work.path().to_path_buf()),
            screen: Arc::new(NoSecrets),
        }
    }

    /// Runs `code` under `limits` in the warm sandbox, checking it was claimed from the pool.
    fn claim(&self, code: &str, limits: Limits) -> sandbox::Observation {
        assert_eq!(self.backend.idle_sandboxes(), 1, "no warm sandbox to claim");
        self.backend.run(self.invocation(code, limits)).unwrap()
    }
}

fn result(observation: &sandbox::Observation) -> serde_json::Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "the step did not succeed: {other:?}\n{}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

const MIB: u64 = 1024 * 1024;

#[test]
fn g10_declared_limits_reach_a_warm_sandbox_at_claim_needs_root() {
    let warm = Warm::new();
    let declared = Limits {
        memory_bytes: 96 * MIB,
        cpu_seconds: 7,
        work_bytes: 8 * MIB,
        ..Limits::default()
    };
    let answer = result(&warm.claim(REPORT, declared));
    assert!(
        answer["age"].as_f64().unwrap() >= AGE_BEFORE_CLAIM.as_secs_f64() * 0.9,
        "the sandbox was not a warm one: {answer}"
    );
    // The address space and data limits follow the memory limit with room for thread stacks
    // (4 GiB); the cgroup holds the memory itself (the test below).
    assert_eq!(answer["data"], 96 * MIB + 4096 * MIB, "{answer}");
    assert_eq!(answer["as"], 96 * MIB + 4096 * MIB, "{answer}");
    assert_eq!(answer["cpu"], 7, "{answer}");
    assert_eq!(answer["work_bytes"], 8 * MIB, "{answer}");

    // The pool is not split: the next sandbox of the class, under the defaults, is warm too
    // and carries the defaults again.
    warm.wait_for_idle();
    let answer = result(&warm.claim(REPORT, Limits::default()));
    assert!(answer["age"].as_f64().unwrap() >= AGE_BEFORE_CLAIM.as_secs_f64() * 0.9);
    assert_eq!(
        answer["data"],
        Limits::default().memory_bytes + 4096 * MIB,
        "{answer}"
    );
    assert_eq!(answer["cpu"], Limits::default().cpu_seconds, "{answer}");
    assert_eq!(
        answer["work_bytes"],
        Limits::default().work_bytes,
        "{answer}"
    );
}

#[test]
fn g10_a_warm_sandbox_runs_the_step_at_a_cold_steps_priority_needs_root() {
    // Refills build warm sandboxes at nice 19 so that they take only idle CPU; the claim must
    // give the step the priority a cold step runs at, or a warm step would run slowed.
    let warm = Warm::new();
    let answer = result(&warm.claim(REPORT, Limits::default()));
    assert!(
        answer["age"].as_f64().unwrap() >= AGE_BEFORE_CLAIM.as_secs_f64() * 0.9,
        "the sandbox was not a warm one: {answer}"
    );
    assert_eq!(answer["nice"], 0, "{answer}");
}

#[test]
fn g10_a_declared_memory_limit_is_the_cgroups_in_a_warm_sandbox_needs_root() {
    let warm = Warm::new();
    // Pages of /dev/shm count against the cgroup, not against RLIMIT_DATA: only the cgroup's
    // memory limit (48 MiB, declared; the default is 256 MiB) can stop this.
    // Files of 8 MiB each stay under RLIMIT_FSIZE.
    let code = "def main():\n    for part in range(8):\n        with open('/dev/shm/fill-%d' % part, 'wb') as handle:\n            for _ in range(8):\n                handle.write(b'x' * (1024 * 1024))\n    return 'not stopped'\n";
    let observation = warm.claim(
        code,
        Limits {
            memory_bytes: 48 * MIB,
            ..Limits::default()
        },
    );
    assert!(
        matches!(
            observation.outcome,
            Outcome::Unknown {
                reason: UnknownReason::MemoryLimit
            }
        ),
        "{:?}",
        observation.outcome
    );
}

#[test]
fn g10_declared_time_and_output_limits_stop_a_warm_sandbox_needs_root() {
    let warm = Warm::new();
    let spin = "def main():\n    while True:\n        pass\n";
    let observation = warm.claim(
        spin,
        Limits {
            cpu_seconds: 1,
            ..Limits::default()
        },
    );
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::CpuLimit
        }
    );
    warm.wait_for_idle();
    let started = Instant::now();
    let observation = warm.claim(
        "import time\ndef main():\n    time.sleep(30)\n",
        Limits {
            wall: Duration::from_secs(1),
            ..Limits::default()
        },
    );
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::WallTimeout
        }
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    warm.wait_for_idle();
    let observation = warm.claim(
        "def main():\n    print('x' * 10000)\n    return 1\n",
        Limits {
            output_bytes: 4096,
            ..Limits::default()
        },
    );
    assert!(observation.output_truncated);
    assert!(observation.stdout.len() <= 4096);
}

/// The largest limits the operator allows by default (`spec::LimitMaxima::BUILT_IN`): memory
/// 2048 MiB, CPU 3600 s, `/work` 1024 MiB, output 16 MiB.
fn maxima() -> Limits {
    Limits {
        memory_bytes: 2048 * MIB,
        cpu_seconds: 3600,
        work_bytes: 1024 * MIB,
        output_bytes: 16 * 1024 * 1024,
        ..Limits::default()
    }
}

/// Uses more of each limit than the default allows: memory (a 1 GiB buffer, touched), `/work`
/// (200 MiB written, in files under the 16 MiB file-size limit), printed output (2 MiB);
/// reports the limits in force.
const USES_RAISED_LIMITS: &str = r#"
import resource, sys
def main():
    buffer = bytearray(1024 * 1024 * 1024)
    for offset in range(0, len(buffer), 4096):
        buffer[offset] = 1
    for part in range(25):
        with open("/work/big-%d.bin" % part, "wb") as handle:
            for _ in range(8):
                handle.write(b"w" * (1024 * 1024))
    sys.stdout.write("o" * (2 * 1024 * 1024))
    return {
        "as": resource.getrlimit(resource.RLIMIT_AS),
        "data": resource.getrlimit(resource.RLIMIT_DATA),
        "cpu": resource.getrlimit(resource.RLIMIT_CPU),
        "touched_mib": len(buffer) >> 20,
    }
"#;

fn assert_raised_limits_in_force(observation: &sandbox::Observation, how: &str) {
    let answer = result(observation);
    let maxima = maxima();
    assert_eq!(answer["touched_mib"], 1024, "{how}: {answer}");
    // Soft and hard alike: the step cannot raise its own limit past what it declared.
    assert_eq!(
        answer["cpu"],
        serde_json::json!([3600, 3600]),
        "{how}: {answer}"
    );
    let address_space = &answer["as"];
    assert_eq!(address_space[0], address_space[1], "{how}: {answer}");
    assert!(
        address_space[1].as_u64().unwrap() >= maxima.memory_bytes,
        "{how}: {answer}"
    );
    assert!(
        observation.stdout.len() >= 2 * 1024 * 1024,
        "{how}: the raised output limit kept {} bytes",
        observation.stdout.len()
    );
}

/// newcomer 3, workload 2: a step that declares more than the default (memory 512 MiB, up to
/// the maximum) was refused when it claimed a prepared sandbox ("prlimit ... Operation not
/// permitted": raising a hard limit needs CAP_SYS_RESOURCE, which this host's root lacks).
#[test]
fn g10_every_limit_raised_to_its_maximum_reaches_a_warm_sandbox_and_is_used_needs_root() {
    let warm = Warm::new();
    let observation = warm.claim(USES_RAISED_LIMITS, maxima());
    assert_raised_limits_in_force(&observation, "warm");
}

#[test]
fn g10_every_limit_raised_to_its_maximum_reaches_a_cold_sandbox_and_is_used_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let backend =
        LocalBackend::for_tests(state.path(), Path::new(env!("CARGO_BIN_EXE_sandbox-jail")))
            .unwrap();
    let work = tempfile::tempdir().unwrap();
    let observation = backend
        .run(Invocation {
            live: None,
            python: PythonPin {
                major: 3,
                minor: 11,
            },
            code: USES_RAISED_LIMITS.to_owned(),
            inputs_json: String::from("{}"),
            env: Vec::new(),
            network: NetworkMode::None,
            limits: maxima(),
            files: workspace::StepFiles::scratch_folder(work.path().to_path_buf()),
            screen: Arc::new(NoSecrets),
        })
        .unwrap();
    assert_raised_limits_in_force(&observation, "cold");
}

/// Starts 256 threads and runs 64 workers of a thread pool under the default limits.
const MANY_THREADS: &str = r#"
import threading
from concurrent.futures import ThreadPoolExecutor
def main():
    gate = threading.Event()
    threads = [threading.Thread(target=gate.wait) for _ in range(256)]
    for thread in threads:
        thread.start()
    alive = threading.active_count()
    gate.set()
    for thread in threads:
        thread.join()
    with ThreadPoolExecutor(max_workers=64) as pool:
        squares = sum(pool.map(lambda n: n * n, range(640)))
    return {"alive": alive, "squares": squares}
"#;

/// newcomer 3, workload 3: a default step could start about 30 threads (RLIMIT_DATA counted
/// every thread's stack against the memory limit); 256 must start, in a warm and a cold sandbox.
#[test]
fn g10_a_default_step_starts_256_threads_warm_and_cold_needs_root() {
    let warm = Warm::new();
    let answer = result(&warm.claim(MANY_THREADS, Limits::default()));
    assert_eq!(answer["alive"], 257, "warm: {answer}");
    assert_eq!(answer["squares"], (0..640u64).map(|n| n * n).sum::<u64>());
    let cold = result(
        &warm
            .backend
            .run(warm.invocation(MANY_THREADS, Limits::default()))
            .unwrap(),
    );
    assert_eq!(cold["alive"], 257, "cold: {cold}");
    assert!(
        Limits::default().pids >= 300,
        "the default task limit is {}",
        Limits::default().pids
    );
}
