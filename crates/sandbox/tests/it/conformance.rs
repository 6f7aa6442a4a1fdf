//! One conformance suite for both isolating backends (issue 13, part 5): the same probes run
//! in the `local` and the `gvisor` backend, and each test asserts the same outcome of both,
//! so a difference between them is a failing test. It covers the hostile probes (files,
//! privileges, noexec), the legitimate standard-library work, declared limits and copy-back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use sandbox::gvisor::GvisorBackend;
use sandbox::local::LocalBackend;
use sandbox::{
    Invocation, Isolation, Limits, NetworkMode, Observation, Outcome, PythonPin, UnknownReason,
};

use crate::hostile::support::NoSecrets;

/// The backends every conformance test runs against.
fn backends(state: &Path) -> Vec<Box<dyn Isolation>> {
    let local = state.join("local");
    let gvisor = state.join("gvisor");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&gvisor).unwrap();
    vec![
        Box::new(
            LocalBackend::for_tests(&local, Path::new(env!("CARGO_BIN_EXE_sandbox-jail"))).unwrap(),
        ),
        Box::new(GvisorBackend::for_tests(&gvisor).unwrap()),
    ]
}

struct Case<'a> {
    code: &'a str,
    inputs: Value,
    limits: Limits,
    work: Option<&'a Path>,
}

impl<'a> Case<'a> {
    fn new(code: &'a str, inputs: Value) -> Case<'a> {
        Case {
            code,
            inputs,
            limits: Limits::default(),
            work: None,
        }
    }
}

/// Runs `case` in every backend and returns each backend's name and observation.
fn run_everywhere(case: &Case<'_>) -> Vec<(&'static str, Observation)> {
    let state = tempfile::tempdir().unwrap();
    let fallback = tempfile::tempdir().unwrap();
    backends(state.path())
        .into_iter()
        .map(|backend| {
            let invocation = Invocation {
                live: None,
                python: PythonPin {
                    major: 3,
                    minor: 11,
                },
                code: case.code.to_owned(),
                inputs_json: case.inputs.to_string(),
                env: Vec::new(),
                network: NetworkMode::None,
                limits: case.limits.clone(),
                files: workspace::StepFiles::scratch_folder(
                    case.work.unwrap_or(fallback.path()).to_path_buf(),
                ),
                screen: Arc::new(NoSecrets),
            };
            let observation = backend
                .run(invocation)
                .unwrap_or_else(|error| panic!("{}: {error}", backend.name()));
            (backend.name(), observation)
        })
        .collect()
}

fn result(name: &str, observation: &Observation) -> Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "{name}: the step did not succeed: {other:?}\n{}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

#[test]
fn g7_conformance_ordinary_stdlib_work_is_the_same_in_both_backends_needs_root() {
    let mut answers = Vec::new();
    for probe in [
        include_str!("../probes/ordinary.py"),
        include_str!("../probes/daemon_thread_exit.py"),
    ] {
        for (name, observation) in run_everywhere(&Case::new(probe, json!({}))) {
            answers.push((name, result(name, &observation)));
        }
    }
    for (name, answer) in &answers {
        if answer.get("loopback").is_some() {
            assert_eq!(answer["loopback"], "ping", "{name}: {answer}");
            assert_eq!(answer["http"], "served on loopback", "{name}: {answer}");
            assert_eq!(answer["user"], "sandbox", "{name}: {answer}");
            assert_eq!(answer["expanduser"], "/tmp", "{name}: {answer}");
            assert_eq!(answer["tar_owner"], json!(["sandbox", "sandbox"]), "{name}");
        } else {
            for run in answer["runs"].as_array().unwrap() {
                assert_eq!(run["code"], 0, "{name}: {answer}");
            }
        }
    }
    // The same answers, apart from what differs by nature (none of these fields do).
    let ordinary: Vec<&Value> = answers
        .iter()
        .filter(|(_, answer)| answer.get("loopback").is_some())
        .map(|(_, answer)| answer)
        .collect();
    for key in [
        "loopback",
        "http",
        "user",
        "home",
        "group",
        "localhost",
        "tar_owner",
    ] {
        assert_eq!(
            ordinary[0][key], ordinary[1][key],
            "{key} differs between the backends"
        );
    }
}

#[test]
fn g10_conformance_no_privileges_and_nothing_runs_from_writable_places_needs_root() {
    let filesystem = Case::new(
        include_str!("../probes/filesystem.py"),
        json!({ "host_paths": ["/etc/shadow", "/root", "/proc/1/root/etc/shadow"],
                "proc_sys_paths": ["/proc/sys/kernel/core_pattern"] }),
    );
    for (name, observation) in run_everywhere(&filesystem) {
        let answer = result(name, &observation);
        for folder in ["exec_from_tmp", "exec_from_work", "exec_from_shm"] {
            for what in ["binary", "script"] {
                assert_eq!(
                    answer[folder][what]["ran"], false,
                    "{name}: {folder} {what}"
                );
            }
        }
        for (path, outcome) in answer["host_reads"].as_object().unwrap() {
            assert_eq!(outcome["ok"], false, "{name}: {path} was readable");
        }
        for (path, outcome) in answer["proc_sys"].as_object().unwrap() {
            assert_ne!(outcome["ok"], true, "{name}: {path} was writable");
        }
    }
    let privileges = Case::new(include_str!("../probes/privileges.py"), json!({}));
    for (name, observation) in run_everywhere(&privileges) {
        let answer = result(name, &observation);
        // gVisor's procfs does not report CapAmb and NoNewPrivs (its runtime spec sets no
        // ambient capabilities and noNewPrivileges); every field a backend reports must hold.
        for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            assert!(
                answer[set].is_null() || answer[set] == "0000000000000000",
                "{name} {set}: {answer}"
            );
        }
        assert_eq!(answer["CapEff"], "0000000000000000", "{name}: {answer}");
        assert!(
            answer["NoNewPrivs"].is_null() || answer["NoNewPrivs"] == "1",
            "{name}: {answer}"
        );
        assert_ne!(answer["setuid_root"], "succeeded", "{name}");
        assert_ne!(answer["setgroups_call"], "succeeded", "{name}");
    }
}

