//! The `local` backend: a fresh hardened container on this host for every invocation, built by
//! the jail helper (see [`crate::jail`]) and destroyed after it, whatever happens (G6, G10).
//!
//! One invocation: take a slot (a host uid and an address no other live sandbox has), stage
//! the folder into a scratch copy owned by that uid, create the cgroups with the limits, build
//! the egress network for `public_egress`, exec the helper with the plan, hand the request to
//! the harness, watch stdout, stderr, the report channel and the helper's status under the
//! wall-clock limit, then kill whatever is left, remove the groups, collect the copy-back and
//! remove the scratch folder. Each of those is a guard that also runs on error and panic.

mod affinity;
mod claim;
mod helper;
mod kept;
pub(crate) mod outcome;
pub(crate) mod plan;
mod pool;
use pool::PlanAt;
mod priority;
mod reaper;
pub(crate) mod run;
pub(crate) mod scratch_fs;
pub use scratch_fs::SOURCE as SCRATCH_TMPFS_SOURCE;
mod spare;
mod spawn;
mod teardown;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cgroup::{CgroupLayout, CgroupOptions};
use crate::copyback::CopyBackPolicy;
use crate::runtime::{RuntimeOptions, Runtimes};
use crate::slot::SlotAllocator;
use crate::{Error, Invocation, Isolation, Observation};

/// The lowest host id a sandbox may map to: nothing below it is a sandbox's.
pub const MIN_UID_BASE: u32 = 65_536;

/// The harness, embedded at build time and written read-only into the state directory.
const RUNNER_PY: &str = include_str!("../../harness/runner.py");

/// Configuration of the local backend.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Where scratch folders, slot locks and the harness live (root-owned, not shared).
    pub state_dir: PathBuf,
    /// Where sandbox cgroups go.
    pub cgroups: CgroupOptions,
    /// Sandbox in slot N maps to host uid and gid `uid_base + N`; must be non-zero and in a
    /// range no real user or service on the host uses.
    pub uid_base: u32,
    /// How many sandboxes may exist at once.
    pub slots: u32,
    /// Which interpreters to offer.
    pub runtimes: RuntimeOptions,
    /// The jail helper: the program and the arguments before anything else
    /// (`(current_exe, ["__jail"])` for the platform's binary).
    pub helper: (PathBuf, Vec<OsString>),
    /// Warm sandboxes kept per class (Python version, network mode, limits); 0 means always
    /// cold.
    pub pool_size: usize,
    /// The egress network for `public_egress`; `None` refuses such steps.
    pub egress: Option<crate::net::EgressOptions>,
    /// The copy-back filter's caps.
    pub copy_back: CopyBackPolicy,
    /// The largest memory and CPU time an invocation may declare: the hard limits of a
    /// sandbox prepared before its invocation (warm, or built ahead).
    pub ceilings: crate::LimitCeilings,
    /// Helper cell N maps to host uid and gid `helper_uid_base + N` (see
    /// [`crate::HelperCell`]); a range no sandbox and no real user uses.
    pub helper_uid_base: u32,
    /// Where what every sandbox shares and no account ever holds (the harness compiled for
    /// each runtime, the runtimes' linked views) is kept between processes, so that a process
    /// that runs one step does not compile and link them again (newcomer 3, friction 3 of the
    /// round's issue: the default state folder is removed when its process ends). Checked at
    /// every start: root's, written by nobody else, its parent likewise; otherwise it is not
    /// used and the state folder holds them as before. Bound read-only into sandboxes; each
    /// entry keyed by content (the harness's digest; a stamp of the interpreter's identity, of
    /// each linked file's inode). `None`: in the state folder.
    pub kept_dir: Option<PathBuf>,
    /// TEST ONLY: every sandbox mounts the whole procfs, as on a kernel without `subset=pid`,
    /// so that tests check the masks that kernel relies on.
    #[cfg(feature = "test-controls")]
    pub test_whole_proc: bool,
}

