//! A backend built from its options (issue 37): what a data directory chose (which backend,
//! where its state lives, the warm pool, the limits' ceilings, the egress network, its band of
//! host ids) goes in as one [`BackendOptions`], and an `Arc<dyn Isolation>` comes out, the
//! egress policy installed and what a crashed process left swept first. Nothing outside this
//! crate reaches into `net`, `mountinfo` or a backend's own options to do it, and the local
//! and gVisor backends take their shared settings from the one place below, so a third
//! backend (a pod) adds a branch here and nothing in its callers.
//!
//! The process that builds a backend must be the only one driving the data directory's runs
//! (the platform's engine lock): the backend removes the directory's cgroup parents when it
//! is dropped, and the sweep removes every sandbox of the directory.

use std::ffi::OsString;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Error, Isolation, LimitCeilings, NetworkMode, PythonPin};

/// Which backend runs the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The jail of this crate: namespaces, seccomp, Landlock, cgroups.
    Local,
    /// gVisor's `runsc`.
    Gvisor,
    /// No isolation at all (one account only: see [`crate::unisolated`]).
    Unisolated,
}

/// The egress network of `public_egress` steps: without it they are refused, never run with a
/// broader network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressSettings {
    /// The one DNS server `public_egress` steps may use.
    pub resolver: IpAddr,
    /// The host's interface the egress traffic leaves by; `None`: the default route's.
    pub uplink: Option<String>,
    /// The platform's own addresses (its API, even at a public address), which no step may
    /// reach.
    pub platform_addresses: Vec<IpAddr>,
}

/// What a data directory chose for its sandboxes.
#[derive(Debug, Clone)]
pub struct BackendOptions {
    pub kind: BackendKind,
    /// Where the sandboxes' state lives (scratch folders, slots, the harness). Its parent is
    /// made searchable by the sandboxes' host ids, never listable by them.
    pub state_dir: PathBuf,
    /// Where discovered runtimes are remembered between processes.
    pub runtime_cache_dir: Option<PathBuf>,
    /// Where the local backend keeps its harness bytecode and runtime views between processes.
    pub kept_dir: Option<PathBuf>,
    /// Warm sandboxes kept ready per class.
    pub pool_size: usize,
    /// The most a step may declare: a sandbox built before its step is known can take any
    /// declaration up to these.
    pub ceilings: LimitCeilings,
    /// A short id of the data directory: its own cgroup parents.
    pub instance: String,
    /// Which of 1,000 bands of host ids the data directory's sandboxes use, so that two data
    /// directories on one machine rarely share one.
    pub uid_band: u32,
    pub egress: Option<EgressSettings>,
    /// How the local backend runs its jail helper (program and its first arguments).
    pub jail_helper: Option<(PathBuf, Vec<OsString>)>,
    /// How many accounts the server has: the unisolated backend serves one only.
    pub accounts: usize,
}

/// Host ids: the local backend's sandboxes, then each backend's helpers, then gVisor's
/// sandboxes, each in a band per data directory, so no two ranges meet. The first three are
/// also the backends' own defaults (`LocalOptions::new`, `GvisorOptions::new`): one number
/// each, named here.
pub(crate) const LOCAL_UID_BASE: u32 = 1_800_000_000;
pub(crate) const LOCAL_HELPER_UID_BASE: u32 = 1_820_000_000;
pub(crate) const GVISOR_HELPER_UID_BASE: u32 = 1_830_000_000;
const GVISOR_UID_BASE: u32 = 2_000_000_000;
/// gVisor's slots per data directory; each maps a range of 1024 ids.
const GVISOR_SLOTS: u32 = 64;

/// Why a backend was not built: the step of the set-up that failed, and the sandbox's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {stage}")]
pub struct SetupError {
    pub stage: &'static str,
    #[source]
    pub source: Error,
}

fn at<E: Into<Error>>(stage: &'static str) -> impl FnOnce(E) -> SetupError {
    move |source| SetupError {
        stage,
        source: source.into(),
    }
}

