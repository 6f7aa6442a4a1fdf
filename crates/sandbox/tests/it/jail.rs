//! Tests of the local backend and its jail: a fresh sandbox per invocation (G6), what it holds
//! (G7), pinned interpreters (G8), imports checked before anything runs (G9), isolation and
//! limits (G10). They build real sandboxes, so they need root (CI is root).

// Test helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::local::LocalBackend;
use sandbox::{
    EnvVar, Invocation, Isolation, Limits, NetworkMode, Observation, Outcome, PythonPin,
    UnknownReason,
};

/// A screen that knows no secret.
struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

struct Fixture {
    backend: LocalBackend,
    work: tempfile::TempDir,
    _state: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let state = tempfile::tempdir().unwrap();
    let backend =
        LocalBackend::for_tests(state.path(), Path::new(env!("CARGO_BIN_EXE_sandbox-jail")))
            .unwrap();
    Fixture {
        backend,
        work: tempfile::tempdir().unwrap(),
        _state: state,
    }
}

fn system_pin(backend: &LocalBackend) -> PythonPin {
    backend
        .runtimes()
        .list()
        .first()
        .expect("this host has a Python 3 interpreter")
        .pin
}

fn invocation(fixture: &Fixture, code: &str, inputs_json: &str) -> Invocation {
    Invocation {
        live: None,
        python: system_pin(&fixture.backend),
        code: code.to_string(),
        inputs_json: inputs_json.to_string(),
        env: Vec::new(),
        network: NetworkMode::None,
        limits: Limits::default(),
        files: workspace::StepFiles::scratch_folder(fixture.work.path().to_path_buf()),
        screen: Arc::new(NoSecrets),
    }
}

fn run(fixture: &Fixture, invocation: Invocation) -> Observation {
    let observation = fixture.backend.run(invocation).unwrap();
    assert_nothing_left(fixture);
    observation
}

/// How long the backend's reaper may take to remove a finished sandbox's groups and scratch
/// folder (it runs off the request's path, so a check right after `run` must wait for it).
const TEARDOWN_WAIT: Duration = Duration::from_secs(10);

fn leftover_groups_and_scratch(fixture: &Fixture) -> usize {
    let groups: usize = fixture
        .backend
        .cgroup_layout()
        .parent_dirs()
        .iter()
        .map(|parent| {
            std::fs::read_dir(parent)
                .unwrap()
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .count()
        })
        .sum();
    let scratch = fixture.backend.options().state_dir.join("scratch");
    groups + std::fs::read_dir(&scratch).unwrap().count()
}

/// After every run: no sandbox cgroup and no scratch folder remains, once the reaper (bounded
/// by [`TEARDOWN_WAIT`]) is done.
fn assert_nothing_left(fixture: &Fixture) {
    let started = Instant::now();
    while leftover_groups_and_scratch(fixture) != 0 && started.elapsed() < TEARDOWN_WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    for parent in fixture.backend.cgroup_layout().parent_dirs() {
        let leftovers: Vec<PathBuf> = std::fs::read_dir(&parent)
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect();
        assert!(
            leftovers.is_empty(),
            "cgroups left under {}: {leftovers:?}",
            parent.display()
        );
    }
    let scratch = fixture.backend.options().state_dir.join("scratch");
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert!(leftovers.is_empty(), "scratch folders left: {leftovers:?}");
}

fn result_of(observation: &Observation) -> serde_json::Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "expected success, got {other:?}\nstdout: {}\nstderr: {}\nnotes: {:?}",
            String::from_utf8_lossy(&observation.stdout),
            String::from_utf8_lossy(&observation.stderr),
            observation.isolation_notes
        ),
    }
}

#[test]
fn g6_trivial_step_succeeds_and_returns_its_json_needs_root() {
    let fixture = fixture();
    let observation = run(
        &fixture,
        invocation(
            &fixture,
            "def main():\n    return {'answer': 42, 'list': [1, 'two']}\n",
            "{}",
        ),
    );
    assert_eq!(
        result_of(&observation),
        serde_json::json!({"answer": 42, "list": [1, "two"]})
    );
    assert_eq!(observation.backend, "local");
}

#[test]
fn g10_cpu_limit_is_unknown_cpu_limit_needs_root() {
    let fixture = fixture();
    let mut spin = invocation(
        &fixture,
        "def main():\n    while True:\n        pass\n",
        "{}",
    );
    spin.limits.cpu_seconds = 1;
    spin.limits.wall = Duration::from_secs(20);
    let observation = run(&fixture, spin);
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::CpuLimit
        },
        "{:?}",
        observation.isolation_notes
    );
}