impl LocalOptions {
    /// Defaults for everything but where state lives and which helper to exec.
    pub fn new(state_dir: PathBuf, helper: (PathBuf, Vec<OsString>)) -> Self {
        Self {
            state_dir,
            cgroups: CgroupOptions::default(),
            uid_base: crate::backends::LOCAL_UID_BASE,
            slots: 1024,
            runtimes: RuntimeOptions::default(),
            helper,
            pool_size: 0,
            egress: None,
            copy_back: CopyBackPolicy::default(),
            ceilings: crate::LimitCeilings::default(),
            helper_uid_base: crate::backends::LOCAL_HELPER_UID_BASE,
            kept_dir: None,
            #[cfg(feature = "test-controls")]
            test_whole_proc: false,
        }
    }

    fn scratch_dir(&self) -> PathBuf {
        self.state_dir.join("scratch")
    }

    fn slots_dir(&self) -> PathBuf {
        self.state_dir.join("slots")
    }

    /// The harness and its bytecode: in the kept folder, named by the harness's digest, or
    /// in the state folder.
    pub(crate) fn harness_dir(&self) -> PathBuf {
        match &self.kept_dir {
            Some(kept) => kept.join(format!(
                "harness-{}",
                &hex_digest(RUNNER_PY.as_bytes())[..16]
            )),
            None => self.state_dir.join("harness"),
        }
    }

    /// The runtimes' linked views (one tree per runtime, with its stamp).
    fn views_dir(&self) -> PathBuf {
        match &self.kept_dir {
            Some(kept) => kept.join("runtimes"),
            None => self.state_dir.join("runtimes"),
        }
    }

    /// The empty directory every sandbox's child mounts its tmpfs root on, in its own private
    /// mount namespace (so no sandbox's root is visible to the host or to another sandbox),
    /// before it pivots into it. One for all: a directory of its own per sandbox would cost a
    /// `mkdir` on the step's path and an `rmdir` of a former mount point in the teardown.
    /// Root's, empty, and never written.
    fn root_mountpoint(&self) -> PathBuf {
        self.state_dir.join("root")
    }
}

/// The local backend. Each [`Isolation::run`] uses a sandbox built for it alone (cold, or
/// warm from the pool) and destroys it.
pub struct LocalBackend {
    shared: Arc<Shared>,
    /// Tests give each backend its own cgroup parent and remove it on drop.
    remove_cgroup_parent_on_drop: bool,
}

/// What the backend, its pool and the pool's refill threads share.
pub(crate) struct Shared {
    pub(crate) options: LocalOptions,
    pub(crate) runtimes: Runtimes,
    pub(crate) cgroups: CgroupLayout,
    pub(crate) slots: SlotAllocator,
    pub(crate) helper_cells: crate::helper_cell::HelperCells,
    pub(crate) pool: pool::Pool,
    /// Tears finished sandboxes down off the request's path.
    pub(crate) reaper: reaper::Reaper,
    /// A jail helper exec'd ahead of time, waiting for the next sandbox's plan.
    pub(crate) spare: Arc<spare::SpareHelper>,
    /// Each runtime's read-only view as the sandbox mounts it (see
    /// [`crate::runtime::Runtime::linked_view`]).
    pub(crate) runtime_views:
        std::collections::HashMap<crate::PythonPin, Vec<crate::runtime::RuntimeMount>>,
    /// Why the kept folder was not used, when one was configured and refused.
    pub(crate) kept_refused: Option<String>,
    /// The tmpfs the scratch folders live on; unmounted when the last holder of `Shared` goes,
    /// after every other field (the last one declared), when no sandbox holds a folder in it.
    pub(crate) _scratch_fs: scratch_fs::ScratchFs,
}

impl LocalBackend {
    /// Prepares the state directory, discovers the runtimes and the cgroup layout.
    pub fn new(options: LocalOptions) -> Result<Self, Error> {
        let cgroups = CgroupLayout::detect(&options.cgroups)?;
        Self::with_layout(options, cgroups)
    }

    /// [`LocalBackend::new`] right after [`sweep_at_start`], with the cgroup layout the sweep
    /// detected (detecting it again costs a process start half a millisecond of cgroupfs
    /// reads and parent checks).
    pub fn new_after_sweep(options: LocalOptions, swept: Swept) -> Result<Self, Error> {
        Self::with_layout(options, swept.cgroups)
    }