/// A backend being set up: its options checked and the backend's own made, the first
/// sandbox's helper perhaps already started ([`Prepared::start_first_helper`]).
pub struct Prepared {
    built: Built,
    early: Option<crate::local::EarlyHelper>,
}

enum Built {
    Local(Box<crate::local::LocalOptions>),
    Gvisor(Box<crate::gvisor::GvisorOptions>),
    Unisolated(crate::unisolated::UnisolatedOptions),
}

/// A backend that was built, and what its caller may want to say of it.
pub struct Started {
    pub backend: Arc<dyn Isolation>,
    /// Warnings for the operator (a cache folder that is not used, ...).
    pub warnings: Vec<String>,
}

/// Builds backends from their options.
pub struct Backends;

impl Backends {
    /// Checks `options` and makes the chosen backend's own options from them. Creates the
    /// state folder's parent (mode 0711). Starts nothing yet.
    pub fn prepare(options: &BackendOptions) -> Result<Prepared, SetupError> {
        let egress = options.egress.as_ref().map(egress_options).transpose()?;
        let built = match options.kind {
            BackendKind::Local => {
                let state_dir = state_parent(&options.state_dir)?;
                let helper = options.jail_helper.clone().ok_or_else(|| SetupError {
                    stage: "set up the local sandbox backend",
                    source: Error::LayerFailed {
                        layer: String::from("jail helper"),
                        detail: String::from("no jail helper was named"),
                    },
                })?;
                let mut local = crate::local::LocalOptions::new(state_dir, helper);
                local.egress = egress;
                local
                    .runtimes
                    .cache_dir
                    .clone_from(&options.runtime_cache_dir);
                local.kept_dir.clone_from(&options.kept_dir);
                local.pool_size = options.pool_size;
                local.ceilings = options.ceilings;
                local.cgroups.parent = format!("stepward-{}", options.instance);
                local.uid_base = LOCAL_UID_BASE + options.uid_band * local.slots;
                local.helper_uid_base =
                    LOCAL_HELPER_UID_BASE + options.uid_band * crate::HELPER_CELLS;
                Built::Local(Box::new(local))
            }
            BackendKind::Gvisor => {
                let state_dir = state_parent(&options.state_dir)?;
                let mut gvisor = crate::gvisor::GvisorOptions::new(state_dir);
                gvisor
                    .runtimes
                    .cache_dir
                    .clone_from(&options.runtime_cache_dir);
                gvisor.cgroups.parent = format!("stepward-gvisor-{}", options.instance);
                gvisor.pool_size = options.pool_size;
                gvisor.slots = GVISOR_SLOTS;
                gvisor.uid_base = GVISOR_UID_BASE + options.uid_band * GVISOR_SLOTS * 1024;
                gvisor.helper_uid_base =
                    GVISOR_HELPER_UID_BASE + options.uid_band * crate::HELPER_CELLS;
                // public_egress through the same platform-made namespaces and policy as the
                // local backend's (the backend loads the policy when it starts).
                gvisor.egress = egress;
                Built::Gvisor(Box::new(gvisor))
            }
            BackendKind::Unisolated => {
                crate::unisolated::unisolated_allowed(options.accounts)
                    .map_err(at("use the unisolated backend"))?;
                let state_dir = state_parent(&options.state_dir)?;
                let mut unisolated = crate::unisolated::UnisolatedOptions::new(state_dir);
                unisolated
                    .runtimes
                    .cache_dir
                    .clone_from(&options.runtime_cache_dir);
                Built::Unisolated(unisolated)
            }
        };
        Ok(Prepared { built, early: None })
    }
}

impl Prepared {
    /// Starts the jail helper of the first sandbox now, for a step of `network`, so that its
    /// exec (and for `none` its network namespace) overlaps the rest of the set-up (a one-step
    /// `stepward run`). Only the local backend has one; a helper that cannot start leaves the
    /// sandbox to start as it would without it. Returns how the helper is run (for timings).
    pub fn start_first_helper(&mut self, network: NetworkMode) -> Option<String> {
        let Built::Local(local) = &self.built else {
            return None;
        };
        self.early = crate::local::EarlyHelper::start(local, network).ok();
        Some(helper_named(&local.helper))
    }

