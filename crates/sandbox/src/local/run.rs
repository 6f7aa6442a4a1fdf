//! One invocation of the local backend, in two halves. [`prepare`] builds a sandbox up to the
//! point where Python waits on the harness for its request (cold: right now; warm: ahead of
//! time, in the pool). [`finish`] puts the invocation in (the folder's copy, then code,
//! inputs and environment), watches it under the wall-clock limit and tears everything down.
//!
//! Every resource is held by one [`Teardown`] guard, which releases them in its written order
//! on success, error, timeout and panic: the helper (killed, taking the sandbox's pid
//! namespace with it), the egress network, the cgroups (every member killed, groups removed),
//! the scratch folder, the slot.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use zeroize::Zeroizing;

use crate::cgroup::SandboxCgroup;
use crate::copyback;
use crate::jail::plan::CgroupNamespaceTiming;
use crate::local::Shared;
use crate::local::helper::Helper;
use crate::local::outcome::{self, Observed};
use crate::local::plan::{self as local_plan, PlanInputs};
use crate::local::pool::Class;
use crate::local::teardown::Teardown;
use crate::slot::Slot;
use crate::{Error, Invocation, NetworkMode, Observation};

/// Whether the jail loads its seccomp filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeccompMode {
    Enforced,
    #[cfg(feature = "test-controls")]
    DisabledForControlProbe,
}

/// What one sandbox holds on the host, in its teardown order.
type Parts = Teardown<Helper, crate::net::EgressNetwork, SandboxCgroup, ScratchDir, Slot>;

/// A sandbox whose Python waits for its request.
pub(crate) struct Prepared {
    parts: Parts,
    host_id: u32,
    /// The limits it was built with; the invocation's are applied at the claim.
    limits: crate::Limits,
    interpreter: String,
    /// Built by a refill at background priority: the claim restores nice 0.
    background: bool,
    /// Built before its invocation was known, with hard limits at the ceilings: the claim
    /// lowers them to the invocation's.
    ceilinged: bool,
}

/// The priority a sandbox is built at (see [`crate::local::priority`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priority {
    /// A request's own (cold) sandbox.
    Request,
    /// A warm pool refill, on a thread already lowered.
    Background,
    /// A sandbox built ahead of a request the caller announced ([`crate::local::LocalBackend::
    /// prepare_ahead`]): a request's priority, but it leaves the spare helper to later
    /// requests (a one-step `stepward run` then never spawns a spare it cannot use).
    Ahead,
}

impl Prepared {
    /// Blocks until the harness is loaded and waits for its request.
    pub(crate) fn wait_ready(&mut self) -> Result<(), Error> {
        self.parts.helper()?.wait_ready(READY_TIMEOUT)
    }
}

/// How long a pooled sandbox may take to load its runtime.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs one invocation: a warm sandbox of its class when the pool has one, else a cold one;
/// either way the pool is refilled off this path.
pub(crate) fn run(
    shared: &Arc<Shared>,
    invocation: Invocation,
    seccomp: SeccompMode,
) -> Result<Observation, Error> {
    let runtime = shared.runtimes.get(invocation.python)?;
    if let Some(observation) =
        Observation::needs_repair_before_any_sandbox("local", &invocation, runtime)
    {
        return Ok(observation);
    }
    if invocation.network == NetworkMode::PublicEgress && shared.options.egress.is_none() {
        return Ok(Observation::refused(
            "local",
            runtime.version.clone(),
            "public_egress is not configured on this server (no egress network options), so the step cannot get the network it declares",
        ));
    }
    let class = Class::of(invocation.python, invocation.network, &invocation.limits);
    match seccomp {
        SeccompMode::Enforced => {
            let warm = shared.pool.claim(&class);
            let observed = match warm {
                Some(prepared) => finish(shared, prepared, invocation),
                // Cold: built with the invocation's own limits, nothing to apply at the claim.
                None => prepare(shared, &class, &invocation.limits, seccomp)
                    .and_then(|prepared| finish(shared, prepared, invocation)),
            };
            // Refill after the step, so the new sandbox's start does not compete with the step
            // for the CPU; the refill itself runs on its own thread.
            crate::local::pool::refill(shared, &class);
            observed
        }
        #[cfg(feature = "test-controls")]
        SeccompMode::DisabledForControlProbe => {
            let prepared = prepare(shared, &class, &invocation.limits, seccomp)?;
            finish(shared, prepared, invocation)
        }
    }
}

