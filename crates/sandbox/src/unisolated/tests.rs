//! Tests of the unisolated backend (G13) with benign steps only: this backend runs code bare
//! on the host by design, so nothing hostile is ever run through it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::copyback::{RefusalReason, SecretScreen};
use crate::unisolated::{UnisolatedBackend, UnisolatedOptions, unisolated_allowed};
use crate::{
    EnvVar, Error, Invocation, Isolation, Limits, NetworkMode, Observation, Outcome, PythonPin,
    UnknownReason,
};

struct KnowsOneSecret;

impl SecretScreen for KnowsOneSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        let needle = b"unisolated-secret-value";
        content.windows(needle.len()).any(|window| window == needle)
    }
}

struct Fixture {
    _state: tempfile::TempDir,
    work: tempfile::TempDir,
    backend: UnisolatedBackend,
}

fn fixture() -> Fixture {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend =
        UnisolatedBackend::new(UnisolatedOptions::new(state.path().to_path_buf())).unwrap();
    Fixture {
        _state: state,
        work,
        backend,
    }
}

fn invocation(fixture: &Fixture, code: &str, network: NetworkMode, limits: Limits) -> Invocation {
    Invocation {
        live: None,
        python: PythonPin {
            major: 3,
            minor: 11,
        },
        code: code.to_owned(),
        inputs_json: String::from(r#"{"name": "ada"}"#),
        env: vec![EnvVar {
            name: String::from("DECLARED"),
            value: zeroize::Zeroizing::new(String::from("yes")),
        }],
        network,
        limits,
        files: workspace::StepFiles::scratch_folder(fixture.work.path().to_path_buf()),
        screen: Arc::new(KnowsOneSecret),
    }
}

fn run(fixture: &Fixture, code: &str) -> Observation {
    fixture
        .backend
        .run(invocation(
            fixture,
            code,
            NetworkMode::None,
            Limits::default(),
        ))
        .unwrap()
}

fn result(observation: &Observation) -> serde_json::Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "not a success: {other:?}\n{}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

#[test]
fn g13_unisolated_is_refused_with_more_than_one_account() {
    assert!(unisolated_allowed(0).is_ok());
    assert!(unisolated_allowed(1).is_ok());
    let refusal = unisolated_allowed(2).unwrap_err();
    assert!(refusal.to_string().contains("would have 2"), "{refusal}");
    assert!(matches!(refusal, Error::LayerFailed { .. }));
}

#[test]
fn g13_unisolated_runs_with_only_the_declared_environment_in_a_scratch_copy() {
    let fixture = fixture();
    std::fs::write(fixture.work.path().join("input.txt"), b"from the workspace").unwrap();
    std::fs::write(fixture.work.path().join(".secrets"), b"HIDDEN=1").unwrap();
    let observation = run(
        &fixture,
        "import os\n\
         def main(name):\n\
         \x20   with open('input.txt') as handle:\n\
         \x20       text = handle.read()\n\
         \x20   return {'env': dict(os.environ), 'cwd': os.getcwd(), 'text': text,\n\
         \x20           'secrets_visible': os.path.exists('.secrets'), 'name': name}\n",
    );
    let answer = result(&observation);
    let env = answer["env"].as_object().unwrap();
    assert_eq!(
        env.get("DECLARED").and_then(|value| value.as_str()),
        Some("yes")
    );
    for name in env.keys() {
        assert!(
            name == "DECLARED" || name == "LC_CTYPE",
            "{name} leaked into the step"
        );
    }
    assert_eq!(answer["text"], "from the workspace");
    assert_eq!(answer["secrets_visible"], false);
    assert_eq!(answer["name"], "ada");
    let cwd = answer["cwd"].as_str().unwrap();
    assert!(
        !cwd.starts_with(fixture.work.path().to_str().unwrap()),
        "{cwd}"
    );
    assert_eq!(observation.backend, "unisolated");
    assert!(observation.interpreter.starts_with("3.11."));
    assert!(observation.isolation_notes[0].starts_with("not isolated"));
    assert!(
        observation
            .isolation_notes
            .iter()
            .any(|note| note.starts_with("network not enforced"))
    );
    // The scratch copy is gone after the run.
    assert!(!std::path::Path::new(cwd).exists());
}

#[test]
fn g13_unisolated_public_egress_is_labelled_your_laptops_network() {
    let fixture = fixture();
    let observation = fixture
        .backend
        .run(invocation(
            &fixture,
            "def main(name):\n    return 1\n",
            NetworkMode::PublicEgress,
            Limits::default(),
        ))
        .unwrap();
    assert_eq!(
        observation.outcome,
        Outcome::Succeeded {
            result_json: String::from("1").into()
        }
    );
    let network_note = observation
        .isolation_notes
        .iter()
        .find(|note| note.starts_with("network not enforced"))
        .unwrap();
    assert!(network_note.contains("laptop"), "{network_note}");
}

#[test]
fn g12_unisolated_copy_back_goes_through_the_filter() {
    let fixture = fixture();
    std::fs::write(fixture.work.path().join("keep.txt"), b"unchanged").unwrap();
    let observation = run(
        &fixture,
        "import os\n\
         def main(name):\n\
         \x20   open('new.txt', 'w').write('hello')\n\
         \x20   open('leak.txt', 'w').write('unisolated-secret-value')\n\
         \x20   os.symlink('/etc/passwd', 'link')\n\
         \x20   open('.secrets', 'w').write('X=1')\n\
         \x20   return True\n",
    );
    assert_eq!(result(&observation), serde_json::json!(true));
    let returned: Vec<&str> = observation
        .copy_back
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(returned, vec!["new.txt"]);
    let reasons: Vec<(&str, &RefusalReason)> = observation
        .copy_back
        .refusals
        .iter()
        .map(|refusal| (refusal.path.as_str(), &refusal.reason))
        .collect();
    assert!(
        reasons.contains(&("leak.txt", &RefusalReason::HoldsSecret)),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("link", &RefusalReason::SymlinkOrHardlink)),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|(path, _)| *path == ".secrets"),
        "{reasons:?}"
    );
    // The workspace folder itself was never written.
    assert!(!fixture.work.path().join("new.txt").exists());
}

