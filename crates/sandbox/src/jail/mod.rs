//! The jail helper: a small single-threaded program the platform execs with an empty
//! environment for every sandbox. It reads its [`plan::Plan`] from a pipe and builds the
//! sandbox in a fixed order (after bubblewrap, nsjail and firecracker's jailer), then execs
//! Python on the runner harness. Every mandatory layer that fails is reported by name over the
//! status channel and the sandbox is not started (fail closed).
//!
//! The order, numbered as in the code:
//! - helper: (0) close inherited descriptors, wait for the request: an empty line on the
//!   control pipe (the platform sends it when a `none` request arrives, before it makes the
//!   sandbox's slot, folder and cgroups) makes the helper unshare a fresh network namespace
//!   while the platform works (a `none` sandbox inherits it), then read the plan; (1) drop
//!   supplementary groups;
//!   (2) join the egress network namespace if any; (3) move its own thread into the v1
//!   cgroups; (4) one clone into new user, mount, pid, ipc, uts (+ net, + cgroup) namespaces,
//!   straight into the v2 cgroup, the v1 groups inherited; (5) move back out of the v1
//!   groups; (6) setgroups deny, single-line uid and gid maps to the unprivileged host id;
//!   (7) release the child; (8) bring up the loopback of the namespace made in step 0 (while
//!   the child builds its mounts) and tell the child the network is ready; then supervise it.
//! - child: (1) die with the helper; (2) wait for release; (3) become the sandbox user (see
//!   below) and die with the helper again (an id change clears it); (4) cgroup namespace if not
//!   made at clone; (5) hostname; (5b) loopback up when the clone made the network
//!   namespace (otherwise the helper brings it up in its step 8); (6) private mounts; (7) tmpfs
//!   root; (8) runtime, harness,
//!   /dev, /proc with masks, /work, /tmp; (9) /etc files; (10) pivot_root and detach the old
//!   root; (11) root read-only; (12) descriptors above 3 close at exec; (13) setsid;
//!   (14) rlimits; (15) bounding set; (16) all remaining capabilities; (17) no_new_privs;
//!   (18) Landlock; (18b) wait for the helper's word that the network is ready; (19) seccomp,
//!   last; (20) exec.
//!
//! Why the id change comes before the mounts: the user namespace maps exactly one id, the
//! sandbox user, to one unprivileged host id. Until the child takes that id it runs as host
//! root, which has no mapping in its namespace, and the kernel refuses to create any file
//! (EOVERFLOW) for an owner it cannot represent. Taking the mapped id keeps the capabilities
//! the child holds in its own namespace (the namespace's root id is unmapped, so the kernel's
//! "leaving root" rule does not apply); they are all dropped in steps 15-16.

mod confine;
mod filter;
mod layer;
pub use layer::Layer;
#[cfg(feature = "test-controls")]
mod filter_bench;
#[cfg(feature = "test-controls")]
pub use filter_bench::{FilterLayout, SyscallCosts, syscall_costs};
#[cfg(feature = "test-controls")]
mod floor_bench;
#[cfg(feature = "test-controls")]
pub use floor_bench::{FloorClone, namespace_floor};
pub(crate) mod plan;
pub(crate) mod sys;

#[cfg(test)]
mod order_tests;

use std::convert::Infallible;
use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::jail::plan::{CgroupNamespaceTiming, MountStep, Plan, fds};
use crate::jail::sys::{Forked, LandlockOutcome, MountFlags, ProcView, RealSys, Sys};

/// What the helper tells the platform, one JSON object per line on [`fds::STATUS`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Something the run's record should carry (e.g. Landlock missing).
    Note { text: String },
    /// A mandatory layer failed; the sandbox did not start.
    Failed { layer: Layer, detail: String },
    /// Python was exec'd inside the finished sandbox.
    Running,
    /// The sandbox's first process exited with this code, having used this much CPU (itself
    /// and the children it waited for).
    Exited { code: i32, cpu_millis: u64 },
    /// The sandbox's first process was killed by this signal.
    Signaled { signal: i32, cpu_millis: u64 },
}

/// A layer that failed, with what was being done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub layer: Layer,
    pub detail: String,
}

