//! Setting up the sandbox backend of a data directory: its options, the egress network, the
//! start-up sweep, and for `stepward run` the early start of the backend and its first sandbox
//! ([`EarlyBackend`]), the first step it is built for ([`FirstStep`]), the default state
//! folder it removes ([`RemoveStateDir`]) and the private data directory it lives beside
//! ([`private_data_dir`]). The composition root (`app.rs`) builds the engine on what this
//! returns.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use sandbox::Isolation;

use crate::config::{Backend, Config};
use crate::engine_lock::EngineLock;

/// The egress network, when a resolver is configured; otherwise `public_egress` steps are
/// refused by the backend (never run with a broader network).
pub(crate) fn egress_options(
    config: &Config,
) -> anyhow::Result<Option<sandbox::net::EgressOptions>> {
    let Some(resolver) = config.egress_resolver else {
        if let Some(uplink) = &config.egress_uplink {
            anyhow::bail!(
                "--egress-uplink {uplink} was given without --egress-resolver: the resolver turns \
                 the egress network on (the one DNS server public_egress steps may use); give \
                 both, or neither"
            );
        }
        return Ok(None);
    };
    let mut options = sandbox::net::EgressOptions::with_resolver(resolver);
    if let Some(uplink) = &config.egress_uplink {
        options.uplink = sandbox::net::Uplink::Interface(uplink.clone());
    }
    // The platform's own API, even at a public address, is no step's destination (G11).
    options.platform_endpoints = config
        .platform_addresses
        .iter()
        .map(|address| sandbox::net::Cidr::from(*address))
        .collect();
    options
        .validate()
        .context("the egress settings are invalid")?;
    Ok(Some(options))
}

/// The sandbox state folder, its parent made searchable by the sandboxes' host ids (never
/// listable by them).
pub(crate) fn sandbox_state_parent(config: &Config) -> anyhow::Result<PathBuf> {
    let state_dir = config.sandbox_state_dir();
    if let Some(parent) = state_dir.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o711))
            .with_context(|| format!("cannot set the mode of {}", parent.display()))?;
    }
    Ok(state_dir)
}

/// The local backend: the egress policy, the start-up sweep, then the backend, which starts
/// building `first`'s sandbox at once. The caller holds the engine lock. `mark` is told where
/// each phase ends.
pub(crate) fn local_backend(
    config: &Config,
    first: Option<FirstStep>,
    mark: &mut dyn FnMut(&str),
) -> anyhow::Result<Arc<dyn Isolation>> {
    local_backend_with(local_options(config)?, first, None, mark)
}

/// The local backend's options for this data directory.
fn local_options(config: &Config) -> anyhow::Result<sandbox::local::LocalOptions> {
    let state_dir = sandbox_state_parent(config)?;
    let mut options = sandbox::local::LocalOptions::new(state_dir, crate::jail_helper::command()?);
    options.egress = egress_options(config)?;
    options.runtimes.cache_dir = Some(config.runtime_cache_dir.clone());
    options.kept_dir = Some(config.sandbox_cache_dir.clone());
    options.pool_size = config.warm_pool;
    // A sandbox built before its step is known can take any declaration up to the maxima.
    options.ceilings = sandbox::LimitCeilings {
        memory_bytes: config.limit_maxima.memory_mib.saturating_mul(1024 * 1024),
        cpu_seconds: config.limit_maxima.cpu_s,
    };
    // Per data directory: its own cgroup parent and its own band of host ids.
    options.cgroups.parent = format!("stepward-{}", config.instance_id());
    options.uid_base = 1_800_000_000 + config.uid_band() * options.slots;
    options.helper_uid_base = 1_820_000_000 + config.uid_band() * sandbox::HELPER_CELLS;
    Ok(options)
}

