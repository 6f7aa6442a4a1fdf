//! Sessions (issue 16 §4): one step's sandbox for its whole life, each call its own process
//! tree. Every backend runs the same tests: a call that leaves a process behind (detached
//! from its group and session where the backend can contain that) and a next call that sees
//! none; a call's secret that no later call can find in any process; the tree reached only
//! through the session, and a session that refuses calls once it ended.
//!
//! `local` and `gvisor` need root (CI is root) and, for gvisor, runsc.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use zeroize::Zeroizing;

use sandbox::gvisor::GvisorBackend;
use sandbox::local::LocalBackend;
use sandbox::session::{Call, Session, SessionSpec};
use sandbox::unisolated::{UnisolatedBackend, UnisolatedOptions};
use sandbox::{EnvVar, Isolation, Limits, NetworkMode, Outcome, PythonPin};
use workspace::RelPath;

use crate::hostile::support::NoSecrets;

/// Leaves a process behind and returns. `detach`: the process leaves the call's process group
/// and session (a double fork and `setsid`), the way a daemon would.
const LEAVE_ONE_BEHIND: &str = r#"
import os, subprocess, sys

def main(marker, detach):
    code = 'import time; time.sleep(30)'
    if not detach:
        subprocess.Popen([sys.executable, '-I', '-S', '-c', code, marker],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        return 'left'
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open('/dev/null', os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execv(sys.executable, [sys.executable, '-I', '-S', '-c', code, marker])
        os._exit(0)
    os.waitpid(first, 0)
    return 'left'
"#;

/// Every process this call can see whose command line or environment holds `needle`.
const LOOK_FOR: &str = r#"
import os

def main(needle):
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for part in ('cmdline', 'environ'):
            try:
                with open(f'/proc/{entry}/{part}', 'rb') as handle:
                    if needle.encode() in handle.read():
                        found.append(f'{entry} {part}')
            except OSError:
                pass
    return {'found': found, 'mine': needle in repr(sorted(os.environ.items()))}
"#;

fn python() -> PythonPin {
    PythonPin {
        major: 3,
        minor: 11,
    }
}

/// Each backend with whether it contains a process that left the call's group and session.
fn backends(state: &Path) -> Vec<(Box<dyn Isolation>, bool)> {
    let local = state.join("local");
    let gvisor = state.join("gvisor");
    let unisolated = state.join("unisolated");
    for dir in [&local, &gvisor, &unisolated] {
        std::fs::create_dir_all(dir).unwrap();
    }
    vec![
        (
            Box::new(
                LocalBackend::for_tests(&local, Path::new(env!("CARGO_BIN_EXE_sandbox-jail")))
                    .unwrap(),
            ),
            true,
        ),
        (Box::new(GvisorBackend::for_tests(&gvisor).unwrap()), true),
        // Plain child processes: the call's process group is killed when it ends; a process
        // that leaves the group is not tracked (its records say "not isolated").
        (
            Box::new(UnisolatedBackend::new(UnisolatedOptions::new(unisolated)).unwrap()),
            false,
        ),
    ]
}

fn open<'a>(backend: &'a dyn Isolation, tree: &Path) -> Box<dyn Session + 'a> {
    backend
        .open_session(SessionSpec {
            python: python(),
            network: NetworkMode::None,
            limits: Limits::default(),
            tree: tree.to_path_buf(),
            screen: Arc::new(NoSecrets),
        })
        .unwrap_or_else(|error| panic!("{}: {error}", backend.name()))
}

fn call(code: &str, inputs: Value, env: Vec<EnvVar>) -> Call {
    Call {
        code: code.to_owned(),
        inputs_json: inputs.to_string(),
        env,
        wall: Duration::from_secs(30),
    }
}

fn result(backend: &str, observation: &sandbox::Observation) -> Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "{backend}: {other:?}\n{}",
            String::from_utf8_lossy(&observation.stderr)
        ),
    }
}

fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("stepward-session-{}-{nanos}", std::process::id())
}