fn failed(layer: Layer, what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> Failure {
    let what = what.to_string();
    move |error| Failure {
        layer,
        detail: format!("{what}: {error}"),
    }
}

/// The helper's entry point (the `stepward-jail` program, `stepward __jail`, or this crate's
/// `sandbox-jail`). Never returns.
pub fn jail_main() -> ! {
    let mut sys = RealSys::new();
    let code = match helper(&mut sys) {
        Ok(code) => code,
        Err(failure) => {
            send_status(&Status::Failed {
                layer: failure.layer,
                detail: failure.detail,
            });
            125
        }
    };
    std::process::exit(code)
}

/// What happened after the clone, in the process that returns.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Started {
    /// In the helper: the child is released.
    Helper { child: i32, pidfd: RawFd },
    /// In the child: setup failed at this layer (on success the child is Python by now).
    ChildFailed(Failure),
}

fn helper(sys: &mut RealSys) -> Result<i32, Failure> {
    // 0. Nothing but the descriptors the platform arranged survives, and the plan comes
    //    first on the control pipe (after the wake line, when there is one).
    close_unexpected_fds();
    let mut control = ControlLines::default();
    let first = control.next_line()?;
    // A spare helper holds nothing until a request arrives: not even a network namespace
    // (issue 13: a cold sandbox's namespaces are made after its request). The empty line is
    // that request, for a `none` sandbox: the helper makes the sandbox's fresh, empty network
    // namespace now, while the platform makes its slot, folder and cgroups, so the half
    // millisecond the kernel spends on it is off the sandbox's path but inside its request.
    // A `none` sandbox inherits it at the clone; it belongs to the host's user namespace, so
    // the sandbox never holds a capability over it. Its loopback is brought up by the helper
    // (root in the namespace's owning user namespace) once the child is released, while the
    // child builds its mounts, and the child execs Python only after the helper says it is up:
    // local sockets are ordinary Python (G11: "no interfaces but a loopback"), and the 0.2 ms
    // the kernel spends on it is off the path too. Where the namespace cannot be made, the
    // clone makes one as before. A plan that comes without the wake line gets its namespace
    // the same way, right after the plan; public_egress joins the platform's namespace instead
    // (step 2).
    let (private_network, plan_line) = if first.is_empty() {
        (Some(make_private_network(sys)), control.next_line()?)
    } else {
        (None, first)
    };
    let plan: Plan = serde_json::from_slice(&plan_line).map_err(|error| Failure {
        layer: Layer::Helper,
        detail: format!(
            "unreadable plan: {error} (a jail helper of another build of stepward? install \
             stepward and stepward-jail together)"
        ),
    })?;
    same_build(&plan)?;
    let private_network = match private_network {
        Some(made) => made,
        None if plan.netns.is_none() => make_private_network(sys),
        None => PrivateNetwork::AtClone,
    };
    match start(sys, &plan, private_network)? {
        Started::Helper { child, pidfd } => supervise(sys.setup_channel(), child, pidfd),
        Started::ChildFailed(failure) => {
            sys.child_report(&Status::Failed {
                layer: failure.layer,
                detail: failure.detail,
            });
            // SAFETY: _exit ends the child without running the helper's exit handlers.
            unsafe { libc::_exit(127) }
        }
    }
}

/// A plan from a platform of another build is refused: a `stepward-jail` left from an older
/// install beside a newer `stepward` must not build sandboxes with its older layers.
pub(crate) fn same_build(plan: &Plan) -> Result<(), Failure> {
    if plan.build == plan::BUILD {
        return Ok(());
    }
    Err(Failure {
        layer: Layer::Helper,
        detail: format!(
            "this jail helper is build {} and the platform is build {}: install stepward and \
             stepward-jail together",
            plan::BUILD,
            plan.build
        ),
    })
}

/// A fresh network namespace for the helper itself (see step 0); its loopback comes up in
/// helper step 8.
fn make_private_network(sys: &mut RealSys) -> PrivateNetwork {
    match sys.unshare_network_namespace() {
        Ok(()) => PrivateNetwork::MadeByHelper,
        Err(_) => PrivateNetwork::AtClone,
    }
}

