//! Declared limits go in when a sandbox is claimed (issue 13, part 3), so limits never split
//! the warm pool: a sandbox is prepared under its class's limits and, right before the
//! folder's copy and the request go in, its cgroup values are written, the rlimits of its one
//! process (Python waiting on the harness) are set from outside with `prlimit`, and `/work`'s
//! tmpfs is resized. The step's code cannot have run yet: the harness runs nothing before its
//! request arrives. What cannot be applied fails closed, naming the limit.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use crate::cgroup::SandboxCgroup;
use crate::{Error, LimitCeilings, Limits};

fn failed(limit: &str, detail: String) -> Error {
    Error::LayerFailed {
        layer: format!("limits ({limit})"),
        detail,
    }
}

/// Moves a prepared sandbox from the limits it was built with to the invocation's. A sandbox
/// built before its invocation was known (`ceilings`) has its hard limits of memory and CPU
/// time at the ceilings: every claim sets both limits to the invocation's, by lowering the
/// hard one, which needs no capability, so the step can never raise its own limit.
pub(crate) fn apply(
    cgroup: &SandboxCgroup,
    work: &Path,
    host_id: u32,
    prepared: &Limits,
    wanted: &Limits,
    ceilings: Option<LimitCeilings>,
) -> Result<(), Error> {
    if let Some(ceilings) = ceilings {
        if wanted.memory_bytes > ceilings.memory_bytes {
            return Err(failed(
                "memory_mib",
                format!(
                    "{} bytes is above this server's maximum of {}",
                    wanted.memory_bytes, ceilings.memory_bytes
                ),
            ));
        }
        if wanted.cpu_seconds > ceilings.cpu_seconds {
            return Err(failed(
                "cpu_s",
                format!(
                    "{} s is above this server's maximum of {}",
                    wanted.cpu_seconds, ceilings.cpu_seconds
                ),
            ));
        }
    }
    if wanted.work_bytes != prepared.work_bytes {
        resize_work(work, host_id, wanted.work_bytes)?;
    }
    let memory_changed = wanted.memory_bytes != prepared.memory_bytes;
    if memory_changed {
        cgroup.set_memory_limit(wanted.memory_bytes)?;
    }
    if memory_changed || wanted.cpu_seconds != prepared.cpu_seconds || ceilings.is_some() {
        let process = SandboxProcess::only_member(cgroup)?;
        let address_space = crate::address_space(wanted.memory_bytes);
        process.set_rlimit(libc::RLIMIT_AS, address_space, "memory_mib")?;
        process.set_rlimit(libc::RLIMIT_DATA, address_space, "memory_mib")?;
        process.set_rlimit(libc::RLIMIT_CPU, wanted.cpu_seconds, "cpu_s")?;
        process.check_alive()?;
    }
    Ok(())
}

/// The one process of a claimed sandbox, pinned with a pidfd so that its pid cannot name
/// another process while the rlimits are set.
struct SandboxProcess {
    pid: i32,
    pidfd: OwnedFd,
}

impl SandboxProcess {
    fn only_member(cgroup: &SandboxCgroup) -> Result<SandboxProcess, Error> {
        let members = cgroup.member_pids()?;
        let [pid] = members[..] else {
            return Err(failed(
                "rlimits",
                format!(
                    "a claimed sandbox must hold exactly one process, its cgroup lists {}",
                    members.len()
                ),
            ));
        };
        // SAFETY: pidfd_open with a pid and no flags returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(failed(
                "rlimits",
                format!("pidfd_open({pid}): {}", std::io::Error::last_os_error()),
            ));
        }
        // SAFETY: the descriptor is fresh and owned by nothing else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // Listed again after the pin: the pinned process is that member, not a reuse of its pid.
        if cgroup.member_pids()? != [pid] {
            return Err(failed(
                "rlimits",
                String::from("the sandbox's process changed while it was being claimed"),
            ));
        }
        Ok(SandboxProcess { pid, pidfd })
    }

    fn set_rlimit(
        &self,
        resource: libc::__rlimit_resource_t,
        value: u64,
        limit: &str,
    ) -> Result<(), Error> {
        let new = libc::rlimit64 {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: prlimit64 reads `new` and writes nothing (null old limit).
        let result = unsafe { libc::prlimit64(self.pid, resource, &new, std::ptr::null_mut()) };
        if result == -1 {
            return Err(failed(
                limit,
                format!(
                    "prlimit on the sandbox's process {}: {}",
                    self.pid,
                    std::io::Error::last_os_error()
                ),
            ));
        }
        Ok(())
    }

    /// The pinned process still runs, so every prlimit above reached it.
    fn check_alive(&self) -> Result<(), Error> {
        let mut polled = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll of one pidfd we own, without waiting.
        let ready = unsafe { libc::poll(&mut polled, 1, 0) };
        if ready != 0 {
            return Err(failed(
                "rlimits",
                String::from("the sandbox's process ended while it was being claimed"),
            ));
        }
        Ok(())
    }
}

/// Resizes `/work`'s tmpfs (empty at claim time: the folder's copy goes in after this), with
/// the same flags it was mounted with.
fn resize_work(work: &Path, host_id: u32, work_bytes: u64) -> Result<(), Error> {
    use rustix::mount::{MountFlags, mount_remount};
    let inodes = crate::local::run::work_inodes(work_bytes);
    let options = std::ffi::CString::new(format!(
        "size={work_bytes},nr_inodes={inodes},mode=0700,uid={host_id},gid={host_id}"
    ))
    .map_err(|_| {
        failed(
            "work_mib",
            String::from("the tmpfs options contain a NUL byte"),
        )
    })?;
    mount_remount(
        work,
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        options.as_c_str(),
    )
    .map_err(|errno| {
        failed(
            "work_mib",
            format!("cannot resize the tmpfs at {}: {errno}", work.display()),
        )
    })
}
