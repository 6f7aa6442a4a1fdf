//! Running a probe in the local backend and reading its report.

use std::path::PathBuf;
use std::sync::Arc;

use sandbox::copyback::SecretScreen;
use sandbox::{EnvVar, Invocation, Limits, NetworkMode, Observation, Outcome, PythonPin};

/// The syscall helper every syscall probe starts with.
pub const SYSCALL_HELPER: &str = include_str!("../../probes/_syscall.py");

/// A screen that knows no secret, for probes that do not deal with credentials.
pub struct NoSecrets;

impl SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

/// Whether the seccomp filter is loaded for a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// The sandbox exactly as the platform builds it.
    Enforced,
    /// The same sandbox with the seccomp filter off: the control run of a syscall probe.
    OffForControl,
}

/// One probe run: its code, inputs, environment, limits and workspace folder.
pub struct Probe {
    code: String,
    inputs: serde_json::Value,
    env: Vec<(String, String)>,
    limits: Limits,
    work_dir: Option<PathBuf>,
    screen: Arc<dyn SecretScreen>,
    _work_holder: Option<tempfile::TempDir>,
}

impl Probe {
    pub fn new(code: &str, inputs: serde_json::Value) -> Probe {
        Probe {
            code: code.to_owned(),
            inputs,
            env: Vec::new(),
            limits: Limits::default(),
            work_dir: None,
            screen: Arc::new(NoSecrets),
            _work_holder: None,
        }
    }

    /// A syscall probe: the shared helper, then the probe's own code.
    pub fn with_syscall_helper(code: &str, inputs: serde_json::Value) -> Probe {
        Probe::new(&format!("{SYSCALL_HELPER}\n{code}"), inputs)
    }

    pub fn env(mut self, name: &str, value: &str) -> Probe {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn limits(mut self, limits: Limits) -> Probe {
        self.limits = limits;
        self
    }

    pub fn work_dir(mut self, folder: PathBuf) -> Probe {
        self.work_dir = Some(folder);
        self
    }

    pub fn screen(mut self, screen: Arc<dyn SecretScreen>) -> Probe {
        self.screen = screen;
        self
    }

    /// The invocation for a test that drives the backend itself (the platform-death test).
    pub fn invocation_for_platform_role(&mut self) -> Invocation {
        self.invocation()
    }

    fn invocation(&mut self) -> Invocation {
        let work_dir = match &self.work_dir {
            Some(folder) => folder.clone(),
            None => {
                let holder = tempfile::tempdir().unwrap();
                let folder = holder.path().to_path_buf();
                self._work_holder = Some(holder);
                folder
            }
        };
        Invocation {
            live: None,
            python: PythonPin {
                major: 3,
                minor: 11,
            },
            code: self.code.clone(),
            inputs_json: self.inputs.to_string(),
            env: self
                .env
                .iter()
                .map(|(name, value)| EnvVar {
                    name: name.clone(),
                    value: zeroize::Zeroizing::new(value.clone()),
                })
                .collect(),
            network: NetworkMode::None,
            limits: self.limits.clone(),
            files: workspace::StepFiles::scratch_folder(work_dir),
            screen: Arc::clone(&self.screen),
        }
    }

    /// Runs the probe in a fresh local sandbox.
    pub fn run(mut self, filter: Filter) -> Observation {
        let invocation = self.invocation();
        let observation = run_in_local_backend(invocation, filter);
        drop(self);
        observation
    }
}

/// The report a probe returned; panics with what the sandbox printed if it did not succeed.
pub fn report(observation: &Observation) -> serde_json::Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "the probe did not succeed: {other:?}\nstdout: {}\nstderr: {}\nnotes: {:?}",
            String::from_utf8_lossy(&observation.stdout),
            String::from_utf8_lossy(&observation.stderr),
            observation.isolation_notes
        ),
    }
}

/// Builds the local backend exactly as the platform would, in a state folder of its own, and
/// runs one invocation: enforced, or (for control runs) with the seccomp filter off.
fn run_in_local_backend(invocation: Invocation, filter: Filter) -> Observation {
    use sandbox::Isolation;
    let state = tempfile::tempdir().unwrap();
    let helper = std::path::Path::new(env!("CARGO_BIN_EXE_sandbox-jail"));
    let backend = sandbox::local::LocalBackend::for_tests(state.path(), helper)
        .unwrap_or_else(|error| panic!("the local backend cannot be built: {error}"));
    let observation = match filter {
        Filter::Enforced => backend.run(invocation),
        Filter::OffForControl => backend.run_without_seccomp_for_control_probe(invocation),
    };
    drop(backend);
    observation.unwrap_or_else(|error| panic!("the local backend failed: {error}"))
}