    /// Builds the backend over a detected layout; a failure removes the cgroup parents that
    /// detection created, so a backend that never started leaves none behind.
    fn with_layout(options: LocalOptions, cgroups: CgroupLayout) -> Result<Self, Error> {
        let created = cgroups.clone();
        let built = Self::build(options, cgroups);
        if built.is_err() {
            created.remove_created_parents();
        }
        built
    }

    fn build(mut options: LocalOptions, cgroups: CgroupLayout) -> Result<Self, Error> {
        // The kept folder is used only when it is closed to everyone but root; held locked
        // while this process writes or checks what is kept there.
        let mut kept_refused = None;
        let kept_lock = match options.kept_dir.clone() {
            Some(kept) => match kept::prepare(&kept) {
                Ok(lock) => Some(lock),
                Err(reason) => {
                    kept_refused = Some(reason);
                    options.kept_dir = None;
                    None
                }
            },
            None => None,
        };
        if options.uid_base == 0 {
            return Err(Error::LayerFailed {
                layer: String::from("uid/gid maps"),
                detail: String::from(
                    "uid_base must be non-zero: the sandbox never maps to host root",
                ),
            });
        }
        // Below 65536 live the host's system and login users (and `nobody`), whose files a
        // sandbox mapped onto them would own; a range running into the top of the id space
        // reaches (uid_t)-1, which means "no change" to the kernel, not a user.
        let range_end = options.uid_base.checked_add(options.slots);
        if options.uid_base < MIN_UID_BASE || range_end.is_none_or(|end| end == u32::MAX) {
            return Err(Error::LayerFailed {
                layer: String::from("uid/gid maps"),
                detail: format!(
                    "uid_base {} with {} slots is outside the sandbox id range: every host id \
                     from uid_base to uid_base + slots must lie in {MIN_UID_BASE}..{}",
                    options.uid_base,
                    options.slots,
                    u32::MAX
                ),
            });
        }
        // The jail's child binds from these directories after it took the sandbox's
        // unprivileged id, so they must be searchable (never listable) by others; each
        // scratch folder below is searchable only by its own sandbox's group.
        for (dir, mode) in [
            (options.state_dir.clone(), 0o711),
            (options.scratch_dir(), 0o711),
            (options.harness_dir(), 0o755),
            (options.root_mountpoint(), 0o755),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|source| Error::io("cannot create", &dir, source))?;
            set_mode(&dir, mode)?;
        }
        // From here on a failure drops it, which unmounts it again.
        let scratch_fs = scratch_fs::ScratchFs::mount(&options.scratch_dir(), options.slots)?;
        write_harness(&options.harness_dir())?;
        let runtimes = Runtimes::discover(&options.runtimes)?;
        let views_dir = options.views_dir();
        std::fs::create_dir_all(&views_dir)
            .map_err(|source| Error::io("cannot create", &views_dir, source))?;
        set_mode(&views_dir, 0o711)?;
        let mut runtime_views = std::collections::HashMap::new();
        for runtime in runtimes.list() {
            compile_harness(&options.harness_dir(), runtime)?;
            let view_dir = views_dir.join(format!("{}.{}", runtime.pin.major, runtime.pin.minor));
            let view = runtime
                .linked_view(&view_dir)?
                .unwrap_or_else(|| runtime.mounts.clone());
            runtime_views.insert(runtime.pin, view);
        }
        drop(kept_lock);
        let slots = SlotAllocator::new(&options.slots_dir(), options.slots)?;
        let helper_cells =
            crate::helper_cell::HelperCells::new(&options.state_dir, options.helper_uid_base)?;
        if let Some(egress) = &options.egress {
            crate::net::install_policy(egress)?;
        }
        let pool = pool::Pool::new(options.pool_size);
        // The first request spawns its own helper (at the start of its sandbox's build) and
        // the first spare on the reaper's thread: a process that runs one step (`stepward run`)
        // never spawns a spare it cannot use.
        let spare = Arc::new(spare::SpareHelper::new(options.helper.clone()));
        let reaper = reaper::Reaper::start();
        Ok(Self {
            shared: Arc::new(Shared {
                options,
                runtimes,
                cgroups,
                slots,
                helper_cells,
                pool,
                reaper,
                spare,
                runtime_views,
                kept_refused,
                _scratch_fs: scratch_fs,
            }),
            remove_cgroup_parent_on_drop: false,
        })
    }

    /// Why the configured kept folder is not used (the state folder holds the harness and
    /// the views instead), if it is not.
    pub fn kept_folder_refused(&self) -> Option<&str> {
        self.shared.kept_refused.as_deref()
    }

    /// The same backend, which removes its cgroup parents when dropped (after tearing down
    /// every sandbox of its own). Only for the one process driving a data directory's runs
    /// (the platform's engine lock): another live backend over the same parent would lose it.
    pub fn removing_cgroup_parents_on_drop(mut self) -> Self {
        self.remove_cgroup_parent_on_drop = true;
        self
    }

    /// A backend for tests: state under `state_dir`, a cgroup parent unique to this process
    /// and backend (removed on drop), the given helper binary (in this crate's tests:
    /// `env!("CARGO_BIN_EXE_sandbox-jail")`), a uid range unlikely to collide with another
    /// test process.
    #[cfg(feature = "test-controls")]
    pub fn for_tests(state_dir: &Path, helper: &Path) -> Result<Self, Error> {
        Self::for_tests_with(state_dir, helper, |_| {})
    }

    /// [`LocalBackend::for_tests`] with a chance to change the options (pool size, limits of
    /// the slot range, egress) before the backend is built.
    #[cfg(feature = "test-controls")]
    pub fn for_tests_with(
        state_dir: &Path,
        helper: &Path,
        configure: impl FnOnce(&mut LocalOptions),
    ) -> Result<Self, Error> {
        // Unique without shared state: the process id and the clock's nanoseconds.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or_default();
        let process = std::process::id();
        let mut options =
            LocalOptions::new(state_dir.to_path_buf(), (helper.to_path_buf(), Vec::new()));
        options.cgroups.parent = format!("stepward-test-{process}-{nanos}");
        // A uid range of its own per backend (64 slots), so that concurrent tests, in one
        // process or several, practically never share a host uid.
        let range = (process.wrapping_mul(7919).wrapping_add(nanos / 1000)) % 100_000;
        options.uid_base = 1_900_000_000 + range * 64;
        options.slots = 64;
        configure(&mut options);
        let mut backend = Self::new(options)?;
        backend.remove_cgroup_parent_on_drop = true;
        Ok(backend)
    }

    /// Runs the invocation in the same jail with the seccomp filter off: only for control
    /// probes that show a denied syscall would otherwise have worked.
    #[cfg(feature = "test-controls")]
    pub fn run_without_seccomp_for_control_probe(
        &self,
        invocation: Invocation,
    ) -> Result<Observation, Error> {
        run::run(
            &self.shared,
            invocation,
            run::SeccompMode::DisabledForControlProbe,
        )
    }

    /// Starts building, now and off the caller's thread, the sandbox for a request the caller
    /// knows is coming (the CLI's first code step: the engine writes the run's record in the
    /// meantime). That request claims it like a warm one, waiting for it if it is not ready
    /// yet; nothing is built ahead again afterwards. Built after the start-up sweep, like every
    /// sandbox, and holding nothing of any tenant until it is claimed. A class this backend
    /// cannot build (an interpreter it lacks, `public_egress` without an egress network) builds
    /// nothing: the request then runs cold and reports why.
    pub fn prepare_ahead(&self, python: crate::PythonPin, network: crate::NetworkMode) {
        let class = pool::Class::of(python, network, &crate::Limits::default());
        pool::prepare_ahead(&self.shared, &class, None, PlanAt::Thread);
    }

    /// [`LocalBackend::prepare_ahead`] with a helper started before this backend existed
    /// ([`EarlyHelper::start`]): its exec (and for `none` its network namespace) overlapped
    /// the start-up sweep and the backend's set-up. The sandbox is built on the caller's
    /// thread up to its plan (slot, folder, groups: about a millisecond), so that when this
    /// returns its interpreter is loading; only the wait for it is left to a thread. A helper
    /// started for another network mode is ended unused.
    pub fn prepare_ahead_with(
        &self,
        python: crate::PythonPin,
        network: crate::NetworkMode,
        early: EarlyHelper,
    ) {
        let class = pool::Class::of(python, network, &crate::Limits::default());
        let helper = (early.network == network).then_some(early.helper);
        pool::prepare_ahead(&self.shared, &class, helper, PlanAt::Here);
    }

    /// The spare jail helper's pid, when one waits (tests check it holds nothing).
    #[cfg(feature = "test-controls")]
    pub fn spare_helper_pid(&self) -> Option<u32> {
        self.shared.spare.pid()
    }

    /// The runtimes this backend offers.
    pub fn runtimes(&self) -> &Runtimes {
        &self.shared.runtimes
    }

    /// Warm sandboxes waiting in the pool, over all classes.
    pub fn idle_sandboxes(&self) -> usize {
        self.shared.pool.idle_count()
    }

    /// The cgroup layout in use (tests check that groups are gone after a run).
    pub fn cgroup_layout(&self) -> &CgroupLayout {
        &self.shared.cgroups
    }

    /// The options this backend was built with.
    pub fn options(&self) -> &LocalOptions {
        &self.shared.options
    }
}

