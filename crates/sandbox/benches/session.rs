//! The agent step's script calls (issue 16 §4), each beside its baseline measured in the same
//! run, on `local` and on `gvisor`:
//!
//! 1. A custom tool call of a trivial script in an agent's session (`Session::run`: the
//!    pinned script's `main(**arguments)` with its arguments and one secret in its
//!    environment, `/work` staged from a view holding the agent's folder and a shared note)
//!    against a cold code step (`Isolation::run` of a trivial `main` over an empty folder).
//!    Target: ≤ 1.2x the cold step. Alternating, medians.
//! 2. On gvisor, a session's call against a fresh runsc sandbox per call (`Isolation::run`
//!    of the same script): both are a fresh runsc sandbox today (`FreshPerCall`), so the
//!    figure is the session layer's own cost; a runsc sandbox kept for the step's life is not
//!    built yet (docs/sandbox.md, "Sessions").
//!
//! 3. On gvisor, a session's call with a warm pool (a pre-started runsc sandbox claimed per
//!    call; the refill is left a second between calls, untimed, as the model's turn leaves it
//!    in an agent step), beside the cold call above. `scripts/bench` puts `runsc exec` into a
//!    kept sandbox next to it (the other design: one sandbox for the step, a process per call).
//!
//! Run as root: `cargo bench -p sandbox --bench session` (`-- N` rounds, default 20 on local,
//! a quarter of that on gvisor; gvisor is skipped with a line saying so when runsc is absent).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::gvisor::GvisorBackend;
use sandbox::local::LocalBackend;
use sandbox::session::{Call, SessionSpec};
use sandbox::{EnvVar, Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};
use zeroize::Zeroizing;

struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

const TOOL: &str = "import os\n\ndef main(start, end):\n    return {'from': start, 'to': end, \
                    'token': len(os.environ['RELEASES_API_TOKEN'])}\n";
const STEP: &str = "def main():\n    return {'ok': True}\n";
const PYTHON: PythonPin = PythonPin {
    major: 3,
    minor: 11,
};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn succeeded(outcome: &Outcome) {
    assert!(
        matches!(outcome, Outcome::Succeeded { .. }),
        "the benchmark's call did not succeed: {outcome:?}"
    );
}

fn cold_step(backend: &dyn Isolation, folder: &Path) -> Duration {
    let started = Instant::now();
    let observation = backend
        .run(Invocation {
            live: None,
            python: PYTHON,
            code: STEP.to_owned(),
            inputs_json: "{}".to_owned(),
            env: Vec::new(),
            network: NetworkMode::None,
            limits: Limits::default(),
            files: workspace::StepFiles::scratch_folder(folder.to_path_buf()),
            screen: Arc::new(NoSecrets),
        })
        .unwrap();
    let elapsed = started.elapsed();
    succeeded(&observation.outcome);
    elapsed
}

fn secret() -> Vec<EnvVar> {
    vec![EnvVar {
        name: "RELEASES_API_TOKEN".to_owned(),
        value: Zeroizing::new("rel-token-3f9a1c77e2b04d6d9a51".to_owned()),
    }]
}

fn fresh_tool_call(backend: &dyn Isolation, view: &Path) -> Duration {
    let started = Instant::now();
    let observation = backend
        .run(Invocation {
            live: None,
            python: PYTHON,
            code: TOOL.to_owned(),
            inputs_json: r#"{"start":"2026-11-23","end":"2026-11-29"}"#.to_owned(),
            env: secret(),
            network: NetworkMode::None,
            limits: Limits::default(),
            files: workspace::StepFiles::scratch_folder(view.to_path_buf()),
            screen: Arc::new(NoSecrets),
        })
        .unwrap();
    let elapsed = started.elapsed();
    succeeded(&observation.outcome);
    elapsed
}