/// Builds a sandbox of `class` under `limits` up to Python waiting on the harness (a warm
/// one gets its class's limits; the invocation's are applied when it is claimed).
pub(crate) fn prepare(
    shared: &Shared,
    class: &Class,
    limits: &crate::Limits,
    seccomp: SeccompMode,
) -> Result<Prepared, Error> {
    prepare_at(shared, class, limits, seccomp, Priority::Request)
}

/// [`prepare`] at a chosen priority.
pub(crate) fn prepare_at(
    shared: &Shared,
    class: &Class,
    limits: &crate::Limits,
    seccomp: SeccompMode,
    priority: Priority,
) -> Result<Prepared, Error> {
    prepare_with(shared, class, limits, seccomp, priority, None)
}

/// [`prepare_at`] with a helper the caller started earlier for this sandbox (see
/// [`crate::local::EarlyHelper`]): it is the sandbox's helper, and for `none` it was woken
/// when it was started, so its network namespace exists already.
pub(crate) fn prepare_with(
    shared: &Shared,
    class: &Class,
    limits: &crate::Limits,
    seccomp: SeccompMode,
    priority: Priority,
    early: Option<Helper>,
) -> Result<Prepared, Error> {
    let runtime = shared.runtimes.get(class.python)?;
    let limits = limits.clone();
    // Only a request's own sandbox is built for a known invocation.
    let ceilinged = priority != Priority::Request;
    let egress_options = match class.network {
        NetworkMode::None => None,
        NetworkMode::PublicEgress => {
            Some(
                shared
                    .options
                    .egress
                    .as_ref()
                    .ok_or_else(|| Error::LayerFailed {
                        layer: String::from("network"),
                        detail: String::from("public_egress is not configured on this server"),
                    })?,
            )
        }
    };
    // The slot gives the host uid/gid and the network's addresses. Taken before the helper, so
    // that a request refused for want of a slot spends no spare (a woken spare has made its
    // network namespace and cannot go back to the pool).
    let slot = shared.slots.acquire()?;
    // The helper next (the spare, or one spawned now), so that its start and, for `none`, the
    // sandbox's network namespace (the wake line) happen beside the folder and cgroups below.
    // Dropped on any error below (it exits, its namespace with it).
    let helper = match early {
        Some(helper) => FirstHelper::Spawned(helper),
        None => first_helper(shared, class.network, priority)?,
    };
    let host_id = shared
        .options
        .uid_base
        .checked_add(slot.index())
        .ok_or_else(|| Error::LayerFailed {
            layer: String::from("uid/gid maps"),
            detail: String::from("uid_base + slot overflows"),
        })?;
    let suffix = format!("{}-{}", slot.index(), crate::unique_nanos());
    let slot_index = slot.index();
    // From here on everything the sandbox holds is in `parts`: whatever fails below tears
    // down what was built so far, in the guard's order.
    let mut parts = Parts::new(slot);
    parts.hold_scratch(ScratchDir::create(
        &shared.options.scratch_dir(),
        &suffix,
        host_id,
        limits.work_bytes,
    )?);
    let work_dir = parts.scratch()?.work();
    // The folder's copy goes into `work` only when the invocation arrives; the sandbox sees it
    // through the bind mount of that directory. Until then it is empty and owned by the
    // sandbox user.
    std::os::unix::fs::chown(&work_dir, Some(host_id), Some(host_id))
        .map_err(|source| Error::io("cannot chown", &work_dir, source))?;
    parts.hold_cgroup(
        shared
            .cgroups
            .create_sandbox(&format!("sb-{suffix}"), &limits)?,
    );
    if let Some(options) = egress_options {
        parts.hold_network(crate::net::EgressNetwork::create(options, slot_index)?);
    }
    let network = parts.network();
    let extra_read_only = match network {
        // TLS needs the host's public CA bundle; it is public data.
        Some(_) => local_plan::egress_read_only(),
        None => Vec::new(),
    };
    let cgroup_namespace = if shared.cgroups.all_v2() {
        CgroupNamespaceTiming::AtClone
    } else {
        CgroupNamespaceTiming::AfterAttach
    };
    #[allow(unused_mut)]
    let mut plan = local_plan::build(PlanInputs {
        runtime,
        runtime_mounts: shared
            .runtime_views
            .get(&class.python)
            .map_or(&runtime.mounts[..], Vec::as_slice),
        limits: &limits,
        host_id,
        root_dir: shared.options.root_mountpoint(),
        work_dir: work_dir.clone(),
        harness_dir: shared.options.harness_dir(),
        cgroup: parts.cgroup()?,
        cgroup_v1_home_tasks: shared.cgroups.v1_home_tasks_files(),
        cgroup_namespace,
        netns: network.as_ref().map(|network| {
            let (device, inode) = network.netns_identity();
            crate::jail::plan::NetnsPlan {
                path: network.netns_path().to_path_buf(),
                device,
                inode,
            }
        }),
        resolv_conf: network.as_ref().map(|network| network.resolv_conf()),
        extra_read_only,
        ceilings: ceilinged.then_some(shared.options.ceilings),
    });
    #[cfg(feature = "test-controls")]
    {
        plan.test_whole_proc = shared.options.test_whole_proc;
    }
    match seccomp {
        SeccompMode::Enforced => {}
        #[cfg(feature = "test-controls")]
        SeccompMode::DisabledForControlProbe => {
            plan.test_seccomp = crate::jail::plan::SeccompSwitch::DisabledForControlProbe;
        }
    }
    parts.hold_helper(start_helper(shared, &plan, helper)?);
    Ok(Prepared {
        parts,
        host_id,
        limits,
        interpreter: runtime.version.clone(),
        background: priority == Priority::Background,
        ceilinged,
    })
}