/// Where a `none` sandbox's fresh network namespace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrivateNetwork {
    /// The helper unshared one of its own before reading the plan; the clone inherits it, and
    /// the helper brings its loopback up after the release.
    MadeByHelper,
    /// The clone makes one (`CLONE_NEWNET`).
    AtClone,
}

/// Helper steps 1-8 and, in the child, child steps 1-20.
pub(crate) fn start<S: Sys>(
    sys: &mut S,
    plan: &Plan,
    private_network: PrivateNetwork,
) -> Result<Started, Failure> {
    // 1. The helper runs as host root; without this the sandbox would keep root's
    //    supplementary groups (host gid 0) for file access checks.
    sys.drop_supplementary_groups()
        .map_err(failed(Layer::Identity, "setgroups(0) in the helper"))?;
    // 2. public_egress: the sandbox lives in the namespace the platform built and owns.
    if let Some(netns) = &plan.netns {
        sys.join_network_namespace(netns).map_err(failed(
            Layer::Network,
            format!("setns {}", netns.path.display()),
        ))?;
    }
    // 3. v1 controllers: the helper (one thread) moves itself into the sandbox's groups, so
    //    the clone below inherits them and the child is a member before it runs anything.
    //    Writing `0` to `tasks` moves the calling thread alone, which spares the kernel's
    //    global threadgroup lock and its RCU grace period (milliseconds per `cgroup.procs`
    //    write on v1).
    for tasks in &plan.cgroup_v1_tasks {
        sys.write_control_file(tasks, "0")
            .map_err(failed(Layer::Cgroup, format!("join {}", tasks.display())))?;
    }
    // 4. One clone into every namespace. The child is in its cgroups before it runs (v2 by
    //    CLONE_INTO_CGROUP, v1 inherited), and waits on the release pipe before it does
    //    anything else (maps).
    let mut flags = (libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS) as u64;
    let loopback = match (&plan.netns, private_network) {
        (None, PrivateNetwork::AtClone) => {
            flags |= libc::CLONE_NEWNET as u64;
            Loopback::ChildBringsUp
        }
        (None, PrivateNetwork::MadeByHelper) => Loopback::HelperBringsUp,
        (Some(_), _) => Loopback::UpAlready,
    };
    if plan.cgroup_namespace == CgroupNamespaceTiming::AtClone {
        flags |= libc::CLONE_NEWCGROUP as u64;
    }
    let forked = sys
        .clone_child(flags, plan.cgroup_v2_dir.as_deref())
        .map_err(failed(Layer::Namespaces, "clone3 into new namespaces"))?;
    match forked {
        Forked::Parent { child, pidfd } => {
            if let Err(failure) = parent_setup(sys, plan, child, loopback) {
                // The child is still waiting for its release or for the network's word; it
                // must not outlive us.
                sys.kill_child(child);
                return Err(failure);
            }
            Ok(Started::Helper { child, pidfd })
        }
        Forked::Child => match child_setup(sys, plan, loopback) {
            Err(failure) => Ok(Started::ChildFailed(failure)),
            Ok(never) => match never {},
        },
    }
}

