//! Control groups for sandboxes: memory, pids and CPU limits, and the one reliable way to kill
//! everything a sandbox started.
//!
//! Hosts differ: pure cgroup v2, pure v1, or mixed (v1 controllers at `/sys/fs/cgroup/<ctl>`
//! and a v2 hierarchy at `/sys/fs/cgroup/unified` with few or no controllers). Each controller
//! is placed where the host has it, v2 first. A v2 group is created when the v2 hierarchy holds
//! at least one of the controllers, or when every controller is there (pure v2, where it
//! gives `CLONE_INTO_CGROUP` and `cgroup.kill`). On a mixed host whose v2 hierarchy holds none
//! of them, the v1 groups do all the work (issue 13: one cgroup fewer to make and remove per
//! sandbox): every limit stays in its v1 controller, the helper joins the v1 groups before its
//! clone so the sandbox is a member from its first instruction, and killing lists and kills
//! the v1 groups' members until they are empty (the pids limit bounds a fork bomb, and the
//! sandbox's pid namespace dies with its first process). Groups live under a configurable parent
//! placed beneath the platform's own cgroup in each hierarchy, so the platform's own limits
//! cover its sandboxes.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{Error, Limits};

/// The CPU bandwidth period written to cpu.max / cpu.cfs_period_us, in microseconds.
const CPU_PERIOD_MICROS: u64 = 100_000;

/// How long teardown waits for a killed group to empty before giving up on removing it.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

/// Where sandbox cgroups go.
#[derive(Debug, Clone)]
pub struct CgroupOptions {
    /// The cgroup filesystem root, normally `/sys/fs/cgroup`.
    pub root: PathBuf,
    /// The name of the parent group, created beneath the platform's own cgroup in each
    /// hierarchy (e.g. `stepward`).
    pub parent: String,
}

impl Default for CgroupOptions {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/sys/fs/cgroup"),
            parent: String::from("stepward"),
        }
    }
}

/// A controller the sandbox needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    Memory,
    Pids,
    Cpu,
}

impl Controller {
    const ALL: [Controller; 3] = [Controller::Memory, Controller::Pids, Controller::Cpu];

    fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
        }
    }
}

/// Where one controller lives on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    V2,
    /// The v1 parent directory for sandboxes in that controller's hierarchy, and the
    /// platform's own group there (where the helper returns after its clone).
    V1 {
        parent: PathBuf,
        home: PathBuf,
    },
}

/// The host's cgroup layout, detected once per backend.
#[derive(Debug, Clone)]
pub struct CgroupLayout {
    /// The sandbox parent in the v2 hierarchy, when sandboxes get a v2 group.
    v2_parent: Option<PathBuf>,
    /// The v2 parent of a host whose v2 hierarchy holds none of the controllers: no sandbox
    /// gets a group there, but the sweep still looks in it (an earlier version made them).
    unused_v2_parent: Option<PathBuf>,
    placements: Vec<(Controller, Placement)>,
    /// The parents this detection created (none of them existed before): what a backend that
    /// fails to start removes again.
    created: Vec<PathBuf>,
}

impl CgroupLayout {
    /// Detects the layout and creates the parent groups (idempotent). Fails closed when any of
    /// memory, pids or cpu has no hierarchy.
    pub fn detect(options: &CgroupOptions) -> Result<Self, Error> {
        let own = read_own_cgroups()?;
        let v2_mount = [options.root.clone(), options.root.join("unified")]
            .into_iter()
            .find(|candidate| candidate.join("cgroup.controllers").is_file());
        let v2_available: Vec<String> = match &v2_mount {
            Some(mount) => read_to_string(&mount.join("cgroup.controllers"))?
                .split_whitespace()
                .map(String::from)
                .collect(),
            None => Vec::new(),
        };
        let v2_parent = match &v2_mount {
            Some(mount) => {
                let own_path = own
                    .iter()
                    .find(|(controllers, _)| controllers.is_empty())
                    .map(|(_, path)| path.clone())
                    .unwrap_or_default();
                Some(join_relative(mount, &own_path).join(&options.parent))
            }
            None => None,
        };
        let mut placements = Vec::new();
        let mut v2_needed = Vec::new();
        for controller in Controller::ALL {
            if v2_available.iter().any(|name| name == controller.name()) {
                placements.push((controller, Placement::V2));
                v2_needed.push(controller.name());
                continue;
            }
            let mount = options.root.join(controller.name());
            if !mount.join("cgroup.procs").is_file() || mount.join("cgroup.controllers").exists() {
                return Err(Error::CgroupControllerMissing {
                    controller: controller.name(),
                    root: options.root.clone(),
                });
            }
            let own_path = own
                .iter()
                .find(|(controllers, _)| controllers.iter().any(|name| name == controller.name()))
                .map(|(_, path)| path.clone())
                .unwrap_or_default();
            let home = join_relative(&mount, &own_path);
            let parent = home.join(&options.parent);
            placements.push((controller, Placement::V1 { parent, home }));
        }
        // A v2 group without a controller only helps where v1 cannot do its part: never here,
        // since every controller has a v1 group that the helper joins before the clone.
        let v2_used = !v2_needed.is_empty();
        let (v2_parent, unused_v2_parent) = if v2_used {
            (v2_parent, None)
        } else {
            (None, v2_parent)
        };
        let mut layout = Self {
            v2_parent,
            unused_v2_parent,
            placements,
            created: Vec::new(),
        };
        let mut created = Vec::new();
        match layout.create_parents(&v2_needed, &mut created) {
            Ok(()) => {
                layout.created = created;
                Ok(layout)
            }
            Err(error) => {
                remove_dirs(&created);
                Err(error)
            }
        }
    }