    /// Installs the egress policy, sweeps what a crashed process left, builds the backend
    /// and, when `first` is given, its first sandbox (the local backend, up to its plan).
    /// `mark` is told where each phase ends.
    pub fn start(
        self,
        first: Option<(PythonPin, NetworkMode)>,
        mark: &mut dyn FnMut(&str),
    ) -> Result<Started, SetupError> {
        match self.built {
            Built::Local(options) => start_local(*options, first, self.early, mark),
            Built::Gvisor(options) => {
                // The backend installs the egress policy itself when it starts.
                crate::gvisor::sweep(&options)
                    .map_err(at("sweep gvisor sandboxes left by an earlier crash"))?;
                let backend = crate::gvisor::GvisorBackend::new(*options)
                    .map_err(at("set up the gvisor backend"))?
                    .removing_cgroup_parents_on_drop();
                mark("gvisor backend");
                Ok(Started {
                    backend: Arc::new(backend),
                    warnings: Vec::new(),
                })
            }
            Built::Unisolated(options) => {
                let backend = crate::unisolated::UnisolatedBackend::new(options)
                    .map_err(at("set up the unisolated backend"))?;
                mark("unisolated backend");
                Ok(Started {
                    backend: Arc::new(backend),
                    warnings: Vec::new(),
                })
            }
        }
    }
}

fn start_local(
    options: crate::local::LocalOptions,
    first: Option<(PythonPin, NetworkMode)>,
    early: Option<crate::local::EarlyHelper>,
    mark: &mut dyn FnMut(&str),
) -> Result<Started, SetupError> {
    if let Some(egress) = &options.egress {
        crate::net::install_policy(egress).map_err(at("install the egress policy (nftables)"))?;
    }
    mark("egress policy");
    let swept = crate::local::sweep_at_start(&options)
        .map_err(at("sweep sandboxes left by an earlier crash"))?;
    mark("sweep");
    let backend = crate::local::LocalBackend::new_after_sweep(options, swept)
        .map_err(at("set up the local sandbox backend"))?
        .removing_cgroup_parents_on_drop();
    let mut warnings = Vec::new();
    if let Some(reason) = backend.kept_folder_refused() {
        warnings.push(format!(
            "the sandbox cache folder is not used ({reason}); each process prepares the harness \
             and the runtimes' views again (--sandbox-cache-dir)"
        ));
    }
    match (first, early) {
        (Some((python, network)), Some(early)) => {
            backend.prepare_ahead_with(python, network, early);
        }
        (Some((python, network)), None) => backend.prepare_ahead(python, network),
        (None, _) => {}
    }
    mark(match backend.runtimes().cache_use() {
        crate::runtime::CacheUse::Hit => {
            "local backend (runtimes from the cache, harness, views, cgroups)"
        }
        _ => "local backend (runtime discovery, harness, views, cgroups)",
    });
    Ok(Started {
        backend: Arc::new(backend),
        warnings,
    })
}

/// The egress options of the settings, checked.
fn egress_options(settings: &EgressSettings) -> Result<crate::net::EgressOptions, SetupError> {
    let mut options = crate::net::EgressOptions::with_resolver(settings.resolver);
    if let Some(uplink) = &settings.uplink {
        options.uplink = crate::net::Uplink::Interface(uplink.clone());
    }
    // The platform's own API, even at a public address, is no step's destination (G11).
    options.platform_endpoints = settings
        .platform_addresses
        .iter()
        .map(|address| crate::net::Cidr::from(*address))
        .collect();
    options
        .validate()
        .map_err(at("use the egress settings: they are invalid"))?;
    Ok(options)
}

/// The state folder, its parent made searchable by the sandboxes' host ids (never listable
/// by them).
fn state_parent(state_dir: &Path) -> Result<PathBuf, SetupError> {
    if let Some(parent) = state_dir.parent() {
        let failed = |action: &'static str| {
            move |source: std::io::Error| SetupError {
                stage: "prepare the sandbox state folder",
                source: Error::Io {
                    action,
                    path: parent.to_owned(),
                    source,
                },
            }
        };
        std::fs::create_dir_all(parent).map_err(failed("create"))?;
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o711))
            .map_err(failed("set the mode of"))?;
    }
    Ok(state_dir.to_owned())
}