fn parent_setup<S: Sys>(
    sys: &mut S,
    plan: &Plan,
    child: i32,
    loopback: Loopback,
) -> Result<(), Failure> {
    // 5. The helper leaves the sandbox's v1 groups: it must neither count against their
    //    limits nor die when the platform kills their members.
    for tasks in &plan.cgroup_v1_home_tasks {
        sys.write_control_file(tasks, "0").map_err(failed(
            Layer::Cgroup,
            format!("return to {}", tasks.display()),
        ))?;
    }
    // 6. Single-line maps to one unprivileged host id; setgroups denied first (a process
    //    that could drop groups could shed a deny-by-group rule on the host).
    if plan.host_uid == 0 || plan.host_gid == 0 {
        return Err(Failure {
            layer: Layer::UidGidMaps,
            detail: String::from("the sandbox user must map to a non-zero host uid and gid"),
        });
    }
    let proc_dir = PathBuf::from(format!("/proc/{child}"));
    sys.write_control_file(&proc_dir.join("setgroups"), "deny")
        .map_err(failed(Layer::UidGidMaps, "setgroups deny"))?;
    sys.write_control_file(
        &proc_dir.join("uid_map"),
        &format!("{} {} 1\n", plan.sandbox_uid, plan.host_uid),
    )
    .map_err(failed(Layer::UidGidMaps, "uid_map"))?;
    sys.write_control_file(
        &proc_dir.join("gid_map"),
        &format!("{} {} 1\n", plan.sandbox_gid, plan.host_gid),
    )
    .map_err(failed(Layer::UidGidMaps, "gid_map"))?;
    // 7. Release.
    sys.release_child()
        .map_err(failed(Layer::Release, "release the child"))?;
    // 8. The loopback of the namespace made in step 0 comes up while the child builds its
    //    mounts; the child waits for this word before it execs Python (fail closed: a helper
    //    that cannot bring it up kills the child, which then never hears it).
    if loopback == Loopback::HelperBringsUp {
        sys.bring_up_loopback()
            .map_err(failed(Layer::Network, "bring up the loopback"))?;
    }
    match sys.signal_network_ready() {
        Ok(()) => Ok(()),
        // The child failed a step of its own and exited (its end of the pipe is closed): it
        // can no longer exec, and the layer it failed is waiting on the setup channel, which
        // the helper reads next. Reporting "release" here would hide that layer.
        Err(error) if error.raw_os_error() == Some(libc::EPIPE) => Ok(()),
        Err(error) => Err(failed(
            Layer::Release,
            "tell the child the network is ready",
        )(error)),
    }
}

/// Who brings up the loopback of the sandbox's network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loopback {
    /// The platform did (public_egress).
    UpAlready,
    /// The helper made the namespace (step 0) and brings `lo` up after the release (step 8).
    HelperBringsUp,
    /// The clone made the namespace: the child brings `lo` up while it still holds its
    /// capabilities there (step 5b).
    ChildBringsUp,
}

const READ_ONLY: MountFlags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
const NO_EXEC: MountFlags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