/// [`local_backend`] from its options, the first sandbox built with `early` when there is
/// one (see [`EarlyBackend`]).
fn local_backend_with(
    options: sandbox::local::LocalOptions,
    first: Option<FirstStep>,
    early: Option<sandbox::local::EarlyHelper>,
    mark: &mut dyn FnMut(&str),
) -> anyhow::Result<Arc<dyn Isolation>> {
    if let Some(egress) = &options.egress {
        sandbox::net::install_policy(egress)
            .context("cannot install the egress policy (nftables)")?;
    }
    mark("egress policy");
    let swept = sandbox::local::sweep_at_start(&options)
        .context("cannot sweep sandboxes left by an earlier crash")?;
    mark("sweep");
    // This process holds the engine lock: nobody else uses this data directory's cgroup
    // parent, so it goes with the backend.
    let backend = sandbox::local::LocalBackend::new_after_sweep(options, swept)
        .context("cannot set up the local sandbox backend")?
        .removing_cgroup_parents_on_drop();
    if let Some(reason) = backend.kept_folder_refused() {
        errln!(
            "warning: the sandbox cache folder is not used ({reason}); each process prepares \
             the harness and the runtimes' views again (--sandbox-cache-dir)"
        );
    }
    match (first, early) {
        (Some(first), Some(early)) => {
            backend.prepare_ahead_with(first.python, first.network, early)
        }
        (Some(first), None) => backend.prepare_ahead(first.python, first.network),
        (None, _) => {}
    }
    mark(match backend.runtimes().cache_use() {
        sandbox::runtime::CacheUse::Hit => {
            "local backend (runtimes from the cache, harness, views, cgroups)"
        }
        _ => "local backend (runtime discovery, harness, views, cgroups)",
    });
    Ok(Arc::new(backend))
}

/// The local backend of a `stepward run`, set up before the command opens the store and the
/// vault: the first code step's helper (spawned first, so that its exec and, for `none`, its
/// network namespace overlap the rest), the engine lock, the start-up sweep, the backend, and
/// that step's sandbox up to its plan. Its interpreter then loads the harness while the
/// command opens the store and the vault, recovers and writes the run's record, none of
/// which the sandbox needs (issue 13, part 2: the sandbox is the process's critical path, and
/// on two cores the store's opening beside it only slowed it down). Only for the local
/// backend; the others start where [`App::engine`] starts them.
pub struct EarlyBackend {
    first: Option<FirstStep>,
    pub(crate) started: Started,
}

/// How the jail helper is run, for `--startup-timings`: `stepward-jail` or `stepward __jail`.
fn helper_named(helper: &(PathBuf, Vec<std::ffi::OsString>)) -> String {
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

/// What the early start set up. The fields drop in this order: the backend (whose drop
/// removes this data directory's cgroup parent) while the lock is still held, then the
/// default state folder, then the lock.
pub(crate) struct Started {
    pub(crate) backend: Arc<dyn Isolation>,
    pub(crate) state_dir: RemoveStateDir,
    pub(crate) lock: EngineLock,
}

impl EarlyBackend {
    /// Sets it up, when `config` runs the local backend and the workflow starts with a code
    /// step; `None` (the usual order) otherwise, and also when another process holds the
    /// engine lock: the command then reports the file's problems, if it has any, before the
    /// lock's refusal, as it always did.
    pub fn start(
        config: &Config,
        first: Option<FirstStep>,
    ) -> anyhow::Result<Option<EarlyBackend>> {
        let Some(first_step) = first else {
            return Ok(None);
        };
        if config.backend != Backend::Local {
            return Ok(None);
        }
        private_data_dir(&config.data_dir)?;
        let options = local_options(config)?;
        // It holds nothing until its plan (see `sandbox::local::EarlyHelper`); a helper that
        // cannot start leaves the sandbox to start as it would without it.
        let early = sandbox::local::EarlyHelper::start(&options, first_step.network).ok();
        config.timings.mark(&format!(
            "the first sandbox's helper ({})",
            helper_named(&options.helper)
        ));
        let Ok(lock) = EngineLock::of_data_dir(&config.data_dir) else {
            return Ok(None);
        };
        config.timings.mark("engine lock");
        let state_dir = RemoveStateDir::of(config);
        let timings = config.timings.clone();
        let backend = local_backend_with(options, first, early, &mut |phase| timings.mark(phase))?;
        Ok(Some(EarlyBackend {
            first,
            started: Started {
                backend,
                state_dir,
                lock,
            },
        }))
    }

    /// The first step its sandbox was built for.
    pub fn first(&self) -> Option<FirstStep> {
        self.first
    }
}

/// The first step of a run about to start, when it is a code step: what its sandbox is built
/// from (see [`App::engine_ahead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstStep {
    pub python: sandbox::PythonPin,
    pub network: sandbox::NetworkMode,
}