/// The sandbox's helper, before anything else of the sandbox exists: a request's sandbox takes
/// the spare helper if one waits, and a new spare is spawned on the reaper's thread, off this
/// path; without a spare (and for a warm pool refill or a sandbox built ahead, which leave the
/// spare to requests) a helper is spawned right here, and it starts while the platform makes
/// the rest. A helper spawned here inherits this thread's priority (a refill's is lowered). A
/// refill never takes the spare so that under sustained load it is there for the next cold
/// request instead of that request paying the helper's fork and exec (issue 13, part 4). For
/// `none` the helper is woken at once: it makes the sandbox's network namespace now.
fn first_helper(
    shared: &Shared,
    network: NetworkMode,
    priority: Priority,
) -> Result<FirstHelper, Error> {
    if priority == Priority::Request {
        let spare = shared.spare.take();
        let refill = Arc::clone(&shared.spare);
        // A closed reaper hands the job back: the backend is going away and needs no spare.
        drop(shared.reaper.later(Box::new(move || refill.fill())));
        if let Some(mut spare) = spare
            && (network != NetworkMode::None || spare.wake_for_request().is_ok())
        {
            return Ok(FirstHelper::Spare(spare));
        }
    }
    let mut helper = Helper::spawn_idle(&shared.options.helper)?;
    if network == NetworkMode::None {
        if priority == Priority::Request {
            helper.wake_for_request()?;
        } else {
            helper.wake()?;
        }
    }
    Ok(FirstHelper::Spawned(helper))
}

/// Where a sandbox's helper came from: a spare that may have gone away meanwhile is replaced
/// by a fresh one; a helper spawned for this sandbox that fails is an error.
enum FirstHelper {
    Spare(Helper),
    Spawned(Helper),
}

/// Hands the helper its plan.
fn start_helper(
    shared: &Shared,
    plan: &crate::jail::plan::Plan,
    helper: FirstHelper,
) -> Result<Helper, Error> {
    match helper {
        FirstHelper::Spare(mut spare) => {
            if spare.send_plan(plan).is_ok() {
                return Ok(spare);
            }
            Helper::spawn(&shared.options.helper, plan)
        }
        FirstHelper::Spawned(mut helper) => {
            helper.send_plan(plan)?;
            Ok(helper)
        }
    }
}