/// How the jail helper is run: `stepward-jail` or `stepward __jail`.
fn helper_named(helper: &(PathBuf, Vec<OsString>)) -> String {
    let program = helper
        .0
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    match helper.1.first() {
        Some(arg) => format!("{program} {}", arg.to_string_lossy()),
        None => program,
    }
}

/// Why a state folder was left in place.
#[derive(Debug, thiserror::Error)]
pub enum StateDirKept {
    #[error("{} is left in place: {} below it is still mounted", .folder.display(), .mounted.display())]
    Mounted { folder: PathBuf, mounted: PathBuf },
    /// The mount table could not be read; the error is printed as the reason (not a
    /// `source`: the reason is the sentence).
    #[error("{} is left in place: {reason}", .folder.display())]
    Unreadable {
        folder: PathBuf,
        reason: std::io::Error,
    },
    #[error("cannot remove {}: {reason}", .folder.display())]
    NotRemoved {
        folder: PathBuf,
        reason: std::io::Error,
    },
}

/// Removes a state folder whose backend is gone (every sandbox torn down), never across a
/// mount: a folder still mounted below (a sandbox's view that outlived its backend) stays
/// whole rather than have what is mounted there removed. A folder that is not there is fine.
pub fn remove_state_dir(folder: &Path) -> Result<(), StateDirKept> {
    match mount_below(folder) {
        Ok(None) => {}
        Ok(Some(mounted)) => {
            return Err(StateDirKept::Mounted {
                folder: folder.to_owned(),
                mounted,
            });
        }
        Err(reason) => {
            return Err(StateDirKept::Unreadable {
                folder: folder.to_owned(),
                reason,
            });
        }
    }
    match std::fs::remove_dir_all(folder) {
        Err(reason) if reason.kind() != std::io::ErrorKind::NotFound => {
            Err(StateDirKept::NotRemoved {
                folder: folder.to_owned(),
                reason,
            })
        }
        _ => Ok(()),
    }
}

/// The first mount point at or below `folder` in this process's mount namespace
/// (`/proc/self/mountinfo`), if any: a bind mount of the same file system included.
fn mount_below(folder: &Path) -> std::io::Result<Option<PathBuf>> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(mounts
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(crate::mountinfo::unescape_mount_point(point)))
        .find(|point| point.starts_with(folder)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with something mounted at or below it is found (and so left whole); a plain
    /// one is not (mount points are unescaped by `mountinfo`, tested there).
    #[test]
    fn the_state_folder_is_never_removed_across_a_mount() {
        let below_proc = mount_below(Path::new("/proc")).unwrap();
        assert!(below_proc.is_some_and(|point| point.starts_with("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(mount_below(dir.path()).unwrap(), None);
        assert!(matches!(
            remove_state_dir(Path::new("/proc")),
            Err(StateDirKept::Mounted { .. })
        ));
        let inside = dir.path().join("state");
        std::fs::create_dir(&inside).unwrap();
        remove_state_dir(&inside).unwrap();
        assert!(!inside.exists());
        remove_state_dir(&inside).unwrap();
    }

    /// The ranges of host ids of two bands and two backends never meet.
    #[test]
    fn the_host_id_ranges_of_the_backends_do_not_meet() {
        let local_slots = 1024;
        let local_end = LOCAL_UID_BASE + 999 * local_slots + local_slots;
        assert!(local_end <= LOCAL_HELPER_UID_BASE);
        let local_helpers_end = LOCAL_HELPER_UID_BASE + 1000 * crate::HELPER_CELLS;
        assert!(local_helpers_end <= GVISOR_HELPER_UID_BASE);
        let gvisor_helpers_end = GVISOR_HELPER_UID_BASE + 1000 * crate::HELPER_CELLS;
        assert!(gvisor_helpers_end <= GVISOR_UID_BASE);
        assert!(
            GVISOR_UID_BASE
                .checked_add(1000 * GVISOR_SLOTS * 1024)
                .is_some()
        );
    }
}