/// A jail helper started for the first sandbox of a backend that does not exist yet (a
/// one-step `stepward run`: issue 13, part 2). Like a spare, it holds nothing of any tenant
/// and no sandbox until its plan comes: it is exec'd with an empty environment and its
/// descriptors, and for `none` woken at once, so it makes the sandbox's own, empty network
/// namespace (the sandbox's request is the run that is starting). It can be started before
/// the start-up sweep: the sweep removes sandboxes, slots, folders and groups, and this helper
/// has none of them. Handed to [`LocalBackend::prepare_ahead_with`]; dropped, it exits.
pub struct EarlyHelper {
    helper: helper::Helper,
    network: crate::NetworkMode,
}

impl EarlyHelper {
    /// Spawns the helper `options` name, for a sandbox of `network`.
    pub fn start(options: &LocalOptions, network: crate::NetworkMode) -> Result<Self, Error> {
        let mut helper = helper::Helper::spawn_idle(&options.helper)?;
        if network == crate::NetworkMode::None {
            helper.wake_for_request()?;
        }
        Ok(Self { helper, network })
    }
}

impl std::fmt::Debug for EarlyHelper {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EarlyHelper")
            .field("pid", &self.helper.pid())
            .field("network", &self.network)
            .finish()
    }
}

impl Drop for LocalBackend {
    fn drop(&mut self) {
        // Idle warm sandboxes die with the backend.
        self.shared.pool.close();
        self.shared.spare.close();
        // Every finished sandbox is torn down before the backend is gone.
        self.shared.reaper.close();
        if self.remove_cgroup_parent_on_drop {
            let _ = self.shared.cgroups.sweep();
            self.shared.cgroups.remove_parents();
        }
    }
}