#[test]
fn g13_unisolated_wall_timeout_kills_the_process_group() {
    let fixture = fixture();
    let token = format!("unisolated-sleeper-{}", std::process::id());
    let code = format!(
        "import subprocess, sys, time\n\
         def main(name):\n\
         \x20   subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import time; time.sleep(120)', '{token}'])\n\
         \x20   time.sleep(120)\n"
    );
    let limits = Limits {
        wall: Duration::from_secs(2),
        ..Limits::default()
    };
    let started = Instant::now();
    let observation = fixture
        .backend
        .run(invocation(&fixture, &code, NetworkMode::None, limits))
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        observation.outcome,
        Outcome::Unknown {
            reason: UnknownReason::WallTimeout
        }
    );
    assert!(
        processes_with_argument(&token).is_empty(),
        "the sleeper outlived the step"
    );
}

#[test]
fn g13_unisolated_output_is_capped() {
    let fixture = fixture();
    let limits = Limits {
        output_bytes: 4096,
        ..Limits::default()
    };
    let observation = fixture
        .backend
        .run(invocation(
            &fixture,
            "def main(name):\n    print('x' * 1000000)\n    return 'done'\n",
            NetworkMode::None,
            limits,
        ))
        .unwrap();
    assert!(observation.output_truncated);
    assert!(observation.stdout.len() + observation.stderr.len() <= 4096);
    assert_eq!(result(&observation), serde_json::json!("done"));
}

#[test]
fn g9_unisolated_third_party_import_needs_repair_before_anything_runs() {
    let fixture = fixture();
    let observation = run(
        &fixture,
        "open('ran.txt', 'w').write('x')\nimport requests\ndef main(name):\n    return 1\n",
    );
    assert!(
        matches!(&observation.outcome, Outcome::NeedsRepair { module, .. } if module == "requests"),
        "{:?}",
        observation.outcome
    );
    assert!(observation.copy_back.files.is_empty());
}

