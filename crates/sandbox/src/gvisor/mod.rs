//! The `gvisor` backend (G13): the same invocation as the local backend, run through runsc
//! (gVisor), for hosts that want a user-space kernel between steps and the host.
//!
//! One invocation: take a slot (an unprivileged host uid no other live sandbox has), build a
//! fresh OCI bundle in a scratch folder (a read-only root holding only mount points and a
//! minimal `/etc`, the generated `config.json`, the folder's staged copy, the report file),
//! for `public_egress` build the egress network (the local backend's: a platform-made
//! namespace and veth, policed by the same nftables table), create a cgroup around the whole
//! runsc sandbox, run `runsc run` with `--network=none` (or `--network=sandbox` in the egress
//! namespace, named by path in the spec), hand the request to the harness on stdin, collect
//! stdout, stderr and the report under the wall-clock limit, then kill and delete the
//! container, remove the cgroup, collect the copy-back and remove the scratch folder. Each of those is a guard that also runs on error
//! and panic; [`sweep`] removes what a crashed platform left.
//!
//! runsc passes no descriptor beyond stdio into the container, so the report channel is a
//! file bind-mounted at `/report` that a shim opens as fd 3 before it runs the unchanged
//! harness (see [`spec::SHIM`]). The local backend is not affected.

mod container;
mod pool;
mod run;
pub(crate) mod spec;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cgroup::{CgroupLayout, CgroupOptions};
use crate::copyback::CopyBackPolicy;
use crate::runtime::{RuntimeOptions, Runtimes};
use crate::slot::SlotAllocator;
use crate::{Error, Invocation, Isolation, Observation};

/// The harness, embedded at build time and written read-only into the state directory.
const RUNNER_PY: &str = include_str!("../../harness/runner.py");

/// Every container this backend creates has an id starting with this; [`sweep`] removes
/// only those.
pub const CONTAINER_PREFIX: &str = "stepward-gv-";

/// Which gVisor platform (how the sentry intercepts the step's system calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// ptrace: works everywhere, slowest.
    Ptrace,
    /// systrap: seccomp-based; only in runsc releases from 2023 on.
    Systrap,
    /// kvm: needs `/dev/kvm`.
    Kvm,
    /// systrap where this runsc offers it, else ptrace (the default); which one ran is
    /// recorded with every run.
    SystrapOrPtrace,
}

impl Platform {
    /// The name runsc uses.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Ptrace => "ptrace",
            Platform::Systrap => "systrap",
            Platform::Kvm => "kvm",
            Platform::SystrapOrPtrace => "systrap or ptrace",
        }
    }
}

/// Configuration of the gvisor backend.
#[derive(Debug, Clone)]
pub struct GvisorOptions {
    /// The runsc binary (Debian's package installs `/usr/bin/runsc`).
    pub runsc: PathBuf,
    /// Where scratch folders, runsc's own state, slot locks and the harness live (root-owned,
    /// not shared).
    pub state_dir: PathBuf,
    /// Where the cgroups around each runsc sandbox go.
    pub cgroups: CgroupOptions,
    /// A sandbox in slot N owns the host ids `uid_base + N * 1024` and the 1023 after it
    /// (its user namespace maps container ids 0..1024 there; the step runs as 1000); must be
    /// non-zero and a range no real user, service or other backend on the host uses.
    pub uid_base: u32,
    /// How many sandboxes may exist at once.
    pub slots: u32,
    /// Which interpreters to offer.
    pub runtimes: RuntimeOptions,
    /// The copy-back filter's caps.
    pub copy_back: CopyBackPolicy,
    /// The gVisor platform; it must be one the installed runsc lists.
    pub platform: Platform,
    /// Pre-started runsc sandboxes kept per class (Python version, network, limits); 0 means
    /// always cold. Each serves one invocation and is destroyed.
    pub pool_size: usize,
    /// The egress network for `public_egress` (the same namespaces and policy as the local
    /// backend's); `None` refuses such steps.
    pub egress: Option<crate::net::EgressOptions>,
    /// Helper cell N maps to host uid and gid `helper_uid_base + N` (see
    /// [`crate::HelperCell`]).
    pub helper_uid_base: u32,
}