/// Puts the invocation into a prepared sandbox, watches it, and tears it down.
pub(crate) fn finish(
    shared: &Shared,
    prepared: Prepared,
    invocation: Invocation,
) -> Result<Observation, Error> {
    // Every early return below drops `parts`, which tears the sandbox down in its written
    // order (the helper first, the slot last; see `local::teardown`).
    let Prepared {
        mut parts,
        host_id,
        limits,
        interpreter,
        background,
        ceilinged,
    } = prepared;
    let work = parts.scratch()?.work();
    // A sandbox a refill built at background priority runs the step at a cold step's:
    // every thread of the helper and of the sandbox's one process back to nice 0, before
    // anything of the invocation goes in.
    if background {
        crate::local::priority::set_process(parts.helper()?.pid(), 0)?;
        for pid in parts.cgroup()?.member_pids()? {
            crate::local::priority::set_process(pid as u32, 0)?;
        }
    }
    // The invocation's declared limits, before anything of it goes in.
    crate::local::claim::apply(
        parts.cgroup()?,
        &work,
        host_id,
        &limits,
        &invocation.limits,
        ceilinged.then_some(shared.options.ceilings),
    )?;
    let manifest = copyback::stage_in(&invocation.files, &work, (host_id, host_id))?;
    let request = crate::request::harness_request(&invocation)?;

    let deadline = Instant::now()
        .checked_add(invocation.limits.wall)
        .unwrap_or_else(Instant::now);
    // On an error the guard drops right here, the helper first (it kills and reaps the
    // sandbox's first process before it exits).
    let watched = {
        let (helper, cgroup) = parts.helper_and_cgroup()?;
        helper.watch(
            &request,
            deadline,
            &invocation.limits,
            cgroup,
            invocation.live.as_ref(),
        )?
    };
    if let Some((layer, detail)) = watched.layer_failure {
        // Fail closed: the sandbox never ran the step. The guard tears everything down.
        return Err(Error::LayerFailed {
            layer: layer.name().to_owned(),
            detail,
        });
    }
    let oom_killed = parts.cgroup()?.oom_killed();
    // Every process of the sandbox is dead before the copy-back looks at its files (the
    // groups themselves go with the rest of the teardown, below).
    parts.cgroup()?.kill_all_members()?;
    // The egress network goes now: callers and tests expect it gone when the step's
    // observation arrives (moving it to the reaper would save its teardown time).
    parts.drop_network();

    let stderr_tail = crate::tail::stderr_tail(&watched.stderr);
    let outcome = outcome::classify(&Observed {
        network: invocation.network,
        termination: watched.termination,
        cpu_millis: watched.cpu_millis,
        cpu_limit_seconds: invocation.limits.cpu_seconds,
        timed_out: watched.timed_out,
        oom_killed,
        report_overflow: watched.report_overflow,
        report: &watched.report,
        stderr_tail,
    });
    let copy_back = copyback::collect(
        &work,
        &manifest,
        &shared.options.copy_back,
        invocation.screen.as_ref(),
    )?;
    // Every process is dead and the copy-back is collected: the rest of the teardown
    // (reaping the helper, removing the groups and the scratch folder, freeing the slot)
    // costs milliseconds and runs on the reaper, off the request's path, in the guard's order.
    shared.reaper.dispose(Box::new(parts));
    Ok(Observation {
        outcome,
        stdout: Zeroizing::new(watched.stdout),
        stderr: Zeroizing::new(watched.stderr),
        output_truncated: watched.output_truncated,
        copy_back,
        interpreter,
        backend: "local",
        isolation_notes: watched.notes,
    })
}

/// The scratch folder of one sandbox: `work` (the folder's copy, `/work`). Removed on drop.
/// (The sandbox's root is mounted on the backend's shared, empty mount point: see
/// `LocalOptions::root_mountpoint`.)
struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    fn create(parent: &Path, suffix: &str, host_id: u32, work_bytes: u64) -> Result<Self, Error> {
        let path = parent.join(format!("sb-{suffix}"));
        std::fs::create_dir(&path).map_err(|source| Error::io("cannot create", &path, source))?;
        let scratch = Self { path };
        // Searchable by root and by this sandbox's group only: the jail's child binds `work`
        // after it took the sandbox's id.
        std::os::unix::fs::chown(&scratch.path, Some(0), Some(host_id))
            .map_err(|source| Error::io("cannot chown", &scratch.path, source))?;
        crate::local::set_mode(&scratch.path, 0o710)?;
        let work = scratch.work();
        std::fs::create_dir(&work).map_err(|source| Error::io("cannot create", &work, source))?;
        mount_work_tmpfs(&scratch.work(), host_id, work_bytes)?;
        Ok(scratch)
    }

    fn work(&self) -> PathBuf {
        self.path.join("work")
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Detach first: removing the files one by one from a tmpfs would only waste time.
        let _ = rustix::mount::unmount(self.work(), rustix::mount::UnmountFlags::DETACH);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The inode cap of a `/work` of `work_bytes`.
pub(crate) fn work_inodes(work_bytes: u64) -> u64 {
    (work_bytes / 8192).clamp(1024, 1 << 20)
}

/// `/work` is a tmpfs of its own, sized by [`crate::Limits::work_bytes`], with an inode cap to
/// match: the staged folder and everything the step writes there live in it, so a step can
/// never fill the host's disk or its inodes (RLIMIT_FSIZE alone caps single files only). Its
/// pages are charged to whoever writes them, so what the step writes also counts against the
/// sandbox's memory limit.
pub(crate) fn mount_work_tmpfs(work: &Path, host_id: u32, work_bytes: u64) -> Result<(), Error> {
    let inodes = work_inodes(work_bytes);
    crate::local::scratch_fs::mount_tmpfs(
        "tmpfs",
        work,
        &format!("size={work_bytes},nr_inodes={inodes},mode=0700,uid={host_id},gid={host_id}"),
        "work size cap",
    )
}
