//! One invocation of the gvisor backend: a fresh OCI bundle, a cgroup around the runsc
//! sandbox, `runsc run`, the watch, the classification (the local backend's rules), the
//! copy-back, and teardown.
//!
//! Every resource is a guard released in this order on success, error, timeout and panic:
//! the container (killed if running, always deleted from runsc's state), the cgroup (every
//! member killed, groups removed), the scratch folder, the slot.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;
use zeroize::Zeroizing;

use crate::cgroup::SandboxCgroup;
use crate::copyback;
use crate::gvisor::container::{Container, Launch};
use crate::gvisor::spec::{self, MountPoint, SpecInputs};
use crate::gvisor::{CONTAINER_PREFIX, Shared};
use crate::local::outcome::{self, Observed};
use crate::runtime::Runtime;
use crate::slot::Slot;
use crate::{Error, Invocation, Limits, NetworkMode, Observation};

/// Memory the runsc sandbox itself (sentry, gofer, Go runtimes) needs beyond the step's own
/// limit; the cgroup around the whole sandbox allows the step's limit plus this.
const SANDBOX_MEMORY_OVERHEAD: u64 = 256 * 1024 * 1024;

/// Host threads the runsc sandbox itself uses (around 70 on an idle ptrace sandbox) beyond
/// the step's own pids limit, which gVisor enforces inside through RLIMIT_NPROC.
const SANDBOX_PIDS_OVERHEAD: u32 = 256;

pub(crate) fn run(
    backend: &std::sync::Arc<Shared>,
    invocation: Invocation,
) -> Result<Observation, Error> {
    let runtime = backend.runtimes.get(invocation.python)?;
    if let Some(observation) =
        Observation::needs_repair_before_any_sandbox("gvisor", &invocation, runtime)
    {
        return Ok(observation);
    }
    if invocation.network == NetworkMode::PublicEgress && backend.options.egress.is_none() {
        return Ok(Observation::refused(
            "gvisor",
            runtime.version.clone(),
            "public_egress is not configured on this server (no egress network options), so the step cannot get the network it declares",
        ));
    }

    // A warm sandbox of this class (Python version and limits: gVisor's kernel takes its
    // rlimits from the spec at start, so declared limits pick their class), else a cold one;
    // either way the pool is refilled on its own threads.
    let class = crate::gvisor::pool::Class {
        python: invocation.python,
        network: invocation.network,
        limits: invocation.limits.clone(),
    };
    let warm = backend.pool.claim(&class);
    let observed = run_in(backend, invocation, runtime, warm);
    // Refilled after the step, so the new sandbox's start does not compete with it.
    crate::gvisor::pool::refill(backend, &class);
    observed
}

/// Runs the invocation in the warm sandbox, or in a cold one started now.
fn run_in(
    backend: &Shared,
    invocation: Invocation,
    runtime: &Runtime,
    warm: Option<Started>,
) -> Result<Observation, Error> {
    let request = crate::request::harness_request(&invocation)?;
    let started = match warm {
        Some(started) => started,
        None => start(backend, &invocation.limits, invocation.network, runtime)?,
    };
    // Bound in reverse teardown order: on an early return the container goes first, the slot
    // last.
    let Started {
        slot,
        scratch,
        mut cgroup,
        network,
        mut container,
        step_host_id,
    } = started;
    // The folder's copy goes in now, after the claim: a warm sandbox was built before the
    // invocation existed, and its harness reads nothing before its request.
    let manifest = copyback::stage_in(
        &invocation.files,
        &scratch.work(),
        (step_host_id, step_host_id),
    )?;
    let deadline = Instant::now()
        .checked_add(invocation.limits.wall)
        .unwrap_or_else(Instant::now);
    let watched = container.watch(
        request,
        deadline,
        &invocation.limits,
        &scratch.report(),
        &mut cgroup,
        invocation.live.as_ref(),
    );
    drop(container);
    // Every process of the sandbox is gone with the container: its network can go too.
    drop(network);
    let watched = watched?;
    let oom_killed = cgroup.oom_killed();
    cgroup.destroy()?;
    drop(cgroup);

    let report = read_report(&scratch.report(), &invocation.limits)?;
    let stderr_tail = crate::tail::stderr_tail(&watched.stderr);
    if !watched.timed_out && !watched.report_overflow && !oom_killed && !announced_ready(&report) {
        // Fail closed: the sandbox never reached the harness, so nothing of the step ran; this
        // is runsc or the host, not the step. The guards tear everything down.
        return Err(Error::LayerFailed {
            layer: String::from("gvisor (runsc)"),
            detail: format!(
                "the sandbox ended ({:?}) before the harness was loaded: {}",
                watched.termination,
                stderr_tail.trim()
            ),
        });
    }
    let outcome = outcome::classify(&Observed {
        network: invocation.network,
        termination: watched.termination,
        // The sentry enforces RLIMIT_CPU inside and sends SIGXCPU first, which names the
        // limit; the host cannot see the step's own CPU time apart from the sentry's.
        cpu_millis: 0,
        cpu_limit_seconds: invocation.limits.cpu_seconds,
        timed_out: watched.timed_out,
        oom_killed,
        report_overflow: watched.report_overflow,
        report: &report,
        stderr_tail,
    });
    let copy_back = copyback::collect(
        &scratch.work(),
        &manifest,
        &backend.options.copy_back,
        invocation.screen.as_ref(),
    )?;
    drop(scratch);
    drop(slot);
    Ok(Observation {
        outcome,
        stdout: Zeroizing::new(watched.stdout),
        stderr: Zeroizing::new(watched.stderr),
        output_truncated: watched.output_truncated,
        copy_back,
        interpreter: runtime.version.clone(),
        backend: "gvisor",
        isolation_notes: notes(backend, invocation.network),
    })
}

