//! A session: one step's sandbox for the step's whole life (an agent step's), in which each
//! call (a `Run`, a custom tool) runs as its own process tree, every process of which is gone
//! before the next call starts (issue 16 §4).
//!
//! The interface is the four things a Kubernetes pod can do, so that a `kubernetes` backend
//! can implement it later (docs/sandbox.md, "Sessions"): [`Isolation::open_session`] creates
//! it from the step's declaration ([`SessionSpec`]), [`Session::run`] runs one call,
//! [`Session::read_file`] and [`Session::write_file`] reach the session's tree, and
//! [`Session::destroy`] (also on drop, and after any call that failed as a whole) removes it.
//!
//! [`FreshPerCall`] is the session every backend offers today: each call is a fresh sandbox
//! of the backend (a new pid namespace and cgroup on `local`, a new runsc sandbox on `gvisor`,
//! a new process group on `unisolated`), staged from the session's tree. That is the strongest
//! reading of "its own process tree": no process of one call can exist in the sandbox of the
//! next, because that sandbox did not exist when the call ended.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use workspace::{RelPath, Tree};

use crate::{EnvVar, Error, Invocation, Isolation, Limits, NetworkMode, Observation, PythonPin};

/// What a step declares for its session: everything a pod spec would hold.
pub struct SessionSpec {
    pub python: PythonPin,
    pub network: NetworkMode,
    /// The limits of each call (its wall time is the call's own, see [`Call::wall`]).
    pub limits: Limits,
    /// The host folder the session's `/work` is made from; the session owns it while it lives
    /// (it is the session's tree: [`Session::read_file`] and [`Session::write_file`] reach it).
    pub tree: PathBuf,
    /// Decides which files hold a current credential and must not come back (G12).
    pub screen: Arc<dyn crate::copyback::SecretScreen>,
}

/// One call in a session: the script, its arguments, and the environment of this call only
/// (a custom tool's secrets, G19; `Run` gets none).
pub struct Call {
    /// The module to run; it must define `main`.
    pub code: String,
    /// `main`'s keyword arguments as a JSON object.
    pub inputs_json: String,
    /// The environment of this call's process only.
    pub env: Vec<EnvVar>,
    /// How long the call may take; past it every process of the call is killed.
    pub wall: Duration,
}

/// One step's sandbox. Every call runs as its own process tree; when a call ends, every
/// process it started is gone before [`Session::run`] returns.
///
/// A call's changes to `/work` come back in the observation's `copy_back` (through the
/// copy-back filter, G12) and reach the session's tree only when the caller writes them with
/// [`Session::write_file`], after its own rules (what no step may write).
pub trait Session {
    /// The backend's name, as recorded with each call.
    fn backend(&self) -> &'static str;
    /// Runs one call. `Err` means the call's sandbox could not be built or observed as the
    /// policy requires; the session is then destroyed and refuses every later call.
    fn run(&mut self, call: Call) -> Result<Observation, Error>;
    /// Reads a regular file of the session's tree (never through a link).
    fn read_file(&self, path: &RelPath) -> Result<Vec<u8>, Error>;
    /// Writes a regular file of the session's tree (never through a link).
    fn write_file(&mut self, path: &RelPath, contents: &[u8]) -> Result<(), Error>;
    /// Kills every process of the session and removes what it holds. Dropping a session does
    /// the same.
    fn destroy(self: Box<Self>) -> Result<(), Error>;
}

/// The largest file [`Session::read_file`] returns.
const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// A session whose every call is a fresh sandbox of `backend`, staged from the session's
/// tree and destroyed when the call ends (the backend's own [`Isolation::run`]).
pub struct FreshPerCall<'a, B: Isolation + ?Sized> {
    backend: &'a B,
    spec: SessionSpec,
    /// Set by a call that failed as a whole and by `destroy`: no later call runs.
    ended: bool,
}

impl<'a, B: Isolation + ?Sized> FreshPerCall<'a, B> {
    /// The session of `spec` on `backend`; the tree must be a folder the platform can open.
    pub fn open(backend: &'a B, spec: SessionSpec) -> Result<Self, Error> {
        Tree::open(&spec.tree).map_err(|error| tree_error("cannot open", &spec.tree, error))?;
        Ok(Self {
            backend,
            spec,
            ended: false,
        })
    }
}

fn tree_error(action: &'static str, path: &std::path::Path, error: impl ToString) -> Error {
    Error::io(action, path, std::io::Error::other(error.to_string()))
}

impl<B: Isolation + ?Sized> Session for FreshPerCall<'_, B> {
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    fn run(&mut self, call: Call) -> Result<Observation, Error> {
        if self.ended {
            return Err(Error::LayerFailed {
                layer: String::from("session"),
                detail: String::from(
                    "this step's sandbox session already ended (a call failed as a whole or \
                     the step is over); no further call runs in it",
                ),
            });
        }
        let mut limits = self.spec.limits.clone();
        limits.wall = call.wall;
        let invocation = Invocation {
            live: None,
            python: self.spec.python,
            code: call.code,
            inputs_json: call.inputs_json,
            env: call.env,
            network: self.spec.network,
            limits,
            files: workspace::StepFiles::scratch_folder(self.spec.tree.clone()),
            screen: self.spec.screen.clone(),
        };
        let observed = self.backend.run(invocation);
        if observed.is_err() {
            self.ended = true;
        }
        observed
    }

    fn read_file(&self, path: &RelPath) -> Result<Vec<u8>, Error> {
        let tree = Tree::open(&self.spec.tree)
            .map_err(|error| tree_error("cannot open", &self.spec.tree, error))?;
        tree.read(path, 0, MAX_READ_BYTES)
            .map(|(bytes, _)| bytes)
            .map_err(|error| tree_error("cannot read", &self.spec.tree.join(path.as_path()), error))
    }

    fn write_file(&mut self, path: &RelPath, contents: &[u8]) -> Result<(), Error> {
        let tree = Tree::open(&self.spec.tree)
            .map_err(|error| tree_error("cannot open", &self.spec.tree, error))?;
        tree.write(path, contents).map_err(|error| {
            tree_error("cannot write", &self.spec.tree.join(path.as_path()), error)
        })
    }

    fn destroy(mut self: Box<Self>) -> Result<(), Error> {
        // Nothing outlives a call: each call's sandbox was destroyed when it ended.
        self.ended = true;
        Ok(())
    }
}