impl GvisorOptions {
    /// Defaults for everything but where state lives.
    pub fn new(state_dir: PathBuf) -> Self {
        Self {
            runsc: PathBuf::from("/usr/bin/runsc"),
            state_dir,
            cgroups: CgroupOptions {
                parent: String::from("stepward-gvisor"),
                ..CgroupOptions::default()
            },
            uid_base: 1_810_000_000,
            slots: 1024,
            runtimes: RuntimeOptions::default(),
            copy_back: CopyBackPolicy::default(),
            platform: Platform::SystrapOrPtrace,
            pool_size: 0,
            egress: None,
            helper_uid_base: crate::backends::GVISOR_HELPER_UID_BASE,
        }
    }

    fn scratch_dir(&self) -> PathBuf {
        self.state_dir.join("scratch")
    }

    fn slots_dir(&self) -> PathBuf {
        self.state_dir.join("slots")
    }

    fn harness_dir(&self) -> PathBuf {
        self.state_dir.join("harness")
    }

    /// An empty directory where runsc's private mount namespace gets an untouched procfs
    /// when it joins an egress namespace (see `container::ProcSysMask`).
    fn visible_proc_dir(&self) -> PathBuf {
        self.state_dir.join("runsc-proc")
    }

    /// runsc's own state (`--root`): one entry per live container.
    fn runsc_root(&self) -> PathBuf {
        self.state_dir.join("runsc")
    }
}

/// The gvisor backend. Each [`Isolation::run`] uses a runsc sandbox built for it alone (cold,
/// or warm from the pool) and destroys it.
pub struct GvisorBackend {
    shared: std::sync::Arc<Shared>,
    /// Tests give each backend its own cgroup parent and remove it on drop.
    remove_cgroup_parent_on_drop: bool,
}

impl std::ops::Deref for GvisorBackend {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// What the backend, its pool and the pool's refill threads share.
pub struct Shared {
    pub(crate) options: GvisorOptions,
    pub(crate) runtimes: Runtimes,
    pub(crate) cgroups: CgroupLayout,
    pub(crate) slots: SlotAllocator,
    pub(crate) helper_cells: crate::helper_cell::HelperCells,
    /// `runsc --version`'s first line, recorded with each run.
    pub(crate) runsc_version: String,
    /// The platform runsc runs with (never `SystrapOrPtrace`), and why it was chosen.
    pub(crate) platform: Platform,
    pub(crate) platform_note: String,
    /// Pre-started runsc sandboxes, each waiting on its harness for one request.
    pub(crate) pool: pool::Pool,
}

impl GvisorBackend {
    /// Checks that runsc runs and offers the platform, prepares the state directory, discovers
    /// the runtimes and the cgroup layout. Fails closed when runsc is missing or broken.
    pub fn new(options: GvisorOptions) -> Result<Self, Error> {
        if options.uid_base == 0 {
            return Err(Error::LayerFailed {
                layer: String::from("gvisor user"),
                detail: String::from(
                    "uid_base must be non-zero: the sandbox never runs as host root",
                ),
            });
        }
        let (runsc_version, platform, platform_note) =
            probe_runsc(&options.runsc, options.platform)?;
        for (dir, mode) in [
            (options.state_dir.clone(), 0o711),
            (options.scratch_dir(), 0o711),
            (options.runsc_root(), 0o700),
            (options.visible_proc_dir(), 0o700),
            (options.harness_dir(), 0o755),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|source| Error::io("cannot create", &dir, source))?;
            crate::local::set_mode(&dir, mode)?;
        }
        write_harness(&options.harness_dir())?;
        let runtimes = Runtimes::discover(&options.runtimes)?;
        let cgroups = CgroupLayout::detect(&options.cgroups)?;
        let slots = SlotAllocator::new(&options.slots_dir(), options.slots)?;
        let helper_cells =
            crate::helper_cell::HelperCells::new(&options.state_dir, options.helper_uid_base)?;
        if let Some(egress) = &options.egress {
            crate::net::install_policy(egress)?;
        }
        let pool = pool::Pool::new(options.pool_size);
        Ok(Self {
            shared: std::sync::Arc::new(Shared {
                options,
                runtimes,
                cgroups,
                slots,
                helper_cells,
                runsc_version,
                platform,
                platform_note,
                pool,
            }),
            remove_cgroup_parent_on_drop: false,
        })
    }