fn child_setup<S: Sys>(
    sys: &mut S,
    plan: &Plan,
    loopback: Loopback,
) -> Result<Infallible, Failure> {
    // 1. Die with the helper, which dies with the platform.
    sys.set_parent_death_signal()
        .map_err(failed(Layer::ParentDeathSignal, "PR_SET_PDEATHSIG"))?;
    // 2. Wait until the maps and cgroups are in place.
    sys.wait_for_release()
        .map_err(failed(Layer::Release, "wait for release"))?;
    // 3. The sandbox user, the one id mapped; the parent-death signal again, since an id
    //    change clears it.
    sys.set_ids(plan.sandbox_uid, plan.sandbox_gid)
        .map_err(failed(Layer::Identity, "setresgid/setresuid"))?;
    sys.set_parent_death_signal().map_err(failed(
        Layer::ParentDeathSignal,
        "PR_SET_PDEATHSIG after the id change",
    ))?;
    // 4. Cgroup namespace rooted at the sandbox's own groups.
    if plan.cgroup_namespace == CgroupNamespaceTiming::AfterAttach {
        sys.unshare_cgroup_namespace()
            .map_err(failed(Layer::Namespaces, "unshare(CLONE_NEWCGROUP)"))?;
    }
    // 5. A hostname that says nothing about the host.
    sys.set_hostname(&plan.hostname)
        .map_err(failed(Layer::Hostname, "sethostname"))?;
    // 5b. A namespace the clone made has its loopback down; bring it up (fail closed: the
    //     sandbox promises one).
    if loopback == Loopback::ChildBringsUp {
        sys.bring_up_loopback()
            .map_err(failed(Layer::Network, "bring up the loopback"))?;
    }
    // 6. Nothing we mount propagates to the host, nothing of the host's propagates in.
    sys.make_mounts_private()
        .map_err(failed(Layer::Mounts, "make / private"))?;
    // 7. The new root: an empty tmpfs.
    sys.mount_tmpfs(
        &plan.root_dir,
        libc::MS_NOSUID | libc::MS_NODEV,
        &format!("size={},mode=0755", plan.root_size_bytes),
    )
    .map_err(failed(
        Layer::Mounts,
        format!("tmpfs root at {}", plan.root_dir.display()),
    ))?;
    // 8. Everything the sandbox may see, in plan order.
    //    On a /proc of the sandbox's processes only, the masks and read-only binds under it
    //    have nothing to hide and are skipped.
    let mut proc = ProcMount {
        only_processes: !whole_proc(plan),
        view: None,
    };
    for step in &plan.mounts {
        mount_step(sys, &plan.root_dir, step, &mut proc)?;
    }
    // 9. /etc and other small files, written while the root is still writable.
    for file in &plan.files {
        let target = under(&plan.root_dir, &file.target);
        if let Some(parent) = target.parent() {
            sys.create_dir_all(parent, 0o755)
                .map_err(failed(Layer::Files, format!("mkdir {}", parent.display())))?;
        }
        sys.create_file(&target, file.contents.as_bytes(), file.mode)
            .map_err(failed(
                Layer::Files,
                format!("write {}", file.target.display()),
            ))?;
    }
    // 10. Switch roots; the host's root is detached and unreachable.
    sys.pivot_root(&plan.root_dir).map_err(failed(
        Layer::PivotRoot,
        format!("pivot_root into {}", plan.root_dir.display()),
    ))?;
    // 11. The root itself becomes read-only.
    sys.remount_root_read_only()
        .map_err(failed(Layer::Mounts, "remount / read-only"))?;
    sys.change_directory(&plan.cwd).map_err(failed(
        Layer::Mounts,
        format!("chdir {}", plan.cwd.display()),
    ))?;
    // 12. Only stdin, stdout, stderr and the report channel reach Python.
    sys.close_other_fds()
        .map_err(failed(Layer::Descriptors, "close_range"))?;
    // 13. A session of its own: no controlling terminal to inject into.
    sys.new_session()
        .map_err(failed(Layer::Session, "setsid"))?;
    // 14. Limits on every process of the sandbox.
    for limit in &plan.rlimits {
        sys.set_rlimit(*limit)
            .map_err(failed(Layer::Rlimits, format!("{:?}", limit.resource)))?;
    }
    // 15. The bounding set, while CAP_SETPCAP is still held.
    sys.drop_bounding_set()
        .map_err(failed(Layer::Capabilities, "PR_CAPBSET_DROP"))?;
    // 16. No capability of any kind is left.
    sys.clear_capabilities().map_err(failed(
        Layer::Capabilities,
        "clear ambient/inheritable/permitted/effective",
    ))?;
    // 17. Nothing exec'd can gain privileges (and seccomp may be loaded unprivileged).
    sys.set_no_new_privs()
        .map_err(failed(Layer::NoNewPrivs, "PR_SET_NO_NEW_PRIVS"))?;
    // 18. Landlock where the kernel has it; its absence is recorded, not fatal.
    match sys.apply_landlock(&plan.landlock) {
        LandlockOutcome::Enforced => {}
        LandlockOutcome::PartiallyEnforced { detail } => sys.child_report(&Status::Note {
            text: format!("landlock partially enforced: {detail}"),
        }),
        LandlockOutcome::Unavailable { detail } => sys.child_report(&Status::Note {
            text: format!("landlock unavailable: {detail}"),
        }),
    }
    // 18b. The helper brings the loopback up while the steps above run; Python starts only
    //     once it is (G11: local sockets work from the step's first line).
    sys.wait_for_network()
        .map_err(failed(Layer::Network, "wait for the network namespace"))?;
    // 19. seccomp, last: every syscall above was made before the filter existed.
    if seccomp_enforced(plan) {
        sys.load_seccomp()
            .map_err(failed(Layer::Seccomp, "load the compiled filters"))?;
    } else {
        sys.child_report(&Status::Note {
            text: String::from("TEST CONTROL: seccomp filter off for a control probe"),
        });
    }
    // 20. Python on the harness, with an empty environment.
    let error = sys.exec(&plan.exec_path, &plan.exec_argv);
    Err(Failure {
        layer: Layer::Exec,
        detail: format!("execve {}: {error}", plan.exec_path.display()),
    })
}

#[cfg(feature = "test-controls")]
fn seccomp_enforced(plan: &Plan) -> bool {
    plan.test_seccomp == plan::SeccompSwitch::Enforced
}

#[cfg(not(feature = "test-controls"))]
fn seccomp_enforced(_plan: &Plan) -> bool {
    true
}

#[cfg(feature = "test-controls")]
fn whole_proc(plan: &Plan) -> bool {
    plan.test_whole_proc
}

