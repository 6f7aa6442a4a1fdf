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
pub(crate) fn egress_settings(config: &Config) -> anyhow::Result<Option<sandbox::EgressSettings>> {
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
    Ok(Some(sandbox::EgressSettings {
        resolver,
        uplink: config.egress_uplink.clone(),
        // The platform's own API, even at a public address, is no step's destination (G11).
        platform_addresses: config.platform_addresses.clone(),
    }))
}

/// What this data directory chose for its sandboxes, for `sandbox::Backends`. `accounts` is
/// how many accounts the store holds (the unisolated backend serves one only).
pub(crate) fn backend_options(
    config: &Config,
    accounts: usize,
) -> anyhow::Result<sandbox::BackendOptions> {
    Ok(sandbox::BackendOptions {
        kind: match config.backend {
            Backend::Local => sandbox::BackendKind::Local,
            Backend::Gvisor => sandbox::BackendKind::Gvisor,
            Backend::Unisolated => sandbox::BackendKind::Unisolated,
        },
        state_dir: config.sandbox_state_dir(),
        runtime_cache_dir: Some(config.runtime_cache_dir.clone()),
        kept_dir: Some(config.sandbox_cache_dir.clone()),
        pool_size: config.warm_pool,
        ceilings: sandbox::LimitCeilings {
            memory_bytes: config.limit_maxima.memory_mib.saturating_mul(1024 * 1024),
            cpu_seconds: config.limit_maxima.cpu_s,
        },
        instance: config.instance_id(),
        uid_band: config.uid_band(),
        egress: egress_settings(config)?,
        jail_helper: match config.backend {
            Backend::Local => Some(crate::jail_helper::command()?),
            Backend::Gvisor | Backend::Unisolated => None,
        },
        accounts,
    })
}

/// The data directory's backend: the egress policy, the start-up sweep, then the backend,
/// which starts building `first`'s sandbox at once. The caller holds the engine lock. `mark`
/// is told where each phase ends.
pub(crate) fn backend(
    config: &Config,
    accounts: usize,
    first: Option<FirstStep>,
    mark: &mut dyn FnMut(&str),
) -> anyhow::Result<Arc<dyn Isolation>> {
    let prepared = sandbox::Backends::prepare(&backend_options(config, accounts)?)?;
    started(prepared, first, mark)
}

/// The backend `prepared` starts, its warnings said.
fn started(
    prepared: sandbox::backends::Prepared,
    first: Option<FirstStep>,
    mark: &mut dyn FnMut(&str),
) -> anyhow::Result<Arc<dyn Isolation>> {
    let started = prepared.start(first.map(|first| (first.python, first.network)), mark)?;
    for warning in &started.warnings {
        errln!("warning: {warning}");
    }
    Ok(started.backend)
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
        // The local backend serves any number of accounts: the count is not read here.
        let mut prepared = sandbox::Backends::prepare(&backend_options(config, 0)?)?;
        // It holds nothing until its plan (see `sandbox::local::EarlyHelper`); a helper that
        // cannot start leaves the sandbox to start as it would without it.
        if let Some(helper) = prepared.start_first_helper(first_step.network) {
            config
                .timings
                .mark(&format!("the first sandbox's helper ({helper})"));
        }
        let Ok(lock) = EngineLock::of_data_dir(&config.data_dir) else {
            return Ok(None);
        };
        config.timings.mark("engine lock");
        let state_dir = RemoveStateDir::of(config);
        let timings = config.timings.clone();
        let backend = started(prepared, first, &mut |phase| timings.mark(phase))?;
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
        if let Some(folder) = &self.0
            && let Err(kept) = sandbox::backends::remove_state_dir(folder)
        {
            errln!("note: {kept}");
        }
    }
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