#[test]
fn g7_inputs_reach_main_as_keyword_arguments_needs_root() {
    let fixture = fixture();
    let observation = run(
        &fixture,
        invocation(
            &fixture,
            "def main(ticket_id, amounts):\n    return {'ticket': ticket_id, 'total': sum(amounts)}\n",
            r#"{"ticket_id": "T-7", "amounts": [1, 2, 3.5]}"#,
        ),
    );
    assert_eq!(
        result_of(&observation),
        serde_json::json!({"ticket": "T-7", "total": 6.5})
    );
}

#[test]
fn g7_environment_holds_only_declared_variables_needs_root() {
    let fixture = fixture();
    let mut step = invocation(
        &fixture,
        "import os\ndef main():\n    return dict(os.environ)\n",
        "{}",
    );
    step.env = vec![
        EnvVar {
            name: String::from("CONN_PAYMENTS_API_KEY"),
            value: zeroize::Zeroizing::new(String::from("sk-test-1234")),
        },
        EnvVar {
            name: String::from("GREETING"),
            value: zeroize::Zeroizing::new(String::from("hello world")),
        },
    ];
    let observation = run(&fixture, step);
    let environment = result_of(&observation);
    let environment = environment.as_object().unwrap();
    assert_eq!(environment["CONN_PAYMENTS_API_KEY"], "sk-test-1234");
    assert_eq!(environment["GREETING"], "hello world");
    // Python itself may set LC_CTYPE (PEP 538 locale coercion); nothing else may appear.
    for name in environment.keys() {
        assert!(
            ["CONN_PAYMENTS_API_KEY", "GREETING", "LC_CTYPE"].contains(&name.as_str()),
            "undeclared variable {name} in the sandbox"
        );
    }
}

#[test]
fn g9_third_party_import_needs_repair_and_nothing_of_the_step_ran_needs_root() {
    let fixture = fixture();
    // The side effect comes first in the file: if any of the step ran, the marker exists.
    let code = "open('/work/marker', 'w').write('ran')\nimport json\nimport requests\ndef main():\n    return 1\n";
    let observation = run(&fixture, invocation(&fixture, code, "{}"));
    match &observation.outcome {
        Outcome::NeedsRepair { module, detail } => {
            assert_eq!(module, "requests");
            assert!(detail.contains("step.py:3"), "{detail}");
        }
        other => panic!("expected needs_repair, got {other:?}"),
    }
    assert!(
        observation.copy_back.files.is_empty(),
        "the step wrote files: {:?}",
        observation.copy_back.files.len()
    );

    // Control: without the import the same side effect does happen and comes back.
    let control = run(
        &fixture,
        invocation(
            &fixture,
            "open('/work/marker', 'w').write('ran')\ndef main():\n    return 1\n",
            "{}",
        ),
    );
    assert_eq!(result_of(&control), serde_json::json!(1));
    assert_eq!(control.copy_back.files.len(), 1);
}

#[test]
fn g9_literal_dynamic_imports_are_checked_too_needs_root() {
    let fixture = fixture();
    for code in [
        "import importlib\ndef main():\n    return importlib.import_module('numpy').__name__\n",
        "def main():\n    return __import__('yaml').__name__\n",
        "from pandas import DataFrame\ndef main():\n    return 1\n",
    ] {
        let observation = run(&fixture, invocation(&fixture, code, "{}"));
        assert!(
            matches!(observation.outcome, Outcome::NeedsRepair { .. }),
            "{code}: {:?}",
            observation.outcome
        );
    }
    // Standard-library imports, static and dynamic, are fine.
    let fine = "import importlib, json\nfrom collections import OrderedDict\ndef main():\n    return importlib.import_module('re').__name__\n";
    assert_eq!(
        result_of(&run(&fixture, invocation(&fixture, fine, "{}"))),
        serde_json::json!("re")
    );
}

