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
            python: PythonPin {
                major: 3,
                minor: 11,
            },
            code: code.to_owned(),
            inputs_json: String::from("{}"),
            env: Vec::new(),
            network: NetworkMode::None,
            limits,
            work_dir: self.work.path().to_path_buf(),
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
    assert_eq!(answer["data"], 96 * MIB, "{answer}");
    assert_eq!(answer["as"], 96 * MIB + 1024 * MIB, "{answer}");
    assert_eq!(answer["cpu"], 7, "{answer}");
    assert_eq!(answer["work_bytes"], 8 * MIB, "{answer}");

    // The pool is not split: the next sandbox of the class, under the defaults, is warm too
    // and carries the defaults again.
    warm.wait_for_idle();
    let answer = result(&warm.claim(REPORT, Limits::default()));
    assert!(answer["age"].as_f64().unwrap() >= AGE_BEFORE_CLAIM.as_secs_f64() * 0.9);
    assert_eq!(answer["data"], Limits::default().memory_bytes, "{answer}");
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