fn measure(name: &str, backend: &dyn Isolation, rounds: usize) {
    let empty = tempfile::tempdir().unwrap();
    let view = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(view.path().join("tools")).unwrap();
    std::fs::create_dir_all(view.path().join("shared/notes")).unwrap();
    std::fs::write(view.path().join("AGENT.md"), "---\nname: digest\n---\n").unwrap();
    std::fs::write(view.path().join("tools/release_notes.py"), TOOL).unwrap();
    std::fs::write(
        view.path().join("shared/notes/week.md"),
        "Monday: v1.2 shipped.\n",
    )
    .unwrap();
    let mut session = backend
        .open_session(SessionSpec {
            python: PYTHON,
            network: NetworkMode::None,
            limits: Limits::default(),
            tree: view.path().to_path_buf(),
            screen: Arc::new(NoSecrets),
        })
        .unwrap();
    let mut tool_call = || {
        let started = Instant::now();
        let observation = session
            .run(Call {
                code: TOOL.to_owned(),
                inputs_json: r#"{"start":"2026-11-23","end":"2026-11-29"}"#.to_owned(),
                env: secret(),
                wall: Limits::default().wall,
            })
            .unwrap();
        let elapsed = started.elapsed();
        succeeded(&observation.outcome);
        elapsed
    };
    // One of each first, unmeasured: runtime discovery and first-touch costs.
    cold_step(backend, empty.path());
    tool_call();
    let (mut cold, mut tool, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        cold.push(cold_step(backend, empty.path()));
        tool.push(tool_call());
        fresh.push(fresh_tool_call(backend, view.path()));
    }
    let (cold, tool, fresh) = (median(cold), median(tool), median(fresh));
    let ratio = tool.as_secs_f64() / cold.as_secs_f64();
    println!(
        "{name}: custom tool call in the session {} vs cold code step {} = {ratio:.2}x (target \
         <= 1.2x: {}), {rounds} rounds, medians",
        ms(tool),
        ms(cold),
        if ratio <= 1.2 { "met" } else { "MISSED" }
    );
    println!(
        "{name}: the same call in a fresh sandbox per call (Isolation::run) {} = session {:.2}x",
        ms(fresh),
        tool.as_secs_f64() / fresh.as_secs_f64()
    );
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(20);
    println!(
        "== agent sessions: a custom tool call against a cold code step (both cold: pool size 0) =="
    );
    let state = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(state.path().join("local")).unwrap();
    std::fs::create_dir_all(state.path().join("gvisor")).unwrap();
    let local = LocalBackend::for_tests(
        &state.path().join("local"),
        Path::new(env!("CARGO_BIN_EXE_sandbox-jail")),
    )
    .unwrap();
    measure("local", &local, rounds);
    drop(local);
    match GvisorBackend::for_tests(&state.path().join("gvisor")) {
        Ok(gvisor) => measure("gvisor", &gvisor, (rounds / 4).max(3)),
        Err(error) => {
            println!("gvisor: not measured, the backend cannot start here: {error}");
            return;
        }
    }
    std::fs::create_dir_all(state.path().join("gvisor-warm")).unwrap();
    let warm = GvisorBackend::for_tests_with(&state.path().join("gvisor-warm"), |options| {
        options.pool_size = 1;
    })
    .unwrap();
    warm_session("gvisor", &warm, (rounds / 4).max(3));
}

/// Session calls on a backend with a warm pool, each after an untimed pause for the refill.
fn warm_session(name: &str, backend: &dyn Isolation, rounds: usize) {
    let view = tempfile::tempdir().unwrap();
    let mut session = backend
        .open_session(SessionSpec {
            python: PYTHON,
            network: NetworkMode::None,
            limits: Limits::default(),
            tree: view.path().to_path_buf(),
            screen: Arc::new(NoSecrets),
        })
        .unwrap();
    let mut samples = Vec::new();
    for round in 0..=rounds {
        std::thread::sleep(Duration::from_secs(1));
        let started = Instant::now();
        let observation = session
            .run(Call {
                code: TOOL.to_owned(),
                inputs_json: r#"{"start":"2026-11-23","end":"2026-11-29"}"#.to_owned(),
                env: secret(),
                wall: Limits::default().wall,
            })
            .unwrap();
        let elapsed = started.elapsed();
        succeeded(&observation.outcome);
        if round > 0 {
            samples.push(elapsed);
        }
    }
    println!(
        "{name}: custom tool call in the session with a warm pool {} ({rounds} rounds, median; \
         a fresh pre-started runsc sandbox per call)",
        ms(median(samples))
    );
}
