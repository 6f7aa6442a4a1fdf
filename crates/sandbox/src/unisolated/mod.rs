//! The `unisolated` backend (G13): the step runs as a plain child process of the platform, for
//! a single person on their own machine ("your laptop, your call").
//!
//! What it still does: an empty environment plus the declared variables only; a scratch copy
//! of the folder as the working directory (staged and collected through the copy-back filter,
//! so `.secrets` and `.journal` are never visible and nothing is written back unfiltered); the
//! same harness as the local backend, run with the pinned interpreter as `python -I -S`; a
//! wall-clock limit that kills the whole process group; rlimits on CPU time, data size, file
//! size and open files; output caps. What it does not do: namespaces, seccomp, capability or
//! filesystem restrictions, network policy, a process-count limit, or tracking of processes
//! that leave the process group. Every observation says so in its `isolation_notes`, starting
//! with "not isolated", and the backend is refused whenever the server has or would get more
//! than one account ([`unisolated_allowed`]).

mod child;
mod outcome;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use zeroize::Zeroizing;

use crate::copyback::{self, CopyBackPolicy};
use crate::runtime::{RuntimeOptions, Runtimes};
use crate::{Error, Invocation, Isolation, NetworkMode, Observation};

/// The harness, the same file the local backend runs inside its sandboxes.
const RUNNER_PY: &str = include_str!("../../harness/runner.py");

/// The backend's name, as recorded with every run.
pub const BACKEND_NAME: &str = "unisolated";

/// The note every observation of this backend starts with.
pub const NOT_ISOLATED_NOTE: &str = "not isolated: the step ran as a plain child process of the platform, as the platform's own \
     user, without namespaces, seccomp, capability or filesystem restrictions (the unisolated \
     backend: your laptop, your call)";

/// Refuses the unisolated backend unless the server has (or, after the change being made,
/// would have) at most one account. The account store calls it at start, before creating an
/// account (with the count after creation) and before each run.
pub fn unisolated_allowed(account_count_after: usize) -> Result<(), Error> {
    if account_count_after <= 1 {
        return Ok(());
    }
    Err(Error::LayerFailed {
        layer: String::from("single-account check of the unisolated backend"),
        detail: format!(
            "the unisolated backend gives steps no isolation, so it serves a server with one \
             account only; this server would have {account_count_after}. Use the local or gvisor \
             backend."
        ),
    })
}

/// Configuration of the unisolated backend.
#[derive(Debug, Clone)]
pub struct UnisolatedOptions {
    /// Where scratch folders and the harness live (created if missing, not shared).
    pub state_dir: PathBuf,
    /// Which interpreters to offer.
    pub runtimes: RuntimeOptions,
    /// The copy-back filter's caps.
    pub copy_back: CopyBackPolicy,
}

impl UnisolatedOptions {
    /// Defaults for everything but where state lives.
    pub fn new(state_dir: PathBuf) -> Self {
        Self {
            state_dir,
            runtimes: RuntimeOptions::default(),
            copy_back: CopyBackPolicy::default(),
        }
    }
}

/// The unisolated backend.
pub struct UnisolatedBackend {
    options: UnisolatedOptions,
    runtimes: Runtimes,
    harness: PathBuf,
    next_scratch: AtomicU64,
}

impl UnisolatedBackend {
    /// Prepares the state folder and the harness, and discovers the runtimes. The caller must
    /// have checked [`unisolated_allowed`] with the server's account count.
    pub fn new(options: UnisolatedOptions) -> Result<Self, Error> {
        let scratch_root = options.state_dir.join("scratch");
        let harness_dir = options.state_dir.join("harness");
        for dir in [&options.state_dir, &scratch_root, &harness_dir] {
            std::fs::create_dir_all(dir)
                .map_err(|source| Error::io("cannot create", dir, source))?;
        }
        let harness = write_harness(&harness_dir)?;
        let runtimes = Runtimes::discover(&options.runtimes)?;
        Ok(Self {
            options,
            runtimes,
            harness,
            next_scratch: AtomicU64::new(0),
        })
    }

    /// The runtimes this backend offers.
    pub fn runtimes(&self) -> &Runtimes {
        &self.runtimes
    }

    fn new_scratch(&self) -> Result<ScratchDir, Error> {
        use std::os::unix::fs::DirBuilderExt;
        let root = self.options.state_dir.join("scratch");
        loop {
            let sequence = self.next_scratch.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.subsec_nanos());
            let path = root.join(format!("{}-{sequence}-{nanos:08x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(ScratchDir { path }),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(Error::io("cannot create", &path, source)),
            }
        }
    }
}