#[cfg(not(feature = "test-controls"))]
fn whole_proc(_plan: &Plan) -> bool {
    false
}

/// A sandbox path under the new root, before the pivot.
fn under(root: &Path, target: &Path) -> PathBuf {
    root.join(target.strip_prefix("/").unwrap_or(target))
}

/// What a mount point must be: the kernel binds a directory only on a directory and a file
/// only on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Directory,
    File,
}

fn make_mountpoint<S: Sys>(sys: &mut S, target: &Path, kind: NodeKind) -> Result<(), Failure> {
    if let Some(parent) = target.parent() {
        sys.create_dir_all(parent, 0o755)
            .map_err(failed(Layer::Mounts, format!("mkdir {}", parent.display())))?;
    }
    let result = match kind {
        NodeKind::Directory => sys.create_dir_all(target, 0o755),
        NodeKind::File => sys.create_file(target, b"", 0o444),
    };
    match result {
        Err(error) if error.kind() != io::ErrorKind::AlreadyExists => Err(failed(
            Layer::Mounts,
            format!("mount point {}", target.display()),
        )(error)),
        _ => Ok(()),
    }
}

/// The sandbox's `/proc` as the mount steps go: whether to ask for the sandbox's processes
/// only, and what the `Proc` step got.
struct ProcMount {
    only_processes: bool,
    view: Option<ProcView>,
}

fn mount_step<S: Sys>(
    sys: &mut S,
    root: &Path,
    step: &MountStep,
    proc: &mut ProcMount,
) -> Result<(), Failure> {
    if proc.view == Some(ProcView::OwnProcesses) && hides_part_of_proc(step) {
        return Ok(());
    }
    match step {
        MountStep::Dir { target, mode } => sys
            .create_dir_all(&under(root, target), *mode)
            .map_err(failed(Layer::Mounts, format!("mkdir {}", target.display()))),
        MountStep::BindReadOnly { source, target } => {
            bind_with(sys, root, source, target, READ_ONLY)
        }
        MountStep::BindWritableNoExec { source, target } => {
            bind_with(sys, root, source, target, NO_EXEC)
        }
        MountStep::BindDevice { source, target } => {
            bind_with(sys, root, source, target, libc::MS_NOSUID | libc::MS_NOEXEC)
        }
        MountStep::Tmpfs {
            target,
            size_bytes,
            inodes,
            mode,
        } => {
            let at = under(root, target);
            make_mountpoint(sys, &at, NodeKind::Directory)?;
            sys.mount_tmpfs(
                &at,
                NO_EXEC,
                &format!("size={size_bytes},nr_inodes={inodes},mode={mode:o}"),
            )
            .map_err(failed(
                Layer::Mounts,
                format!("tmpfs at {}", target.display()),
            ))
        }
        MountStep::MaskDir { target } => {
            let at = under(root, target);
            match sys
                .probe(&at)
                .map_err(failed(Layer::Mounts, format!("stat {}", target.display())))?
            {
                Some(true) => sys
                    .mount_tmpfs(
                        &at,
                        READ_ONLY | libc::MS_NOEXEC,
                        "size=4k,nr_inodes=1,mode=0555",
                    )
                    .map_err(failed(Layer::Mounts, format!("mask {}", target.display()))),
                _ => Ok(()),
            }
        }
        MountStep::MaskFile { target } => {
            let at = under(root, target);
            match sys
                .probe(&at)
                .map_err(failed(Layer::Proc, format!("stat {}", target.display())))?
            {
                Some(false) => {
                    sys.bind(Path::new("/dev/null"), &at)
                        .map_err(failed(Layer::Proc, format!("mask {}", target.display())))?;
                    sys.remount_bind(&at, READ_ONLY | libc::MS_NOEXEC)
                        .map_err(failed(
                            Layer::Proc,
                            format!("mask {} read-only", target.display()),
                        ))
                }
                _ => Ok(()),
            }
        }
        MountStep::Proc { target } => {
            proc.view = Some(mount_fresh_proc(sys, root, target, proc.only_processes)?);
            Ok(())
        }
        MountStep::ReadOnly { target } => {
            let at = under(root, target);
            match sys
                .probe(&at)
                .map_err(failed(Layer::Proc, format!("stat {}", target.display())))?
            {
                Some(_) => {
                    sys.bind(&at, &at)
                        .map_err(failed(Layer::Proc, format!("bind {}", target.display())))?;
                    sys.remount_bind(&at, READ_ONLY | libc::MS_NOEXEC)
                        .map_err(failed(
                            Layer::Proc,
                            format!("{} read-only", target.display()),
                        ))
                }
                None => Ok(()),
            }
        }
        MountStep::Symlink { target, points_to } => {
            let at = under(root, target);
            if let Some(parent) = at.parent() {
                sys.create_dir_all(parent, 0o755)
                    .map_err(failed(Layer::Mounts, format!("mkdir {}", parent.display())))?;
            }
            sys.symlink(points_to, &at).map_err(failed(
                Layer::Mounts,
                format!("symlink {}", target.display()),
            ))
        }
    }
}