#[test]
fn g6_each_call_of_a_session_is_its_own_process_tree_the_next_sees_none_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    for (backend, contains_detached) in backends(state.path()) {
        let name = backend.name();
        let mut session = open(backend.as_ref(), tree.path());
        let mut variants = vec![false];
        if contains_detached {
            variants.push(true);
        }
        for detach in variants {
            let marker = marker();
            let left = session
                .run(call(
                    LEAVE_ONE_BEHIND,
                    json!({"marker": marker, "detach": detach}),
                    Vec::new(),
                ))
                .unwrap();
            assert_eq!(result(name, &left), json!("left"), "{name}");
            let next = session
                .run(call(LOOK_FOR, json!({"needle": marker}), Vec::new()))
                .unwrap();
            assert_eq!(
                result(name, &next)["found"],
                json!([]),
                "{name}: a process of the last call (detached: {detach}) was alive in the next"
            );
        }
        session.destroy().unwrap();
    }
}

#[test]
fn g19_a_calls_secret_is_in_no_process_of_the_next_call_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    for (backend, _) in backends(state.path()) {
        let name = backend.name();
        let mut session = open(backend.as_ref(), tree.path());
        let secret = marker();
        let secret_env = || {
            vec![EnvVar {
                name: "TOOL_TOKEN".to_owned(),
                value: Zeroizing::new(secret.clone()),
            }]
        };
        // The call holding the secret sees it, and leaves a process holding it behind.
        let holder = session
            .run(call(LOOK_FOR, json!({"needle": secret}), secret_env()))
            .unwrap();
        assert_eq!(result(name, &holder)["mine"], json!(true), "{name}");
        let left = session
            .run(call(
                LEAVE_ONE_BEHIND,
                json!({"marker": "holder", "detach": false}),
                secret_env(),
            ))
            .unwrap();
        assert_eq!(result(name, &left), json!("left"), "{name}");
        let next = session
            .run(call(LOOK_FOR, json!({"needle": secret}), Vec::new()))
            .unwrap();
        assert_eq!(
            result(name, &next),
            json!({"found": [], "mine": false}),
            "{name}: the secret of an earlier call was visible to the next"
        );
        drop(session);
    }
}

#[test]
fn g12_a_calls_changes_reach_the_session_tree_only_through_write_file_needs_root() {
    let state = tempfile::tempdir().unwrap();
    for (backend, _) in backends(state.path()) {
        let name = backend.name();
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("notes.txt"), "first\n").unwrap();
        let mut session = open(backend.as_ref(), tree.path());
        let notes = RelPath::parse("notes.txt").unwrap();
        assert_eq!(session.read_file(&notes).unwrap(), b"first\n", "{name}");
        let writer = "def main():\n    open('notes.txt', 'w').write('changed\\n')\n    return 1\n";
        let changed = session.run(call(writer, json!({}), Vec::new())).unwrap();
        result(name, &changed);
        // The change came back as data and is not in the tree until it is written.
        assert_eq!(changed.copy_back.files.len(), 1, "{name}");
        assert_eq!(session.read_file(&notes).unwrap(), b"first\n", "{name}");
        let file = &changed.copy_back.files[0];
        session
            .write_file(&file.path, file.contents().unwrap_or_default())
            .unwrap();
        let reader = "def main():\n    return open('notes.txt').read()\n";
        let read = session.run(call(reader, json!({}), Vec::new())).unwrap();
        assert_eq!(result(name, &read), json!("changed\n"), "{name}");
        // Never through a link.
        std::os::unix::fs::symlink("/etc/passwd", tree.path().join("link")).unwrap();
        let link = RelPath::parse("link").unwrap();
        assert!(session.read_file(&link).is_err(), "{name}");
        assert!(session.write_file(&link, b"x").is_err(), "{name}");
        assert_eq!(
            std::fs::read_link(tree.path().join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
        session.destroy().unwrap();
    }
}

#[test]
fn g6_a_session_whose_call_failed_as_a_whole_runs_nothing_more_needs_root() {
    let state = tempfile::tempdir().unwrap();
    for (backend, _) in backends(state.path()) {
        let name = backend.name();
        let tree = tempfile::tempdir().unwrap();
        let mut session = open(backend.as_ref(), tree.path());
        // The tree goes away under the session: staging the next call fails as a whole.
        let path = tree.path().to_path_buf();
        drop(tree);
        assert!(!path.exists());
        let failed = session.run(call("def main():\n    return 1\n", json!({}), Vec::new()));
        assert!(failed.is_err(), "{name}: a call without its tree ran");
        std::fs::create_dir(&path).unwrap();
        let refused = session.run(call("def main():\n    return 1\n", json!({}), Vec::new()));
        let error = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("session already ended"), "{name}: {error}");
        std::fs::remove_dir(&path).unwrap();
    }
}