impl Isolation for UnisolatedBackend {
    fn name(&self) -> &'static str {
        BACKEND_NAME
    }

    fn run(&self, invocation: Invocation) -> Result<Observation, Error> {
        let runtime = self.runtimes.get(invocation.python)?;
        if let Some(observation) =
            Observation::needs_repair_before_any_sandbox(BACKEND_NAME, &invocation, runtime)
        {
            return Ok(observation);
        }
        let scratch = self.new_scratch()?;
        let work = scratch.path.join("work");
        std::fs::create_dir(&work).map_err(|source| Error::io("cannot create", &work, source))?;
        let owner = (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
        let manifest = copyback::stage_in(&invocation.files, &work, owner)?;

        let watched = child::run_child(runtime, &self.harness, &work, &invocation)?;
        let outcome = outcome::interpret(&watched, invocation.network);

        // The group is dead and the main process reaped: only now is the folder read back.
        let copy_back = copyback::collect(
            &work,
            &manifest,
            &self.options.copy_back,
            invocation.screen.as_ref(),
        )?;
        drop(scratch);
        Ok(Observation {
            outcome,
            stdout: Zeroizing::new(watched.stdout),
            stderr: Zeroizing::new(watched.stderr),
            output_truncated: watched.output_truncated,
            copy_back,
            interpreter: runtime.version.clone(),
            backend: BACKEND_NAME,
            isolation_notes: notes(invocation.network, &manifest),
        })
    }

    /// The unisolated backend's `public_egress` is this machine's own network (its records say
    /// so): only the Python version can be missing.
    fn availability(
        &self,
        python: crate::PythonPin,
        _network: NetworkMode,
    ) -> Result<(), crate::Unavailable> {
        crate::python_available(&self.runtimes, python)
    }

    /// Each call a plain child process in a scratch copy of the session's tree, its process
    /// group killed when it ends; every observation says "not isolated".
    fn open_session(
        &self,
        spec: crate::session::SessionSpec,
    ) -> Result<Box<dyn crate::session::Session + '_>, Error> {
        Ok(Box::new(crate::session::FreshPerCall::open(self, spec)?))
    }

    fn helper_cell(&self) -> Result<crate::HelperCell, Error> {
        Ok(crate::HelperCell::unconfined())
    }
}

/// The isolation notes of one run: what this backend did not enforce.
fn notes(network: NetworkMode, manifest: &copyback::Manifest) -> Vec<String> {
    let mut notes = vec![String::from(NOT_ISOLATED_NOTE)];
    notes.push(match network {
        NetworkMode::None => String::from(
            "network not enforced: the step declared `network: none`, but this backend cannot \
             take the network away; it could reach whatever this machine can",
        ),
        NetworkMode::PublicEgress => String::from(
            "network not enforced: `public_egress` here is your laptop's own network, with none \
             of the denied ranges (private addresses, the metadata endpoint, the platform's own \
             services) blocked",
        ),
    });
    notes.push(String::from(
        "limits partly enforced: wall time (the process group is killed), CPU time, data size, \
         file size and open files by rlimit; no process-count limit, and processes that start a \
         session of their own are not tracked",
    ));
    if !manifest.skipped().is_empty() {
        notes.push(format!(
            "{} entries of the folder were not staged (protected paths, links, special files)",
            manifest.skipped().len()
        ));
    }
    notes
}

/// A scratch folder removed on drop, on every path out of a run.
struct ScratchDir {
    path: PathBuf,
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // remove_dir_all never follows symbolic links the step may have left.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn write_harness(dir: &Path) -> Result<PathBuf, Error> {
    use std::os::unix::fs::PermissionsExt;
    let target = dir.join("runner.py");
    if std::fs::read_to_string(&target).is_ok_and(|current| current == RUNNER_PY) {
        return Ok(target);
    }
    // Written beside and renamed, so a concurrent reader never sees half a harness.
    let temporary = dir.join(format!("runner.py.{}", std::process::id()));
    std::fs::write(&temporary, RUNNER_PY)
        .map_err(|source| Error::io("cannot write", &temporary, source))?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o444))
        .map_err(|source| Error::io("cannot chmod", &temporary, source))?;
    std::fs::rename(&temporary, &target)
        .map_err(|source| Error::io("cannot rename", &target, source))?;
    Ok(target)
}

#[cfg(test)]
mod tests;
