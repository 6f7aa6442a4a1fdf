//! Isolation backends for step invocations: the jail helper, seccomp policy, egress policy,
//! copy-back filter, runner harness, warm pool.
//!
//! The contract every backend shares is here: an [`Invocation`] goes in, an [`Observation`]
//! (what was seen from outside the sandbox) comes out, through the [`Isolation`] trait. The
//! `local` backend ([`local::LocalBackend`]) builds a fresh hardened container per invocation
//! through the single-threaded jail helper ([`jail::jail_main`]).

#![allow(unsafe_code)]

pub mod backends;
pub mod copyback;
mod imports;
pub use crate::imports::{ImportProblem, import_problem};
pub mod net;
mod request;
pub mod session;

pub mod cgroup;
mod error;
pub mod gvisor;
mod helper_cell;
pub mod jail;
pub mod local;
pub mod mountinfo;
pub mod runtime;
pub mod slot;
mod tail;
pub mod unisolated;
mod warm;

use std::sync::Arc;
use std::time::Duration;

use zeroize::Zeroizing;

pub use crate::backends::{BackendKind, BackendOptions, Backends, EgressSettings};
pub use crate::error::Error;
pub use crate::helper_cell::{HELPER_CELLS, HELPER_MEMORY_BYTES, HELPER_TASKS, HelperCell};

/// The Python version a workflow pins (`python: "3.11"`); matched on major.minor exactly (G8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PythonPin {
    pub major: u16,
    pub minor: u16,
}

impl std::fmt::Display for PythonPin {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

/// What the step may reach over the network (G11): the one network type of every layer
/// (`ids::Network`).
pub use ids::Network as NetworkMode;

/// The resource limits of one invocation (G10).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Memory of the whole sandbox (cgroup), also the data-segment rlimit of each process.
    pub memory_bytes: u64,
    /// Processes and threads in the sandbox (cgroup pids.max and RLIMIT_NPROC).
    pub pids: u32,
    /// CPU seconds per process (RLIMIT_CPU); the cgroup also caps the sandbox at one core.
    pub cpu_seconds: u64,
    /// Wall-clock time from the request to the result; past it the sandbox is killed.
    pub wall: Duration,
    /// Largest file a process may write (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
    /// Size of the private `/tmp`.
    pub tmp_bytes: u64,
    /// Size of `/work`: the staged copy of the folder plus whatever the step writes there
    /// (a tmpfs of its own, so a step can never fill the host's disk).
    pub work_bytes: u64,
    /// Bytes of stdout plus stderr kept; the rest is dropped and marked truncated.
    pub output_bytes: usize,
    /// Open file descriptors per process (RLIMIT_NOFILE).
    pub open_files: u64,
}

/// Address space headroom above the memory limit (`RLIMIT_AS` and `RLIMIT_DATA`): thread
/// stacks (8 MiB each) and arenas reserve far more address space than they touch; the cgroup
/// holds the memory a step really uses. 4 GiB lets a step start its 512 tasks' worth of threads.
pub(crate) const ADDRESS_SPACE_HEADROOM: u64 = 4 * 1024 * 1024 * 1024;

/// The address-space limit of a sandbox whose memory limit is `memory_bytes`.
pub(crate) fn address_space(memory_bytes: u64) -> u64 {
    memory_bytes.saturating_add(ADDRESS_SPACE_HEADROOM)
}

/// The largest memory and CPU time an invocation may declare on this server (the operator's
/// maxima): the hard limits a sandbox prepared before its invocation is built with, lowered to
/// the invocation's own at the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitCeilings {
    pub memory_bytes: u64,
    pub cpu_seconds: u64,
}

impl Default for LimitCeilings {
    /// The built-in maxima of `spec::LimitMaxima::BUILT_IN` (2048 MiB, 3600 s).
    fn default() -> Self {
        Self {
            memory_bytes: 2048 * 1024 * 1024,
            cpu_seconds: 3600,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 * 1024 * 1024,
            // Threads count: a step may start 256 threads (a thread pool, CPython's own
            // threading tests); a fork bomb stays bounded by this and by the memory limit.
            pids: 512,
            cpu_seconds: 30,
            wall: Duration::from_secs(60),
            file_size_bytes: 16 * 1024 * 1024,
            tmp_bytes: 64 * 1024 * 1024,
            work_bytes: 128 * 1024 * 1024,
            output_bytes: 1024 * 1024,
            open_files: 256,
        }
    }
}