impl Isolation for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn run(&self, invocation: Invocation) -> Result<Observation, Error> {
        run::run(&self.shared, invocation, run::SeccompMode::Enforced)
    }

    fn availability(
        &self,
        python: crate::PythonPin,
        network: crate::NetworkMode,
    ) -> Result<(), crate::Unavailable> {
        crate::isolated_availability(
            &self.shared.runtimes,
            self.shared.options.egress.as_ref(),
            python,
            network,
        )
    }

    /// A fresh jail per call (a new pid namespace, cgroup and `/work`, staged from the
    /// session's tree): the strongest form of "each call its own process tree", and a warm
    /// sandbox from the pool makes it cheap. The jail's pid namespace dies with its first
    /// process, so nothing a call started can outlive it.
    fn open_session(
        &self,
        spec: crate::session::SessionSpec,
    ) -> Result<Box<dyn crate::session::Session + '_>, Error> {
        Ok(Box::new(crate::session::FreshPerCall::open(self, spec)?))
    }

    fn helper_cell(&self) -> Result<crate::HelperCell, Error> {
        self.shared.helper_cells.open(&self.shared.cgroups)
    }
}

/// What a start-up sweep removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub cgroups: usize,
    pub scratch_dirs: usize,
    pub networks: usize,
}

/// What [`sweep_at_start`] removed, and the cgroup layout it detected on the way, for
/// [`LocalBackend::new_after_sweep`].
#[derive(Debug)]
pub struct Swept {
    pub report: SweepReport,
    cgroups: CgroupLayout,
}