impl FirstStep {
    /// The workflow's first step, when it is a code step (an agent step's sandboxes are its
    /// tools' business, and a gate runs nothing).
    pub fn of(workflow: &spec::Workflow) -> Option<FirstStep> {
        let step = workflow.steps().first()?;
        let spec::StepBody::Code { .. } = step.body() else {
            return None;
        };
        let python = workflow.python();
        Some(FirstStep {
            python: worker::executor::sandbox_python(python),
            network: step.network(),
        })
    }
}

/// The default sandbox state folder (`/run/stepward/<id>`), removed when dropped. Only the
/// process holding the engine lock uses it, so when that process lets go of its backend
/// (every sandbox torn down) the folder has no other user: it goes. `/run/stepward` itself
/// stays (mode 0711): another data directory's process may be creating its folder there.
pub(crate) struct RemoveStateDir(Option<PathBuf>);

impl RemoveStateDir {
    /// The default folder is this process's to remove; one the operator named is not.
    pub(crate) fn of(config: &Config) -> RemoveStateDir {
        RemoveStateDir(
            config
                .sandbox_state_dir
                .is_none()
                .then(|| config.sandbox_state_dir()),
        )
    }
}

impl Drop for RemoveStateDir {
    fn drop(&mut self) {
        let Some(folder) = &self.0 else {
            return;
        };
        // Never across a mount: a folder still mounted below (a sandbox's view that outlived
        // its backend) stays whole rather than have what is mounted there removed.
        match mount_below(folder) {
            Ok(None) => {}
            Ok(Some(mounted)) => {
                errln!(
                    "note: {} is left in place: {} below it is still mounted",
                    folder.display(),
                    mounted.display()
                );
                return;
            }
            Err(error) => {
                errln!("note: {} is left in place: {error}", folder.display());
                return;
            }
        }
        if let Err(error) = std::fs::remove_dir_all(folder)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            errln!("note: cannot remove {}: {error}", folder.display());
        }
    }
}

/// The first mount point at or below `folder` in this process's mount namespace
/// (`/proc/self/mountinfo`), if any: a bind mount of the same file system included.
fn mount_below(folder: &Path) -> std::io::Result<Option<PathBuf>> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(mounts
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(sandbox::mountinfo::unescape_mount_point(point)))
        .find(|point| point.starts_with(folder)))
}

/// Creates the data directory private (0700, whatever the umask), or checks an existing one:
/// owned by this user and writable by nobody else (a folder someone else can write could hold
/// what they planted: a database, a workspace file, a link); then makes it 0700, so nothing
/// inside (the database, every workspace and history) is readable by other users (G20).
pub(crate) fn private_data_dir(data_dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if !data_dir.exists() {
        if let Some(parent) = data_dir
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(data_dir)
            .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;
    }
    let metadata = std::fs::symlink_metadata(data_dir)
        .with_context(|| format!("cannot read the data directory {}", data_dir.display()))?;
    if !metadata.is_dir() {
        bail!(
            "the data directory {} is not a folder (a link or a file): give a folder of its own",
            data_dir.display()
        );
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        bail!(
            "the data directory {} belongs to user id {}, not to the user stepward runs as ({me}): \
             run stepward as its owner, or give a folder of your own",
            data_dir.display(),
            metadata.uid()
        );
    }
    if metadata.mode() & 0o022 != 0 {
        bail!(
            "the data directory {} is a folder others can write (mode {:o}): whatever they put \
             there would be taken for stepward's own; check its contents, then `chmod 700 {}`",
            data_dir.display(),
            metadata.mode() & 0o777,
            data_dir.display()
        );
    }
    std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", data_dir.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with something mounted at or below it is found (and so left whole); a plain
    /// one is not (mount points are unescaped by `sandbox::mountinfo`, tested there).
    #[test]
    fn the_state_folder_is_never_removed_across_a_mount() {
        let below_proc = mount_below(Path::new("/proc")).unwrap();
        assert!(below_proc.is_some_and(|point| point.starts_with("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(mount_below(dir.path()).unwrap(), None);
    }
}