#[test]
fn g14_unisolated_step_errors_are_failed_offline_and_unknown_with_network() {
    let fixture = fixture();
    let code = "def main(name):\n    raise ValueError('bad ' + name)\n";
    let offline = run(&fixture, code);
    match &offline.outcome {
        Outcome::Failed {
            error,
            code_started,
        } => {
            assert_eq!(error.kind, "ValueError");
            assert_eq!(error.message, "bad ada");
            assert!(*code_started);
            assert!(
                error
                    .traceback
                    .iter()
                    .any(|line| line.starts_with("step.py:2"))
            );
        }
        other => panic!("{other:?}"),
    }
    let networked = fixture
        .backend
        .run(invocation(
            &fixture,
            code,
            NetworkMode::PublicEgress,
            Limits::default(),
        ))
        .unwrap();
    assert!(
        matches!(networked.outcome, Outcome::Unknown { .. }),
        "{:?}",
        networked.outcome
    );
}

#[test]
fn g8_unisolated_refuses_an_unknown_python_pin() {
    let fixture = fixture();
    let mut unknown_pin = invocation(
        &fixture,
        "def main(name):\n    return 1\n",
        NetworkMode::None,
        Limits::default(),
    );
    unknown_pin.python = PythonPin { major: 2, minor: 7 };
    let error = fixture.backend.run(unknown_pin).err().unwrap();
    assert!(
        matches!(error, Error::RuntimeNotAvailable { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("3.11"), "{error}");
}

/// Host pids whose command line has `argument` as one of its arguments.
fn processes_with_argument(argument: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && cmdline
                .split(|byte| *byte == 0)
                .any(|part| part == argument.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn g9_unisolated_errors_only_the_compiler_finds_are_syntax_errors_before_anything_runs() {
    let fixture = fixture();
    // `ast.parse` accepts each of these; the compiler refuses them. The side effect on the
    // first line shows that nothing of the step ran.
    for (code, line) in [
        (
            "open('ran.txt', 'w').write('x')\nreturn 1\ndef main(name):\n    return 1\n",
            2,
        ),
        (
            "open('ran.txt', 'w').write('x')\ndef main(name):\n    nonlocal total\n",
            3,
        ),
        (
            "open('ran.txt', 'w').write('x')\nbreak\ndef main(name):\n    return 1\n",
            2,
        ),
        ("open('ran.txt', 'w').write('x')\nawait main\n", 2),
        // Too deep for the compiler.
        (
            format!(
                "open('ran.txt', 'w').write('x')\nx = 1{}\n",
                "+1".repeat(10000)
            )
            .as_str(),
            0,
        ),
    ] {
        let observation = run(&fixture, code);
        let code = &code[..code.len().min(60)];
        match &observation.outcome {
            Outcome::Failed {
                error,
                code_started: false,
            } if error.kind == "SyntaxError" => assert!(
                error.message.contains(&format!("step.py:{line}")),
                "{code}: {}",
                error.message
            ),
            other => panic!("{code}: expected a syntax error, got {other:?}"),
        }
        assert!(
            observation.copy_back.files.is_empty(),
            "{code}: the step ran"
        );
    }
    // A thousand terms are not too deep for the compiler, as for the bare interpreter (the
    // harness once compiled the syntax tree's objects, whose conversion refused them).
    let observation = run(
        &fixture,
        &format!(
            "x = 1{}\ndef main(name):\n    return x\n",
            "+1".repeat(1000)
        ),
    );
    assert!(
        matches!(&observation.outcome, Outcome::Succeeded { result_json } if result_json.as_str() == "1001"),
        "{:?}",
        observation.outcome
    );
    // A third-party import is still found first (G9): such code goes to repair, naming it.
    let observation = run(
        &fixture,
        &format!("import requests\nreturn 1\nx = 1{}\n", "+1".repeat(1000)),
    );
    assert!(
        matches!(&observation.outcome, Outcome::NeedsRepair { module, .. } if module == "requests"),
        "{:?}",
        observation.outcome
    );
}