/// A fresh /proc at `target`; a whole procfs (an older kernel) is recorded.
fn mount_fresh_proc<S: Sys>(
    sys: &mut S,
    root: &Path,
    target: &Path,
    only_processes: bool,
) -> Result<ProcView, Failure> {
    let at = under(root, target);
    make_mountpoint(sys, &at, NodeKind::Directory)?;
    let view = sys.mount_proc(&at, only_processes).map_err(failed(
        Layer::Proc,
        "mount a fresh /proc for the sandbox's pid namespace",
    ))?;
    if view == ProcView::Full {
        sys.child_report(&Status::Note {
            text: String::from(
                "this kernel cannot mount a /proc of the sandbox's processes only (subset=pid, \
                 Linux 5.8 or later): /proc shows the kernel's tables, with the host's knobs \
                 masked",
            ),
        });
    }
    Ok(view)
}

/// A mask or read-only bind of something under `/proc`.
fn hides_part_of_proc(step: &MountStep) -> bool {
    match step {
        MountStep::MaskFile { target }
        | MountStep::MaskDir { target }
        | MountStep::ReadOnly { target } => target.starts_with("/proc"),
        _ => false,
    }
}

fn bind_with<S: Sys>(
    sys: &mut S,
    root: &Path,
    source: &Path,
    target: &Path,
    flags: MountFlags,
) -> Result<(), Failure> {
    let directory = sys
        .probe(source)
        .map_err(failed(Layer::Mounts, format!("stat {}", source.display())))?
        .ok_or_else(|| Failure {
            layer: Layer::Mounts,
            detail: format!("bind source {} does not exist", source.display()),
        })?;
    let at = under(root, target);
    let kind = if directory {
        NodeKind::Directory
    } else {
        NodeKind::File
    };
    make_mountpoint(sys, &at, kind)?;
    sys.bind(source, &at).map_err(failed(
        Layer::Mounts,
        format!("bind {} at {}", source.display(), target.display()),
    ))?;
    sys.remount_bind(&at, flags).map_err(failed(
        Layer::Mounts,
        format!("remount {}", target.display()),
    ))
}

/// Closes every descriptor the platform did not arrange (defence in depth: the platform
/// opens everything close-on-exec, but a library might not).
fn close_unexpected_fds() {
    // SAFETY: close_range on descriptors this process does not use.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            fds::FIRST_UNEXPECTED,
            libc::c_uint::MAX,
            0,
        );
    }
}

/// The control pipe, line by line: at most a wake line (empty) and the plan. The platform
/// writes nothing after the plan, so reading in blocks never takes anything that is not one of
/// these lines.
#[derive(Default)]
struct ControlLines {
    pending: Vec<u8>,
}

impl ControlLines {
    /// The next line without its newline; at end of file, what was read (an error when
    /// nothing was: the platform went away without a plan).
    fn next_line(&mut self) -> Result<Vec<u8>, Failure> {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            if let Some(end) = self.pending.iter().position(|byte| *byte == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=end).collect();
                line.pop();
                return Ok(line);
            }
            // SAFETY: reads into a live buffer from the control pipe.
            let read =
                unsafe { libc::read(fds::CONTROL, buffer.as_mut_ptr().cast(), buffer.len()) };
            if read > 0 {
                self.pending.extend_from_slice(&buffer[..read as usize]);
            } else if read == 0 {
                if self.pending.is_empty() {
                    return Err(Failure {
                        layer: Layer::Helper,
                        detail: String::from("the control pipe closed before a plan arrived"),
                    });
                }
                return Ok(std::mem::take(&mut self.pending));
            } else if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(failed(Layer::Helper, "read the plan")(
                    io::Error::last_os_error(),
                ));
            }
        }
    }
}