/// A started sandbox: `runsc run` waits for the request on stdin. Fields drop in declaration
/// order, which is the teardown order.
pub(crate) struct Started {
    container: Container,
    /// public_egress: the platform-made network namespace runsc joined, with its veth.
    network: Option<crate::net::EgressNetwork>,
    cgroup: SandboxCgroup,
    scratch: Scratch,
    slot: Slot,
    /// The host id the step's files belong to.
    step_host_id: u32,
}

impl Started {
    /// Waits until the harness announced it is loaded (a warm sandbox is pooled only then).
    pub(crate) fn wait_ready(&self, timeout: std::time::Duration) -> Result<(), Error> {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(Instant::now);
        while !announced_ready(&std::fs::read(self.scratch.report()).unwrap_or_default()) {
            if Instant::now() >= deadline {
                return Err(Error::LayerFailed {
                    layer: String::from("gvisor (runsc)"),
                    detail: format!(
                        "the sandbox did not load its harness within {} seconds",
                        timeout.as_secs()
                    ),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Ok(())
    }
}

/// Builds the bundle and the cgroup and starts `runsc run` in it, with an empty `/work`.
pub(crate) fn start(
    backend: &Shared,
    limits: &Limits,
    network_mode: NetworkMode,
    runtime: &Runtime,
) -> Result<Started, Error> {
    let options = &backend.options;
    let slot = backend.slots.acquire()?;
    // The slot's own host id range; the step's files on the host belong to `step_host_id`.
    let host_id_base = slot
        .index()
        .checked_mul(spec::IDS_PER_SANDBOX)
        .and_then(|offset| options.uid_base.checked_add(offset))
        .filter(|base| base.checked_add(spec::IDS_PER_SANDBOX).is_some())
        .ok_or_else(|| Error::LayerFailed {
            layer: String::from("gvisor user namespace"),
            detail: String::from("uid_base + slot * ids per sandbox overflows"),
        })?;
    let step_host_id = host_id_base + spec::SANDBOX_UID;
    let suffix = format!("{}-{}", slot.index(), crate::unique_nanos());
    let scratch = Scratch::create(&options.scratch_dir(), &suffix, host_id_base)?;
    // public_egress: the same platform-made namespace and policy as the local backend's; runsc
    // joins it and runs gVisor's own network stack on the sandbox end of the veth.
    let network = match network_mode {
        NetworkMode::None => None,
        NetworkMode::PublicEgress => {
            let egress = options.egress.as_ref().ok_or_else(|| Error::LayerFailed {
                layer: String::from("network"),
                detail: String::from("public_egress is not configured on this server"),
            })?;
            Some(crate::net::EgressNetwork::create(egress, slot.index())?)
        }
    };
    build_root(
        &scratch.root(),
        runtime,
        network.as_ref().map(crate::net::EgressNetwork::resolv_conf),
    )?;
    std::fs::create_dir(scratch.work())
        .map_err(|source| Error::io("cannot create", scratch.work(), source))?;
    // `/work` is a tmpfs of its own with the size and inode cap of `work_mib`, as in the local
    // backend: gVisor's file proxy serves it, so a step can never fill the host's disk.
    crate::local::run::mount_work_tmpfs(&scratch.work(), step_host_id, limits.work_bytes)?;
    std::fs::write(scratch.report(), b"")
        .map_err(|source| Error::io("cannot create", scratch.report(), source))?;
    std::os::unix::fs::chown(scratch.report(), Some(step_host_id), Some(step_host_id))
        .map_err(|source| Error::io("cannot chown", scratch.report(), source))?;
    crate::local::set_mode(&scratch.report(), 0o600)?;
    let config = spec::config(&SpecInputs {
        runtime,
        limits,
        host_id_base,
        harness_dir: &options.harness_dir(),
        work_dir: &scratch.work(),
        report_file: &scratch.report(),
        netns: network.as_ref().map(crate::net::EgressNetwork::netns_path),
    });
    let config_path = scratch.path.join("config.json");
    let config_text = serde_json::to_vec_pretty(&config).map_err(|source| Error::Plan {
        action: "encoded",
        source,
    })?;
    std::fs::write(&config_path, config_text)
        .map_err(|source| Error::io("cannot write", &config_path, source))?;

    let cgroup = backend
        .cgroups
        .create_sandbox(&format!("sb-gv-{suffix}"), &sandbox_limits(limits))?;
    // runsc joins every group of the sandbox (v2 and each v1 hierarchy) before it execs.
    let cgroup_procs: Vec<PathBuf> = cgroup
        .dirs()
        .iter()
        .map(|dir| dir.join("cgroup.procs"))
        .collect();
    let container_id = format!("{CONTAINER_PREFIX}{suffix}");
    let container = Container::start(Launch {
        runsc: &options.runsc,
        root: &options.runsc_root(),
        id: &container_id,
        bundle: &scratch.path,
        platform: backend.platform,
        network: network_mode,
        visible_proc: &options.visible_proc_dir(),
        cgroup_procs,
    })?;
    Ok(Started {
        container,
        network,
        cgroup,
        scratch,
        slot,
        step_host_id,
    })
}

/// Starts a sandbox and abandons it once its harness is loaded, leaving the container, its
/// cgroup and its scratch folder behind exactly as a crashed platform would; for the sweep's
/// test. Returns the container's id.
#[cfg(feature = "test-controls")]
pub(crate) fn leave_running(backend: &Shared, invocation: Invocation) -> Result<String, Error> {
    let runtime = backend.runtimes.get(invocation.python)?;
    let Started {
        container,
        network,
        cgroup,
        scratch,
        slot,
        step_host_id: _,
    } = start(backend, &invocation.limits, invocation.network, runtime)?;
    let deadline = Instant::now()
        .checked_add(std::time::Duration::from_secs(30))
        .unwrap_or_else(Instant::now);
    while !announced_ready(&std::fs::read(scratch.report()).unwrap_or_default()) {
        if Instant::now() >= deadline {
            return Err(Error::LayerFailed {
                layer: String::from("gvisor (runsc)"),
                detail: String::from("the sandbox did not load its harness within 30 seconds"),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let id = container.id().to_string();
    if let Some(mut child) = container.abandon() {
        // The harness waits on stdin: the pipe stays open until runsc is gone.
        let stdin = child.stdin.take();
        std::thread::spawn(move || {
            let _ = child.wait();
            drop(stdin);
        });
    }
    std::mem::forget(network);
    std::mem::forget(cgroup);
    std::mem::forget(scratch);
    drop(slot);
    Ok(id)
}

/// What this run's isolation is and how it differs from the local backend's.
fn notes(backend: &Shared, network: NetworkMode) -> Vec<String> {
    let mut notes = vec![
        format!(
            "gvisor ({} platform, {})",
            backend.platform.name(),
            backend.runsc_version
        ),
        backend.platform_note.clone(),
        String::from(
            "user namespace: the step runs as uid 1000 mapped to an unprivileged host id of its own range; gVisor's file proxy runs as that range's first id, gVisor's kernel as nobody in a user namespace of its own; no capabilities",
        ),
        String::from(
            "limits: rlimits enforced by gVisor's kernel; memory, pids and cpu cgroup around the whole runsc sandbox with headroom for gVisor itself",
        ),
        String::from(
            "noexec and nodev inside gVisor: execve from /tmp and /work is refused, but gVisor lets a shared library copied there be mapped executable and lets the step mknod device nodes in /tmp; both stay inside gVisor's kernel (its own memory and its own devices), never the host's",
        ),
        String::from(
            "syscall filter: gVisor's kernel implements the step's system calls; the host sees only the sentry's own seccomp-filtered calls (no OCI seccomp profile in this runsc)",
        ),
    ];
    if network == NetworkMode::PublicEgress {
        notes.push(String::from(
            "network: gVisor's own network stack on the veth of a network namespace the platform made (runsc --network=sandbox), policed on the host side by the same nftables policy as the local backend",
        ));
    }
    notes
}

/// The cgroup around the whole runsc sandbox: the step's limits plus room for gVisor itself.
fn sandbox_limits(limits: &Limits) -> Limits {
    Limits {
        memory_bytes: limits.memory_bytes.saturating_add(SANDBOX_MEMORY_OVERHEAD),
        pids: limits.pids.saturating_add(SANDBOX_PIDS_OVERHEAD),
        ..limits.clone()
    }
}

/// Reads the report file (written by the harness through fd 3), at most what an honest
/// report can hold; the watch loop already stopped a sandbox whose report grew past it.
fn read_report(path: &Path, limits: &Limits) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let cap = limits.output_bytes.saturating_add(64 * 1024);
    let file =
        std::fs::File::open(path).map_err(|source| Error::io("cannot open", path, source))?;
    let mut report = Vec::new();
    file.take(cap as u64)
        .read_to_end(&mut report)
        .map_err(|source| Error::io("cannot read", path, source))?;
    Ok(report)
}

/// Whether the report's first line is the harness's "ready" event.
fn announced_ready(report: &[u8]) -> bool {
    let first = report
        .split(|byte| *byte == b'\n')
        .next()
        .unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(first).is_ok_and(|event| event["event"] == "ready")
}

/// Lays out the read-only root: every mount point runsc needs and a minimal `/etc`; nothing
/// else (the runtime, the harness and `/work` are mounted over it).
fn build_root(root: &Path, runtime: &Runtime, resolv_conf: Option<String>) -> Result<(), Error> {
    std::fs::create_dir(root).map_err(|source| Error::io("cannot create", root, source))?;
    crate::local::set_mode(root, 0o755)?;
    let network = match resolv_conf {
        Some(_) => NetworkMode::PublicEgress,
        None => NetworkMode::None,
    };
    for point in spec::mount_points(runtime, network) {
        match point {
            MountPoint::Dir(path) => {
                let target = inside(root, &path);
                if !target.is_dir() {
                    std::fs::create_dir(&target)
                        .map_err(|source| Error::io("cannot create", &target, source))?;
                    crate::local::set_mode(&target, 0o755)?;
                }
            }
            MountPoint::File(path) => {
                let target = inside(root, &path);
                std::fs::write(&target, b"")
                    .map_err(|source| Error::io("cannot create", &target, source))?;
                crate::local::set_mode(&target, 0o444)?;
            }
        }
    }
    let mut etc = spec::etc_files();
    if let Some(resolv_conf) = resolv_conf {
        etc.push(("resolv.conf", resolv_conf));
    }
    for (name, contents) in etc {
        let target = root.join("etc").join(name);
        std::fs::write(&target, contents)
            .map_err(|source| Error::io("cannot write", &target, source))?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444))
            .map_err(|source| Error::io("cannot chmod", &target, source))?;
    }
    Ok(())
}

/// `path` (absolute inside the sandbox) under `root` on the host.
fn inside(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The bundle of one sandbox: `config.json`, `rootfs` (the read-only root), `work` (the
/// folder's copy, `/work`) and `report` (the report channel). Removed on drop.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create(parent: &Path, suffix: &str, host_id_base: u32) -> Result<Self, Error> {
        let path = parent.join(format!("gv-{suffix}"));
        std::fs::create_dir(&path).map_err(|source| Error::io("cannot create", &path, source))?;
        let scratch = Self { path };
        // Searchable by root (runsc) and by this sandbox's own range only: gVisor's file
        // proxy runs as the range's first host id and binds from here.
        std::os::unix::fs::chown(&scratch.path, Some(0), Some(host_id_base))
            .map_err(|source| Error::io("cannot chown", &scratch.path, source))?;
        crate::local::set_mode(&scratch.path, 0o710)?;
        Ok(scratch)
    }

    fn root(&self) -> PathBuf {
        self.path.join("rootfs")
    }

    fn work(&self) -> PathBuf {
        self.path.join("work")
    }

    fn report(&self) -> PathBuf {
        self.path.join("report")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Detach `/work`'s tmpfs first (after a failure before it was mounted, this is a no-op).
        let _ = rustix::mount::unmount(self.work(), rustix::mount::UnmountFlags::DETACH);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