    /// The same backend, which removes its cgroup parents when dropped (after tearing down
    /// every sandbox of its own). Only for the one process driving a data directory's runs
    /// (the platform's engine lock): another live backend over the same parent would lose it.
    pub fn removing_cgroup_parents_on_drop(mut self) -> Self {
        self.remove_cgroup_parent_on_drop = true;
        self
    }

    /// A backend for tests: state under `state_dir`, a cgroup parent unique to this process
    /// and backend (removed on drop), a uid range unlikely to collide with another test.
    #[cfg(feature = "test-controls")]
    pub fn for_tests(state_dir: &Path) -> Result<Self, Error> {
        Self::for_tests_with(state_dir, |_| {})
    }

    /// [`GvisorBackend::for_tests`] with a chance to change the options (the pool size).
    #[cfg(feature = "test-controls")]
    pub fn for_tests_with(
        state_dir: &Path,
        configure: impl FnOnce(&mut GvisorOptions),
    ) -> Result<Self, Error> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or_default();
        let process = std::process::id();
        let mut options = GvisorOptions::new(state_dir.to_path_buf());
        options.cgroups.parent = format!("stepward-gvisor-test-{process}-{nanos}");
        // 64 slots of 1024 ids each per backend, in a band above the local backend's tests.
        let range = (process.wrapping_mul(7919).wrapping_add(nanos / 1000)) % 30_000;
        options.uid_base = 1_950_000_000 + range * 64 * 1024;
        options.slots = 64;
        configure(&mut options);
        let mut backend = Self::new(options)?;
        backend.remove_cgroup_parent_on_drop = true;
        Ok(backend)
    }

    /// Starts a sandbox for `invocation` and abandons it once its harness is loaded, leaving
    /// the runsc container, its cgroup and its scratch folder behind as a crashed platform
    /// would. Only for the test of [`sweep`]. Returns the container's id.
    #[cfg(feature = "test-controls")]
    pub fn leave_a_running_container_for_sweep_test(
        &self,
        invocation: Invocation,
    ) -> Result<String, Error> {
        run::leave_running(self, invocation)
    }

    /// The runtimes this backend offers.
    pub fn runtimes(&self) -> &Runtimes {
        &self.runtimes
    }

    /// The options this backend was built with.
    pub fn options(&self) -> &GvisorOptions {
        &self.options
    }

    /// The cgroup layout in use (tests check that groups are gone after a run).
    pub fn cgroup_layout(&self) -> &CgroupLayout {
        &self.cgroups
    }

    /// The ids of the containers runsc knows in this backend's state (tests check that none
    /// is left after a run).
    pub fn live_containers(&self) -> Result<Vec<String>, Error> {
        container::list(&self.options.runsc, &self.options.runsc_root())
    }

    /// Warm sandboxes waiting in the pool.
    pub fn idle_sandboxes(&self) -> usize {
        self.shared.pool.idle_count()
    }
}

impl Drop for GvisorBackend {
    fn drop(&mut self) {
        // Waiting sandboxes die with the backend.
        self.shared.pool.close();
        if self.remove_cgroup_parent_on_drop {
            let _ = self.cgroups.sweep();
            self.cgroups.remove_parents();
        }
    }
}

impl Isolation for GvisorBackend {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn run(&self, invocation: Invocation) -> Result<Observation, Error> {
        run::run(&self.shared, invocation)
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