    /// True when every controller is in v2, so a cgroup namespace created at clone time is
    /// rooted at the sandbox's own group in every hierarchy.
    pub fn all_v2(&self) -> bool {
        self.placements
            .iter()
            .all(|(_, placement)| *placement == Placement::V2)
    }

    fn v1_parents(&self) -> impl Iterator<Item = (Controller, &PathBuf)> {
        self.placements
            .iter()
            .filter_map(|(controller, placement)| match placement {
                Placement::V1 { parent, .. } => Some((*controller, parent)),
                Placement::V2 => None,
            })
    }

    /// Creates the parents, noting in `created` each one that did not exist before.
    fn create_parents(
        &self,
        v2_controllers: &[&str],
        created: &mut Vec<PathBuf>,
    ) -> Result<(), Error> {
        if let Some(v2_parent) = &self.v2_parent {
            if create_dir(v2_parent)? {
                created.push(v2_parent.clone());
            }
            if !v2_controllers.is_empty() {
                // The parent's children get the controllers only if every ancestor from the
                // platform's own group down enables them; the host's own groups above are the
                // host's business.
                if let Some(own) = v2_parent.parent() {
                    enable_v2_controllers(own, v2_controllers)?;
                }
                enable_v2_controllers(v2_parent, v2_controllers)?;
            }
        }
        for (_, parent) in self.v1_parents() {
            if create_dir(parent)? {
                created.push(parent.clone());
            }
        }
        Ok(())
    }

    /// The `tasks` files of the platform's own v1 groups: the helper moves its one thread
    /// back there right after it cloned the sandbox (see [`SandboxCgroup::v1_tasks_files`]).
    pub fn v1_home_tasks_files(&self) -> Vec<PathBuf> {
        self.placements
            .iter()
            .filter_map(|(_, placement)| match placement {
                Placement::V1 { home, .. } => Some(home.join("tasks")),
                Placement::V2 => None,
            })
            .collect()
    }

    /// Creates the group `name` for one sandbox with `limits` applied.
    pub fn create_sandbox(&self, name: &str, limits: &Limits) -> Result<SandboxCgroup, Error> {
        let mut group = SandboxCgroup {
            v2_dir: self.v2_parent.as_ref().map(|parent| parent.join(name)),
            v1_dirs: self
                .v1_parents()
                .map(|(controller, parent)| (controller, parent.join(name)))
                .collect(),
            memory_in_v2: self.placements.iter().any(|(controller, placement)| {
                *controller == Controller::Memory && *placement == Placement::V2
            }),
            removed: false,
        };
        if let Some(dir) = &group.v2_dir {
            create_dir(dir)?;
        }
        for (_, dir) in &group.v1_dirs {
            create_dir(dir)?;
        }
        group.apply_limits(self, limits)?;
        Ok(group)
    }