#[test]
fn g7_an_error_gives_a_traceback_into_step_py_needs_root() {
    let fixture = fixture();
    let code = "def check(amount):\n    if amount < 0:\n        raise ValueError('negative amount: %d' % amount)\n\ndef main(amount):\n    check(amount)\n";
    let observation = run(&fixture, invocation(&fixture, code, r#"{"amount": -5}"#));
    let Outcome::Failed {
        error,
        code_started,
    } = &observation.outcome
    else {
        panic!("expected a failure, got {:?}", observation.outcome);
    };
    assert!(code_started);
    assert_eq!(error.kind, "ValueError");
    assert_eq!(error.message, "negative amount: -5");
    assert_eq!(error.traceback.len(), 2, "{:?}", error.traceback);
    assert!(
        error.traceback[0].starts_with("step.py:6 in main"),
        "{:?}",
        error.traceback
    );
    assert!(
        error.traceback[1].starts_with("step.py:3 in check"),
        "{:?}",
        error.traceback
    );
    assert!(
        error.traceback[1].contains("raise ValueError"),
        "{:?}",
        error.traceback
    );
}

/// The harness runs the step with `exec` on its text (no `compile()`, issue 13): an error in
/// the module's own code still names step.py and its line, and is raised after the start; code
/// the step itself runs with `exec` keeps its own name; code that does not compile is a syntax
/// error before anything ran; code the platform's import reader cannot read needs repair and
/// gets no sandbox (fail closed: a reader that gave up must not let the code run unchecked).
#[test]
fn g7_module_level_errors_and_syntax_errors_name_step_py_needs_root() {
    let fixture = fixture();
    let code =
        "x = 1\nexec('y = 2')\nraise KeyError('at module level')\ndef main():\n    return 1\n";
    let observation = run(&fixture, invocation(&fixture, code, "{}"));
    let Outcome::Failed {
        error,
        code_started,
    } = &observation.outcome
    else {
        panic!("expected a failure, got {:?}", observation.outcome);
    };
    assert!(code_started);
    assert_eq!(error.kind, "KeyError");
    assert_eq!(
        error.traceback,
        vec!["step.py:3 in <module>: raise KeyError('at module level')".to_owned()]
    );
    let nested = "def main():\n    exec('raise ValueError(1)')\n";
    let observation = run(&fixture, invocation(&fixture, nested, "{}"));
    assert!(
        matches!(&observation.outcome, Outcome::Failed { error, code_started: true }
            if error.traceback == vec!["step.py:2 in main: exec('raise ValueError(1)')".to_owned()]),
        "{:?}",
        observation.outcome
    );
    let unread = "open('/work/marker', 'w').write('ran')\nx = 'never closed\n";
    let observation = run(&fixture, invocation(&fixture, unread, "{}"));
    assert!(
        matches!(&observation.outcome, Outcome::NeedsRepair { module, detail }
            if module.is_empty() && detail.starts_with("step.py:2: unterminated string literal")),
        "{:?}",
        observation.outcome
    );
    assert!(observation.copy_back.files.is_empty(), "the step ran");
    let uncompilable = "open('/work/marker', 'w').write('ran')\ndef main(:\n    return 1\n";
    let observation = run(&fixture, invocation(&fixture, uncompilable, "{}"));
    assert!(
        matches!(&observation.outcome, Outcome::Failed { error, code_started: false }
            if error.kind == "SyntaxError" && error.message.contains("step.py:2")),
        "{:?}",
        observation.outcome
    );
    assert!(observation.copy_back.files.is_empty(), "the step ran");
}

#[test]
fn g7_results_that_are_not_json_or_too_large_are_clear_errors_needs_root() {
    let fixture = fixture();
    let observation = run(
        &fixture,
        invocation(&fixture, "def main():\n    return {1, 2}\n", "{}"),
    );
    assert!(
        matches!(&observation.outcome, Outcome::Failed { error, code_started: true } if error.kind == "ResultNotSerializable"),
        "{:?}",
        observation.outcome
    );
    let mut large = invocation(&fixture, "def main():\n    return 'x' * 200000\n", "{}");
    large.limits.output_bytes = 100_000;
    let observation = run(&fixture, large);
    assert!(
        matches!(&observation.outcome, Outcome::Failed { error, code_started: true } if error.kind == "ResultTooLarge"),
        "{:?}",
        observation.outcome
    );
}

/// Host processes running as any uid of this backend's sandbox range.
fn sandbox_processes(backend: &LocalBackend) -> Vec<String> {
    sandbox_processes_in_range(backend.options().uid_base, backend.options().slots)
}

fn sandbox_processes_in_range(base: u32, count: u32) -> Vec<String> {
    let range = base..base + count;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let uid = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            .and_then(|uid| uid.parse::<u32>().ok());
        if uid.is_some_and(|uid| range.contains(&uid)) {
            found.push(status.lines().take(1).collect());
        }
    }
    found
}

#[test]
fn g6_timeout_is_unknown_and_no_process_survives_needs_root() {
    let fixture = fixture();
    let code = "import subprocess, sys\ndef main():\n    subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import time; time.sleep(300)'])\n    while True:\n        pass\n";
    let mut step = invocation(&fixture, code, "{}");
    step.limits.wall = Duration::from_secs(2);
    let started = Instant::now();
    let observation = run(&fixture, step);
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::WallTimeout
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(sandbox_processes(&fixture.backend), Vec::<String>::new());
}

#[test]
fn g6_a_process_that_outlives_the_step_is_killed_needs_root() {
    let fixture = fixture();
    let code = "import subprocess, sys\ndef main():\n    child = subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import time; time.sleep(300)'], start_new_session=True)\n    return child.pid\n";
    let observation = run(&fixture, invocation(&fixture, code, "{}"));
    assert!(result_of(&observation).is_u64());
    assert_eq!(sandbox_processes(&fixture.backend), Vec::<String>::new());
}

fn host_python_version() -> String {
    let output = std::process::Command::new("/usr/bin/python3")
        .args([
            "-I",
            "-S",
            "-c",
            "import platform; print(platform.python_version())",
        ])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

#[test]
fn g8_the_interpreter_version_is_exact_needs_root() {
    let fixture = fixture();
    let observation = run(
        &fixture,
        invocation(
            &fixture,
            "import platform\ndef main():\n    return platform.python_version()\n",
            "{}",
        ),
    );
    let expected = host_python_version();
    assert_eq!(observation.interpreter, expected);
    assert_eq!(result_of(&observation), serde_json::json!(expected));
}

#[test]
fn g8_an_unknown_pin_is_an_error_listing_the_versions_needs_root() {
    let fixture = fixture();
    let mut step = invocation(&fixture, "def main():\n    return 1\n", "{}");
    step.python = PythonPin { major: 2, minor: 7 };
    let Err(error) = fixture.backend.run(step) else {
        panic!("a server without Python 2.7 ran the step");
    };
    let message = error.to_string();
    assert!(message.contains("no Python 2.7"), "{message}");
    assert!(message.contains(&host_python_version()), "{message}");
    assert!(matches!(error, sandbox::Error::RuntimeNotAvailable { .. }));
    assert_nothing_left(&fixture);
}

#[test]
fn g11_public_egress_without_a_configured_network_is_refused_needs_root() {
    let fixture = fixture();
    let mut step = invocation(&fixture, "def main():\n    return 1\n", "{}");
    step.network = NetworkMode::PublicEgress;
    let observation = run(&fixture, step);
    assert!(
        matches!(observation.outcome, Outcome::Refused { .. }),
        "{:?}",
        observation.outcome
    );
}

#[test]
fn g7_the_root_holds_only_the_runtime_needs_root() {
    let fixture = fixture();
    let code = r#"
import os, sys
def main():
    return {
        "cwd": os.getcwd(),
        "uid": os.getuid(),
        "root": sorted(os.listdir("/")),
        "dist_packages": os.path.exists("/usr/lib/python3/dist-packages"),
        "shell": any(os.path.exists(p) for p in ["/bin/sh", "/usr/bin/sh", "/bin/bash"]),
        "bin": sorted(os.listdir(os.path.dirname(sys.executable))),
        "dev": sorted(os.listdir("/dev")),
        "site_packages_on_path": [p for p in sys.path if "packages" in p],
    }
"#;
    let observation = run(&fixture, invocation(&fixture, code, "{}"));
    let answer = result_of(&observation);
    assert_eq!(answer["cwd"], "/work");
    assert_eq!(answer["uid"], 1000);
    assert_eq!(answer["dist_packages"], false);
    assert_eq!(answer["shell"], false);
    assert_eq!(
        answer["bin"].as_array().unwrap().len(),
        1,
        "{}",
        answer["bin"]
    );
    assert_eq!(
        answer["dev"],
        serde_json::json!([
            "fd", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"
        ])
    );
    assert_eq!(answer["site_packages_on_path"], serde_json::json!([]));
    for entry in answer["root"].as_array().unwrap() {
        let entry = entry.as_str().unwrap();
        assert!(
            [
                "dev", "etc", "harness", "lib", "lib64", "proc", "tmp", "usr", "work"
            ]
            .contains(&entry),
            "unexpected /{entry} in the sandbox root"
        );
    }
}

#[test]
fn g6_sweep_removes_leftover_cgroups_and_scratch_folders_needs_root() {
    let fixture = fixture();
    let options = fixture.backend.options().clone();
    // What a crashed platform leaves: a scratch folder and a sandbox cgroup in each hierarchy.
    let leftover_scratch = options.state_dir.join("scratch").join("sb-9-123");
    std::fs::create_dir_all(leftover_scratch.join("work")).unwrap();
    let parents = fixture.backend.cgroup_layout().parent_dirs();
    for parent in &parents {
        std::fs::create_dir(parent.join("sb-9-123")).unwrap();
    }
    let report = sandbox::local::sweep(&options).unwrap();
    assert_eq!(report.cgroups, parents.len());
    assert_eq!(report.scratch_dirs, 1);
    assert_nothing_left(&fixture);
}

fn wait_for_idle(backend: &LocalBackend, expected: usize) {
    let started = Instant::now();
    while backend.idle_sandboxes() != expected {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the pool never reached {expected} idle sandboxes"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The number of sandbox groups, once the reaper removed a finished sandbox's (bounded by
/// [`TEARDOWN_WAIT`]): waits until the count is `expected` and returns the count then.
fn settled_cgroup_count(backend: &LocalBackend, expected: usize) -> usize {
    let started = Instant::now();
    while cgroup_count(backend) != expected && started.elapsed() < TEARDOWN_WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    cgroup_count(backend)
}

fn cgroup_count(backend: &LocalBackend) -> usize {
    backend
        .cgroup_layout()
        .parent_dirs()
        .iter()
        .map(|parent| {
            std::fs::read_dir(parent)
                .unwrap()
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .count()
        })
        .sum()
}

#[test]
fn g6_warm_pool_sandboxes_serve_one_invocation_each_and_get_the_folder_after_the_claim_needs_root()
{
    let state = tempfile::tempdir().unwrap();
    let backend = LocalBackend::for_tests_with(
        state.path(),
        Path::new(env!("CARGO_BIN_EXE_sandbox-jail")),
        |options| {
            options.pool_size = 1;
        },
    )
    .unwrap();
    let fixture = Fixture {
        backend,
        work: tempfile::tempdir().unwrap(),
        _state: state,
    };
    // The first request of a class runs cold and starts the refill.
    let code = "import os\ndef main(tag):\n    marker = '/tmp/used'\n    reused = os.path.exists(marker)\n    open(marker, 'w').write(tag)\n    return {'reused': reused, 'folder': sorted(os.listdir('/work')), 'env': os.environ.get('TAG'), 'pid': os.getpid()}\n";
    let first = fixture
        .backend
        .run(invocation(&fixture, code, r#"{"tag": "first"}"#))
        .unwrap();
    assert_eq!(result_of(&first)["reused"], false);
    wait_for_idle(&fixture.backend, 1);
    // One warm sandbox exists: one set of cgroups (one per hierarchy).
    let per_sandbox = fixture.backend.cgroup_layout().parent_dirs().len();
    assert_eq!(
        settled_cgroup_count(&fixture.backend, per_sandbox),
        per_sandbox
    );

    // The folder, inputs and environment go in after the claim: this file did not exist when
    // the warm sandbox was built.
    std::fs::write(
        fixture.work.path().join("late.txt"),
        "written after the pool filled",
    )
    .unwrap();
    let mut second = invocation(&fixture, code, r#"{"tag": "second"}"#);
    second.env = vec![EnvVar {
        name: String::from("TAG"),
        value: zeroize::Zeroizing::new(String::from("claimed")),
    }];
    let second = fixture.backend.run(second).unwrap();
    let answer = result_of(&second);
    assert_eq!(
        answer["reused"], false,
        "a sandbox served a second invocation"
    );
    assert_eq!(answer["folder"], serde_json::json!(["late.txt"]));
    assert_eq!(answer["env"], "claimed");
    // The used sandbox is gone; the pool refills with a fresh one.
    wait_for_idle(&fixture.backend, 1);
    assert_eq!(
        settled_cgroup_count(&fixture.backend, per_sandbox),
        per_sandbox
    );
    let third = fixture
        .backend
        .run(invocation(&fixture, code, r#"{"tag": "third"}"#))
        .unwrap();
    assert_eq!(result_of(&third)["reused"], false);
    wait_for_idle(&fixture.backend, 1);
    // Dropping the backend destroys the idle sandbox too.
    let parents = fixture.backend.cgroup_layout().parent_dirs();
    let scratch = fixture.backend.options().state_dir.join("scratch");
    let (uid_base, slots) = (
        fixture.backend.options().uid_base,
        fixture.backend.options().slots,
    );
    drop(fixture.backend);
    for parent in parents {
        assert!(
            !parent.exists(),
            "{} survived the backend",
            parent.display()
        );
    }
    assert_eq!(std::fs::read_dir(scratch).unwrap().count(), 0);
    assert_eq!(
        sandbox_processes_in_range(uid_base, slots),
        Vec::<String>::new()
    );
}