    /// Each call in a fresh runsc sandbox of its own (the cold path's hardening, or a warm
    /// one from the pool), staged from the session's tree and destroyed when the call ends.
    /// A runsc sandbox kept for the step's life with a container per call was measured and
    /// not chosen (docs/sandbox.md, "Sessions"): it is slower per call than a fresh pooled
    /// sandbox, and one call could meet the next.
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
    pub containers: usize,
    pub cgroups: usize,
    pub scratch_dirs: usize,
    pub networks: usize,
}

/// Kills and removes what a crashed platform left: runsc containers whose id starts with
/// [`CONTAINER_PREFIX`], the cgroups around them (and every process in them), scratch
/// folders, unheld slot locks and sandbox veths left on the egress host side. Must run at
/// start-up before any sandbox of this backend exists.
pub fn sweep(options: &GvisorOptions) -> Result<SweepReport, Error> {
    let mut report = SweepReport::default();
    let root = options.runsc_root();
    if root.is_dir() {
        for id in container::list(&options.runsc, &root)? {
            if id.starts_with(CONTAINER_PREFIX) {
                container::force_delete(&options.runsc, &root, &id);
                report.containers += 1;
            }
        }
    }
    let layout = CgroupLayout::detect(&options.cgroups)?;
    report.cgroups = layout.sweep()?;
    // The same folders and work mounts as the local backend's, and its scratch tmpfs when a
    // local platform over the same state folder crashed (gVisor's bundles would not fit on it).
    report.scratch_dirs = crate::local::scratch_fs::sweep(&options.scratch_dir())?;
    SlotAllocator::new(&options.slots_dir(), options.slots)?.sweep()?;
    if let Some(egress) = &options.egress {
        let networks = crate::net::sweep(egress)?;
        report.networks = networks.host_links.len() + networks.namespaces.len();
    }
    Ok(report)
}

/// Runs `runsc --version` and `runsc help platforms`; fails closed unless both work and the
/// platform is listed (`SystrapOrPtrace` picks systrap when listed, else ptrace). Returns the
/// version line, the platform in use and a note saying how it was chosen.
fn probe_runsc(runsc: &Path, platform: Platform) -> Result<(String, Platform, String), Error> {
    let unusable = |detail: String| Error::LayerFailed {
        layer: String::from("gvisor (runsc)"),
        detail: format!("{}: {detail}", runsc.display()),
    };
    let run = |arguments: &[&str]| {
        Command::new(runsc)
            .args(arguments)
            .env_clear()
            .stdin(Stdio::null())
            .output()
            .map_err(|error| {
                unusable(format!(
                    "cannot run it ({error}); install runsc (Debian: apt-get install runsc)"
                ))
            })
    };
    let version = run(&["--version"])?;
    if !version.status.success() {
        return Err(unusable(format!(
            "`runsc --version` exited with {}: {}",
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        )));
    }
    let version_line = String::from_utf8_lossy(&version.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let platforms = run(&["help", "platforms"])?;
    let listed = String::from_utf8_lossy(&platforms.stdout).into_owned();
    let offers = |name: &str| listed.lines().any(|line| line.trim() == name);
    let (platform, note) = match platform {
        Platform::SystrapOrPtrace if offers("systrap") => (
            Platform::Systrap,
            String::from("gvisor platform: systrap (this runsc offers it)"),
        ),
        Platform::SystrapOrPtrace => (
            Platform::Ptrace,
            format!(
                "gvisor platform: ptrace, the fallback: this runsc ({version_line}) has no systrap \
                 (it offers: {})",
                listed.split_whitespace().collect::<Vec<_>>().join(", ")
            ),
        ),
        chosen => (
            chosen,
            format!("gvisor platform: {} (configured)", chosen.name()),
        ),
    };
    if !listed.lines().any(|line| line.trim() == platform.name()) {
        return Err(unusable(format!(
            "the platform `{}` is not offered by this runsc; it offers: {}",
            platform.name(),
            listed.split_whitespace().collect::<Vec<_>>().join(", ")
        )));
    }
    if platform == Platform::Kvm && !Path::new("/dev/kvm").exists() {
        return Err(unusable(String::from(
            "the kvm platform needs /dev/kvm, which this host does not have",
        )));
    }
    Ok((version_line, platform, note))
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