    /// The parent directories, for the sweep and for removing a test's parent.
    pub fn parent_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.v2_parent.iter().cloned().collect();
        dirs.extend(self.v1_parents().map(|(_, parent)| parent.clone()));
        dirs
    }

    /// Kills and removes every sandbox group left under the parents (a crashed platform's).
    pub fn sweep(&self) -> Result<usize, Error> {
        let mut removed = 0;
        for parent in self
            .parent_dirs()
            .into_iter()
            .chain(self.unused_v2_parent.clone())
        {
            let entries = match fs::read_dir(&parent) {
                Ok(entries) => entries,
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(Error::io("cannot list", parent, source)),
            };
            // The name first, then the type the listing itself gives: a parent holds dozens of
            // controller files, and a `stat` of each cost most of the start-up sweep.
            for entry in entries.flatten() {
                if !entry.file_name().as_encoded_bytes().starts_with(b"sb-")
                    || !entry.file_type().is_ok_and(|kind| kind.is_dir())
                {
                    continue;
                }
                let path = entry.path();
                kill_members(&path)?;
                remove_group(&path)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes the parents this detection created, when they are still empty: for a backend
    /// that failed to start after the detection (the groups it made are its to take back; one
    /// that existed before belongs to whoever made it).
    pub fn remove_created_parents(&self) {
        remove_dirs(&self.created);
    }

    /// Removes the (empty) parent groups; used by tests that made a unique parent.
    pub fn remove_parents(&self) {
        for parent in self
            .parent_dirs()
            .into_iter()
            .chain(self.unused_v2_parent.clone())
        {
            let _ = fs::remove_dir(parent);
        }
    }
}

/// The v1 memory controller's limit on a group's socket buffers (TCP and UDP).
const V1_SOCKET_MEMORY_LIMIT: &str = "memory.kmem.tcp.limit_in_bytes";

/// One sandbox's groups. Dropping it kills every member and removes the groups.
#[derive(Debug)]
pub struct SandboxCgroup {
    v2_dir: Option<PathBuf>,
    v1_dirs: Vec<(Controller, PathBuf)>,
    memory_in_v2: bool,
    removed: bool,
}

impl SandboxCgroup {
    fn apply_limits(&mut self, layout: &CgroupLayout, limits: &Limits) -> Result<(), Error> {
        let cpu_max = format!("{CPU_PERIOD_MICROS} {CPU_PERIOD_MICROS}");
        for (controller, placement) in &layout.placements {
            let dir = match placement {
                Placement::V2 => self.v2_dir.clone(),
                Placement::V1 { .. } => self
                    .v1_dirs
                    .iter()
                    .find(|(candidate, _)| candidate == controller)
                    .map(|(_, dir)| dir.clone()),
            };
            let Some(dir) = dir else { continue };
            match (controller, placement) {
                (Controller::Memory, Placement::V2) => {
                    write(&dir.join("memory.max"), &limits.memory_bytes.to_string())?;
                    write_if_present(&dir.join("memory.swap.max"), "0")?;
                }
                (Controller::Memory, Placement::V1 { .. }) => {
                    write(
                        &dir.join("memory.limit_in_bytes"),
                        &limits.memory_bytes.to_string(),
                    )?;
                    // Memory plus swap equal to memory: the sandbox cannot swap its way past
                    // the limit. The file exists only when swap accounting is on.
                    write_if_present(
                        &dir.join("memory.memsw.limit_in_bytes"),
                        &limits.memory_bytes.to_string(),
                    )?;
                    // v1 charges socket buffers (TCP and UDP) to a group only once its TCP
                    // limit has been written ("tcpmem active"), and only sockets made after
                    // that: so before the step starts, or a step pins host kernel memory
                    // past its limit. v2 charges them to memory.max by default.
                    write(
                        &dir.join(V1_SOCKET_MEMORY_LIMIT),
                        &limits.memory_bytes.to_string(),
                    )?;
                }
                (Controller::Pids, _) => write(&dir.join("pids.max"), &limits.pids.to_string())?,
                (Controller::Cpu, Placement::V2) => write(&dir.join("cpu.max"), &cpu_max)?,
                (Controller::Cpu, Placement::V1 { .. }) => {
                    write(
                        &dir.join("cpu.cfs_period_us"),
                        &CPU_PERIOD_MICROS.to_string(),
                    )?;
                    write(
                        &dir.join("cpu.cfs_quota_us"),
                        &CPU_PERIOD_MICROS.to_string(),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Writes a new memory limit (a warm sandbox claimed for an invocation that declared
    /// `memory_mib`).
    pub fn set_memory_limit(&self, bytes: u64) -> Result<(), Error> {
        if self.memory_in_v2 {
            if let Some(dir) = &self.v2_dir {
                write(&dir.join("memory.max"), &bytes.to_string())?;
            }
            return Ok(());
        }
        let Some((_, dir)) = self
            .v1_dirs
            .iter()
            .find(|(controller, _)| *controller == Controller::Memory)
        else {
            return Ok(());
        };
        // memsw must stay at least memory: raise it first when growing, lower it last when
        // shrinking.
        let memsw = dir.join("memory.memsw.limit_in_bytes");
        let memory = dir.join("memory.limit_in_bytes");
        let current: u64 = fs::read_to_string(&memory)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        if bytes > current {
            write_if_present(&memsw, &bytes.to_string())?;
            write(&memory, &bytes.to_string())?;
        } else {
            write(&memory, &bytes.to_string())?;
            write_if_present(&memsw, &bytes.to_string())?;
        }
        write(&dir.join(V1_SOCKET_MEMORY_LIMIT), &bytes.to_string())
    }

    /// Moves the process `pid` into every group of this sandbox.
    pub fn add_process(&self, pid: u32) -> Result<(), Error> {
        for dir in self.dirs() {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The pids of the processes in the sandbox's first group.
    pub fn member_pids(&self) -> Result<Vec<i32>, Error> {
        let Some(dir) = self.dirs().into_iter().next() else {
            return Ok(Vec::new());
        };
        let procs = dir.join("cgroup.procs");
        Ok(parse_pids(&read_to_string(&procs)?))
    }

    /// The v2 group, which the helper passes to `clone3(CLONE_INTO_CGROUP)`.
    pub fn v2_dir(&self) -> Option<&Path> {
        self.v2_dir.as_deref()
    }

    /// The `tasks` files of the v1 groups. The single-threaded helper writes `0` (itself)
    /// into each right before its clone, so the sandbox is a member from its first
    /// instruction. Moving the calling thread through `tasks` skips the kernel's global
    /// threadgroup lock, whose RCU grace period makes a `cgroup.procs` write cost milliseconds
    /// on a v1 hierarchy.
    pub fn v1_tasks_files(&self) -> Vec<PathBuf> {
        self.v1_dirs
            .iter()
            .map(|(_, dir)| dir.join("tasks"))
            .collect()
    }

    /// Every directory of this sandbox's groups.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.v2_dir.iter().cloned().collect();
        dirs.extend(self.v1_dirs.iter().map(|(_, dir)| dir.clone()));
        dirs
    }

    /// True when the kernel's OOM killer killed a process of this sandbox.
    pub fn oom_killed(&self) -> bool {
        let file = if self.memory_in_v2 {
            self.v2_dir.as_ref().map(|dir| dir.join("memory.events"))
        } else {
            self.v1_dirs
                .iter()
                .find(|(controller, _)| *controller == Controller::Memory)
                .map(|(_, dir)| dir.join("memory.oom_control"))
        };
        let Some(file) = file else { return false };
        let Ok(text) = fs::read_to_string(file) else {
            return false;
        };
        text.lines().any(|line| {
            let mut fields = line.split_whitespace();
            fields.next() == Some("oom_kill") && fields.next().is_some_and(|count| count != "0")
        })
    }

    /// Kills every process in the sandbox's groups and returns once they are all gone; the
    /// groups stay until [`SandboxCgroup::destroy`] (or the drop) removes them, which the
    /// local backend leaves to its reaper, off the request's path.
    pub fn kill_all_members(&self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        for dir in self.dirs() {
            kill_members(&dir)?;
        }
        Ok(())
    }

    /// Kills every process in the sandbox's groups and removes the groups.
    pub fn destroy(&mut self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        for dir in self.dirs() {
            kill_members(&dir)?;
        }
        for dir in self.dirs() {
            remove_group(&dir)?;
        }
        self.removed = true;
        Ok(())
    }
}

impl Drop for SandboxCgroup {
    fn drop(&mut self) {
        let _ = self.destroy();
    }
}

/// Kills every member: `cgroup.kill` where the kernel has it (v2), else SIGKILL to each pid in
/// `cgroup.procs` until the list stays empty (a fork bomb may add pids while we kill). A group
/// that has no member is left alone: once the sandbox's first process is in it, only a member
/// adds one (by forking; the helper's clone into the group is the only outside entry, and it
/// happens once, before), so an empty group stays empty, and after a step whose first process
/// exited (taking its pid namespace with it) that is the usual case. `destroy` is covered
/// either way: a group that is not empty when it is removed is killed again. Writing
/// `cgroup.kill` takes the kernel's cgroup mutex, which the removal of an earlier sandbox's
/// groups may be holding.
fn kill_members(dir: &Path) -> Result<(), Error> {
    if !dir.exists() {
        return Ok(());
    }
    let procs = dir.join("cgroup.procs");
    if listed_pids(&procs)?.is_empty() {
        return Ok(());
    }
    let kill_file = dir.join("cgroup.kill");
    if kill_file.is_file() {
        write(&kill_file, "1")?;
    }
    let started = Instant::now();
    loop {
        let pids = listed_pids(&procs)?;
        if pids.is_empty() {
            return Ok(());
        }
        kill_listed(&procs, &pids);
        if started.elapsed() > EMPTY_WAIT {
            return Err(Error::io(
                "processes survive SIGKILL in",
                dir,
                io::Error::from(io::ErrorKind::TimedOut),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The pids a `cgroup.procs` lists; none for a group that is gone.
fn listed_pids(procs: &Path) -> Result<Vec<i32>, Error> {
    match fs::read_to_string(procs) {
        Ok(text) => Ok(parse_pids(&text)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(Error::io("cannot read", procs, source)),
    }
}

/// One pid per line, as `cgroup.procs` and `tasks` list them.
fn parse_pids(text: &str) -> Vec<i32> {
    text.lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// SIGKILLs the processes behind `pids`, read from `procs` a moment ago, without ever
/// signalling a host process that took over one of those pids in between (a member that exits
/// is reaped and its pid may be reused at once; with a small `pid_max` or a step that forks in
/// a loop, quickly). Each pid is pinned with a pidfd first, then `procs` is read again: a pid
/// still listed belongs to a member, and while the pinned process lives no other process can
/// hold its pid, so the pinned process is that member; a pinned process that died in between
/// gets no signal at all.
fn kill_listed(procs: &Path, pids: &[i32]) {
    let mut pinned = Vec::with_capacity(pids.len());
    for &pid in pids {
        // SAFETY: pidfd_open with a pid and no flags returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: the descriptor is fresh and owned by nothing else.
            pinned.push((pid, unsafe { OwnedFd::from_raw_fd(fd as RawFd) }));
        } else if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            // A kernel without pidfds (before 5.3): the plain signal is all there is.
            // SAFETY: kill with a pid just read from the sandbox's own group.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    if pinned.is_empty() {
        return;
    }
    let Ok(members) = listed_pids(procs) else {
        return;
    };
    for (pid, fd) in pinned {
        if members.contains(&pid) {
            // SAFETY: pidfd_send_signal on a pidfd we own, with no siginfo.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            }
        }
    }
}

/// Removes a group, retrying while the kernel still counts exiting members.
fn remove_group(dir: &Path) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error)
                if error.raw_os_error() == Some(libc::EBUSY) && started.elapsed() < EMPTY_WAIT =>
            {
                kill_members(dir)?;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(source) => return Err(Error::io("cannot remove the cgroup", dir, source)),
        }
    }
}

/// Reads `/proc/self/cgroup` as (controllers, path) pairs; v2's line has no controllers.
fn read_own_cgroups() -> Result<Vec<(Vec<String>, String)>, Error> {
    let text = read_to_string(Path::new("/proc/self/cgroup"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            let controllers = controllers
                .split(',')
                .filter(|name| !name.is_empty())
                .map(String::from)
                .collect();
            Some((controllers, path.to_string()))
        })
        .collect())
}

fn enable_v2_controllers(dir: &Path, controllers: &[&str]) -> Result<(), Error> {
    let file = dir.join("cgroup.subtree_control");
    let enabled = read_to_string(&file)?;
    let missing: Vec<String> = controllers
        .iter()
        .filter(|name| !enabled.split_whitespace().any(|present| present == **name))
        .map(|name| format!("+{name}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    write(&file, &missing.join(" "))
}

fn join_relative(base: &Path, absolute: &str) -> PathBuf {
    let relative = absolute.trim_start_matches('/');
    if relative.is_empty() {
        base.to_path_buf()
    } else {
        base.join(relative)
    }
}

/// Removes each (empty) group, the last made first.
fn remove_dirs(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

/// Creates the group; true when it did not exist before.
fn create_dir(dir: &Path) -> Result<bool, Error> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(source) => Err(Error::io("cannot create the cgroup", dir, source)),
    }
}

fn read_to_string(path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|source| Error::io("cannot read", path, source))
}

fn write(path: &Path, value: &str) -> Result<(), Error> {
    fs::write(path, value).map_err(|source| Error::io("cannot write", path, source))
}

fn write_if_present(path: &Path, value: &str) -> Result<(), Error> {
    if path.exists() {
        write(path, value)
    } else {
        Ok(())
    }
}