/// Writes all of `bytes` to `fd`, ignoring errors (the reader may be gone).
pub(crate) fn write_all_fd(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live buffer to a descriptor this process holds.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written <= 0 {
            if written == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[written as usize..];
    }
}

fn send_status(status: &Status) {
    if let Ok(mut line) = serde_json::to_vec(status) {
        line.push(b'\n');
        write_all_fd(fds::STATUS, &line);
    }
}

/// The helper after the release: relays the child's setup reports, says when Python runs,
/// kills the sandbox if the platform goes away, and reports how the first process ended.
fn supervise(setup_channel: RawFd, child: i32, pidfd: RawFd) -> Result<i32, Failure> {
    // Held until this function returns, after the exit status went out: when the sandbox's
    // last process exits, its mount namespace then stays alive, so the kernel does not
    // unmount every mount (and wait for an RCU grace period) on that exit, which the
    // platform waits for; the unmount happens when this helper closes it, afterwards. A
    // child that is already gone simply has no namespace to hold.
    let _mount_namespace = std::fs::File::open(format!("/proc/{child}/ns/mnt")).ok();
    // The sandbox's stdio and report channel belong to the child now; our copies would keep
    // the platform's readers from seeing end of file.
    for fd in [fds::REQUEST, fds::STDOUT, fds::STDERR, fds::REPORT] {
        // SAFETY: closing descriptors only the child uses from here on.
        unsafe {
            libc::close(fd);
        }
    }
    let mut setup_open = true;
    let mut setup_failed = false;
    let mut platform_gone = false;
    let mut pending = Vec::new();
    loop {
        let mut polled = [
            libc::pollfd {
                fd: if setup_open { setup_channel } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if platform_gone { -1 } else { fds::CONTROL },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll over an array we own.
        let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, -1) };
        if ready == -1 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(failed(Layer::Helper, "poll")(io::Error::last_os_error()));
        }
        if setup_open && polled[0].revents != 0 {
            let mut buffer = [0u8; 4096];
            // SAFETY: reads into a live buffer.
            let read =
                unsafe { libc::read(setup_channel, buffer.as_mut_ptr().cast(), buffer.len()) };
            if read > 0 {
                pending.extend_from_slice(&buffer[..read as usize]);
                while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    if let Ok(status) = serde_json::from_slice::<Status>(&line) {
                        setup_failed |= matches!(status, Status::Failed { .. });
                        send_status(&status);
                    }
                }
            } else {
                // End of file: the child exec'd (close-on-exec) or died.
                setup_open = false;
                if !setup_failed {
                    send_status(&Status::Running);
                }
            }
        }
        if !platform_gone && polled[1].revents != 0 {
            platform_gone = true;
            // The platform is gone (or broke protocol): the sandbox goes too.
            // SAFETY: kill of our own child.
            unsafe {
                libc::kill(child, libc::SIGKILL);
            }
        }
        if polled[2].revents != 0 && !setup_open {
            let mut status: libc::c_int = 0;
            // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: wait4 on our own child, writing into locals.
            let waited = unsafe { libc::wait4(child, &mut status, 0, &mut usage) };
            if waited == child {
                let cpu_millis = timeval_millis(usage.ru_utime) + timeval_millis(usage.ru_stime);
                if libc::WIFSIGNALED(status) {
                    send_status(&Status::Signaled {
                        signal: libc::WTERMSIG(status),
                        cpu_millis,
                    });
                } else {
                    send_status(&Status::Exited {
                        code: libc::WEXITSTATUS(status),
                        cpu_millis,
                    });
                }
                return Ok(0);
            }
        }
    }
}

fn timeval_millis(time: libc::timeval) -> u64 {
    (time.tv_sec.max(0) as u64) * 1000 + (time.tv_usec.max(0) as u64) / 1000
}