#[test]
fn g10_conformance_declared_limits_hold_in_both_backends_needs_root() {
    // /work's cap: writing past work_mib fails in the step, never on the host's disk.
    let mut fill = Case::new(
        "def main():\n    written = 0\n    try:\n        for part in range(8):\n            with open('/work/fill-%d' % part, 'wb') as handle:\n                for _ in range(4):\n                    handle.write(b'x' * (1024 * 1024))\n                    written += 1\n    except OSError as error:\n        return {'written_mib': written, 'errno': error.errno}\n    return {'written_mib': written, 'errno': None}\n",
        json!({}),
    );
    fill.limits = Limits {
        work_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    for (name, observation) in run_everywhere(&fill) {
        let answer = result(name, &observation);
        assert_eq!(answer["errno"], 28, "{name}: /work is not capped: {answer}");
        assert!(
            answer["written_mib"].as_u64().unwrap() <= 8,
            "{name}: {answer}"
        );
    }
    let mut sleep = Case::new("import time\ndef main():\n    time.sleep(60)\n", json!({}));
    sleep.limits = Limits {
        wall: Duration::from_secs(2),
        ..Limits::default()
    };
    for (name, observation) in run_everywhere(&sleep) {
        assert_eq!(
            observation.outcome,
            Outcome::Unknown {
                reason: UnknownReason::WallTimeout
            },
            "{name}"
        );
    }
    let mut flood = Case::new(
        "def main():\n    print('x' * 20000)\n    return 1\n",
        json!({}),
    );
    flood.limits = Limits {
        output_bytes: 4096,
        ..Limits::default()
    };
    for (name, observation) in run_everywhere(&flood) {
        assert!(observation.output_truncated, "{name}");
        assert!(observation.stdout.len() <= 4096, "{name}");
    }
}

#[test]
fn g12_conformance_copy_back_takes_regular_files_only_in_both_backends_needs_root() {
    let work = tempfile::tempdir().unwrap();
    let mut case = Case::new(
        "import os\ndef main():\n    with open('/work/report.txt', 'w') as handle:\n        handle.write('made in the sandbox')\n    os.symlink('/etc/passwd', '/work/link')\n    os.mkfifo('/work/fifo')\n    return 1\n",
        json!({}),
    );
    case.work = Some(work.path());
    for (name, observation) in run_everywhere(&case) {
        result(name, &observation);
        let returned: Vec<(&str, &[u8])> = observation
            .copy_back
            .files
            .iter()
            .map(|file| (file.path.as_str(), file.contents().unwrap_or_default()))
            .collect();
        assert_eq!(
            returned,
            vec![("report.txt", &b"made in the sandbox"[..])],
            "{name}"
        );
        let refused: Vec<&str> = observation
            .copy_back
            .refusals
            .iter()
            .map(|refusal| refusal.path.as_str())
            .collect();
        // The link is refused by name in both; the fifo never comes back (gVisor keeps it in
        // its own kernel, so the host folder never holds one; the local backend refuses it).
        assert!(refused.contains(&"link"), "{name}: {refused:?}");
        if name == "local" {
            assert!(refused.contains(&"fifo"), "{name}: {refused:?}");
        }
        // The host folder itself is never written.
        assert!(!work.path().join("report.txt").exists(), "{name}");
    }
}

/// G11 in both backends, through the same platform-made network namespace and nftables
/// policy: the listener test of `net::step` (every denied range, the host's own addresses and
/// the gateway unreached, the test internet reached as the positive control, the resolver
/// answering, masquerade, the network gone afterwards) runs as the code of a `public_egress`
/// step of the local backend and of the gvisor backend (runsc joins the namespace with
/// `--network=sandbox`).
#[test]
fn g11_conformance_public_egress_reaches_the_test_internet_and_nothing_else_needs_root() {
    use crate::net::topology::{Forwarding, Topology, UplinkChoice};
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let state = tempfile::tempdir().unwrap();
    let local = state.path().join("local");
    let gvisor = state.path().join("gvisor");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&gvisor).unwrap();
    let backends: Vec<Box<dyn Isolation>> = vec![
        Box::new(
            LocalBackend::for_tests_with(
                &local,
                Path::new(env!("CARGO_BIN_EXE_sandbox-jail")),
                |options| options.egress = Some(topology.options.clone()),
            )
            .unwrap(),
        ),
        Box::new(
            GvisorBackend::for_tests_with(&gvisor, |options| {
                options.egress = Some(topology.options.clone());
            })
            .unwrap(),
        ),
    ];
    for backend in &backends {
        // What a server asks before it starts a run (`stepward run`, `serve`): both offer the
        // egress they were built with.
        assert_eq!(
            backend.availability(
                PythonPin {
                    major: 3,
                    minor: 11
                },
                NetworkMode::PublicEgress
            ),
            Ok(()),
            "{}",
            backend.name()
        );
        crate::net::step::assert_step_reaches_the_test_internet_and_nothing_else(
            &topology,
            backend.as_ref(),
        );
    }
}

#[test]
fn g9_conformance_an_error_only_the_compiler_finds_is_a_syntax_error_in_both_backends_needs_root() {
    // `ast.parse` accepts a `return` outside a function; compiling refuses it. Nothing of the
    // step may run (the marker stays absent) and the answer names the line.
    let code = "open('/work/marker', 'w').write('ran')\nreturn 1\ndef main():\n    return 1\n";
    for (name, observation) in run_everywhere(&Case::new(code, json!({}))) {
        match &observation.outcome {
            Outcome::Failed {
                error,
                code_started: false,
            } if error.kind == "SyntaxError" => {
                assert!(error.message.contains("step.py:2"), "{name}: {error:?}");
            }
            other => panic!("{name}: expected a syntax error, got {other:?}"),
        }
        assert!(
            observation.copy_back.files.is_empty(),
            "{name}: the step ran"
        );
    }
}