/// One declared environment variable of a step. The value may be a credential: it derives
/// nothing that could print or copy it, and is zeroed on drop.
pub struct EnvVar {
    pub name: String,
    pub value: Zeroizing<String>,
}

impl std::fmt::Debug for EnvVar {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EnvVar")
            .field("name", &self.name)
            .field("value", &"<hidden>")
            .finish()
    }
}

/// Everything one step invocation needs; consumed by [`Isolation::run`].
pub struct Invocation {
    pub python: PythonPin,
    /// The step's code; it must define `main`.
    pub code: String,
    /// The inputs as a JSON object; its keys become `main`'s keyword arguments.
    pub inputs_json: String,
    /// Exactly the environment the step declared.
    pub env: Vec<EnvVar>,
    pub network: NetworkMode,
    pub limits: Limits,
    /// What the step may see, staged in at `/work` (issue 39); results come back as data, the
    /// snapshot is never written.
    pub files: workspace::StepFiles,
    /// Decides which files hold a current credential and must not come back (G12).
    pub screen: Arc<dyn copyback::SecretScreen>,
    /// Told what the step prints as it prints it (the bytes kept, within the output limit),
    /// for a live view; the [`Observation`] still carries all of it. The local backend calls
    /// it from its watch loop, gVisor from its output readers; `unisolated` prints only at
    /// the end.
    pub live: Option<LiveOutput>,
}

/// Which stream a step printed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// What a step prints, as it prints it (see [`Invocation::live`]). Called on the backend's
/// watch or reader threads: it must return quickly.
pub type LiveOutput = Arc<dyn Fn(OutputStream, &[u8]) + Send + Sync>;

/// What happened to the step, as observed from outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `main` returned; its value serialised as JSON.
    Succeeded { result_json: Zeroizing<String> },
    /// The step failed with an error. `code_started` says whether any of the step's code ran.
    Failed {
        error: StepError,
        code_started: bool,
    },
    /// The step imports a module outside the pinned standard library (G9); nothing of the step
    /// ran.
    NeedsRepair { module: String, detail: String },
    /// The outcome is not known (timeout, kill, crash, or a networked step that did not return
    /// a well-formed result); the engine never retries it on its own (G14).
    Unknown { reason: UnknownReason },
    /// The step never started: a policy this backend cannot enforce.
    Refused { reason: String },
}

/// A structured error raised by the step's code, with traceback lines into `step.py`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    pub kind: String,
    pub message: String,
    pub traceback: Vec<String>,
}

/// Why an outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownReason {
    WallTimeout,
    CpuLimit,
    MemoryLimit,
    Killed { signal: i32 },
    Crashed { detail: String },
    MalformedReport { detail: String },
    OutputLimit,
}

/// What was observed from outside the sandbox after one invocation.
pub struct Observation {
    pub outcome: Outcome,
    /// What the step printed, raw (it may hold a value it was granted): zeroed when dropped.
    pub stdout: Zeroizing<Vec<u8>>,
    pub stderr: Zeroizing<Vec<u8>>,
    /// True when stdout plus stderr went over the output limit and the rest was dropped.
    pub output_truncated: bool,
    pub copy_back: copyback::CopyBack,
    /// The exact interpreter version, e.g. "3.11.2", from discovery, never from the sandbox.
    pub interpreter: String,
    pub backend: &'static str,
    /// What this run's isolation lacked or how it differed, e.g. "landlock unavailable: ...".
    pub isolation_notes: Vec<String>,
}

impl Observation {
    /// What a backend observed of a step that never started: refused for `reason`.
    pub(crate) fn refused(backend: &'static str, interpreter: String, reason: &str) -> Observation {
        Observation::nothing_ran(
            backend,
            interpreter,
            Outcome::Refused {
                reason: reason.to_string(),
            },
        )
    }