/// Kills and removes what a crashed platform left: sandbox cgroups (and every process in
/// them), scratch folders, unheld slot locks, and egress networks. Must run at start-up before
/// any sandbox of this platform exists, and before the engine's recovery.
pub fn sweep(options: &LocalOptions) -> Result<SweepReport, Error> {
    sweep_at_start(options).map(|swept| swept.report)
}

/// [`sweep`], keeping the cgroup layout for the backend built next.
pub fn sweep_at_start(options: &LocalOptions) -> Result<Swept, Error> {
    let mut report = SweepReport::default();
    let layout = CgroupLayout::detect(&options.cgroups)?;
    report.cgroups = layout.sweep()?;
    report.scratch_dirs = scratch_fs::sweep(&options.scratch_dir())?;
    SlotAllocator::new(&options.slots_dir(), options.slots)?.sweep()?;
    if let Some(egress) = &options.egress {
        let networks = crate::net::sweep(egress)?;
        report.networks = networks.host_links.len() + networks.namespaces.len();
    }
    Ok(Swept {
        report,
        cgroups: layout,
    })
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|source| Error::io("cannot chmod", path, source))
}

/// The harness's bytecode for one runtime, as a file name in the harness directory.
pub(crate) fn harness_bytecode_name(pin: crate::PythonPin) -> String {
    format!("runner-{}.{}.pyc", pin.major, pin.minor)
}

/// Compiles the harness once per runtime, with that runtime's own interpreter, outside any
/// sandbox: a sandbox then runs the bytecode (mounted read-only with the harness) instead of
/// compiling the source on every start. `py_compile` writes beside and renames, so a
/// concurrent reader never sees half a file.
fn compile_harness(dir: &Path, runtime: &crate::runtime::Runtime) -> Result<(), Error> {
    const COMPILE: &str = "import py_compile, sys\n\
py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile='/harness/runner.py', doraise=True, \
invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n";
    let target = dir.join(harness_bytecode_name(runtime.pin));
    // Compiled by an earlier start from the same harness with the same interpreter: kept.
    let stamp_path = dir.join(format!("{}.stamp", harness_bytecode_name(runtime.pin)));
    let stamp =
        format!(
            "{}\n{:?}\n",
            hex_digest(RUNNER_PY.as_bytes()),
            crate::runtime::cache::Identity::of(&runtime.executable)
                .map_err(|source| Error::io("cannot inspect", &runtime.executable, source))?
        );
    if target.is_file() && std::fs::read_to_string(&stamp_path).is_ok_and(|text| text == stamp) {
        return Ok(());
    }
    let output = std::process::Command::new(&runtime.executable)
        .args(["-I", "-S", "-c", COMPILE])
        .arg(dir.join("runner.py"))
        .arg(&target)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| Error::io("cannot run", &runtime.executable, source))?;
    if !output.status.success() {
        return Err(Error::RuntimeDiscovery {
            path: runtime.executable.clone(),
            detail: format!(
                "cannot compile the harness to {}: {}",
                target.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    set_mode(&target, 0o444)?;
    let temporary = stamp_path.with_extension(format!("stamp.{}", std::process::id()));
    std::fs::write(&temporary, stamp)
        .map_err(|source| Error::io("cannot write", &temporary, source))?;
    std::fs::rename(&temporary, &stamp_path)
        .map_err(|source| Error::io("cannot rename", &stamp_path, source))
}

fn hex_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn write_harness(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let target = dir.join("runner.py");
    if std::fs::read_to_string(&target).is_ok_and(|current| current == RUNNER_PY) {
        return Ok(());
    }
    // Written beside and renamed, so a concurrent reader never sees half a harness.
    let temporary = dir.join(format!("runner.py.{}", std::process::id()));
    std::fs::write(&temporary, RUNNER_PY)
        .map_err(|source| Error::io("cannot write", &temporary, source))?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o444))
        .map_err(|source| Error::io("cannot chmod", &temporary, source))?;
    std::fs::rename(&temporary, &target)
        .map_err(|source| Error::io("cannot rename", &target, source))
}