    /// What a backend observes of a step whose code imports a module outside its pinned
    /// standard library, or whose imports cannot be read (G9): it needs repair, and no sandbox
    /// was made for it (the check runs on the platform, before anything else; see
    /// [`imports`]).
    pub(crate) fn needs_repair_before_any_sandbox(
        backend: &'static str,
        invocation: &Invocation,
        runtime: &runtime::Runtime,
    ) -> Option<Observation> {
        let outcome = match imports::verdict(&invocation.code, &runtime.stdlib_module_names) {
            imports::Verdict::Clean => return None,
            imports::Verdict::Foreign(foreign) => Outcome::NeedsRepair {
                detail: imports::needs_repair_detail(&foreign, invocation.python),
                module: foreign.module,
            },
            // Not an import (an empty module, as for code that does not compile): code whose
            // imports are not known does not run.
            imports::Verdict::Unread(unread) => Outcome::NeedsRepair {
                detail: imports::unread_detail(&unread),
                module: String::new(),
            },
        };
        Some(Observation::nothing_ran(
            backend,
            runtime.version.clone(),
            outcome,
        ))
    }

    /// An observation with `outcome` and nothing else: no sandbox ran anything.
    fn nothing_ran(backend: &'static str, interpreter: String, outcome: Outcome) -> Observation {
        Observation {
            outcome,
            stdout: Zeroizing::default(),
            stderr: Zeroizing::default(),
            output_truncated: false,
            copy_back: copyback::CopyBack::default(),
            interpreter,
            backend,
            isolation_notes: Vec::new(),
        }
    }
}

/// Nanoseconds since the epoch: with the slot index, a name no other sandbox has.
pub(crate) fn unique_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default()
}

/// An isolation backend: runs one invocation in a sandbox created for it and destroyed after.
pub trait Isolation: Send + Sync {
    /// The backend's name as recorded with each run ("local", "gvisor", "unisolated").
    fn name(&self) -> &'static str;
    /// Runs one invocation. `Err` means the sandbox could not be built or observed as the
    /// policy requires (fail closed); the step's own failures are `Ok` with an [`Outcome`].
    fn run(&self, invocation: Invocation) -> Result<Observation, Error>;
    /// Whether an invocation pinned to `python` with `network` could run here at all, asked
    /// when a run starts so that a run which could never finish is refused before any of its
    /// steps runs or waits at a gate. `run` refuses the same whatever this answered.
    fn availability(&self, python: PythonPin, network: NetworkMode) -> Result<(), Unavailable>;
    /// Opens one step's session (an agent step's sandbox for its whole life, issue 16 §4):
    /// every call in it runs as its own process tree, gone before the next call starts.
    /// Required, so that a wrapper cannot silently stand in a weaker session for its backend's.
    fn open_session(
        &self,
        spec: session::SessionSpec,
    ) -> Result<Box<dyn session::Session + '_>, Error>;
    /// A cell for one of the platform's own helper processes (an agent step's file-tool
    /// helper): a host uid of its own and a group with a memory and a task limit, so a helper
    /// is held like a sandbox and two helpers never share an identity. Required, for the same
    /// reason as `open_session`.
    fn helper_cell(&self) -> Result<HelperCell, Error>;
}

/// What a backend cannot give an invocation, in terms the binary turns into the setting that
/// would fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The pinned Python version is not among this server's runtimes (G8).
    Python {
        requested: PythonPin,
        /// Exact versions with their paths, e.g. "3.11.2 (/usr/bin/python3.11)".
        available: String,
    },
    /// `public_egress` with no egress network configured.
    EgressNotConfigured,
}

/// [`Isolation::availability`] of a backend that isolates its steps (local, gVisor): the
/// interpreter, and for `public_egress` an egress network.
pub(crate) fn isolated_availability(
    runtimes: &runtime::Runtimes,
    egress: Option<&net::EgressOptions>,
    python: PythonPin,
    network: NetworkMode,
) -> Result<(), Unavailable> {
    python_available(runtimes, python)?;
    if network == NetworkMode::PublicEgress && egress.is_none() {
        return Err(Unavailable::EgressNotConfigured);
    }
    Ok(())
}

/// The runtime part of [`Isolation::availability`], shared by every backend.
pub(crate) fn python_available(
    runtimes: &runtime::Runtimes,
    python: PythonPin,
) -> Result<(), Unavailable> {
    match runtimes.get(python) {
        Ok(_) => Ok(()),
        Err(Error::RuntimeNotAvailable {
            requested,
            available,
        }) => Err(Unavailable::Python {
            requested,
            available,
        }),
        Err(_) => Err(Unavailable::Python {
            requested: python,
            available: String::from("no usable Python interpreter"),
        }),
    }
}
