//! The system calls of jail setup, behind a trait so the order of the steps is unit-tested
//! with a recording fake (no root needed) and the real implementation stays a thin, checked
//! wrapper over libc.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::jail::plan::{LandlockPlan, NetnsPlan, Rlimit, RlimitResource};

/// What a clone returned, in the process that sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// The helper: the child's host pid and a pidfd for it.
    Parent { child: i32, pidfd: RawFd },
    /// The child, inside its new namespaces.
    Child,
}

/// How Landlock went; its absence is recorded, not fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockOutcome {
    Enforced,
    PartiallyEnforced { detail: String },
    Unavailable { detail: String },
}

/// What the sandbox's fresh `/proc` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcView {
    /// Its own processes only (`subset=pid`, Linux 5.8 or later): no host table or knob.
    OwnProcesses,
    /// The whole procfs of its pid namespace (an older kernel): the plan's masks hide the
    /// host's knobs.
    Full,
}

/// Mount flags as the kernel takes them (`MS_*`).
pub type MountFlags = u64;

/// The system calls of jail setup. Every method is one step a reviewer can find in the
/// numbered sequence of [`crate::jail`].
pub trait Sys {
    /// Drops the helper's supplementary groups, so the sandbox never carries host gid 0.
    fn drop_supplementary_groups(&mut self) -> io::Result<()>;
    /// Joins an existing network namespace (public_egress) before the clone.
    fn join_network_namespace(&mut self, netns: &NetnsPlan) -> io::Result<()>;
    /// The one clone into new namespaces (`CLONE_NEW*` in `flags`), optionally straight into
    /// a v2 cgroup.
    fn clone_child(&mut self, flags: u64, cgroup_v2_dir: Option<&Path>) -> io::Result<Forked>;
    /// Writes a small control file (id maps, setgroups, cgroup.procs).
    fn write_control_file(&mut self, path: &Path, contents: &str) -> io::Result<()>;
    /// Lets the child go on after its maps and cgroups are in place.
    fn release_child(&mut self) -> io::Result<()>;
    /// Tells the child that its network namespace is ready (its loopback up), the last thing
    /// it waits for before it execs Python.
    fn signal_network_ready(&mut self) -> io::Result<()>;
    /// Kills the child when the helper gives up before releasing it.
    fn kill_child(&mut self, child: i32);

    /// The child dies when the helper dies.
    fn set_parent_death_signal(&mut self) -> io::Result<()>;
    /// Blocks until the helper releases the child; an error when the helper gave up.
    fn wait_for_release(&mut self) -> io::Result<()>;
    /// Blocks until the helper says the network namespace is ready; an error when it gave up.
    fn wait_for_network(&mut self) -> io::Result<()>;
    /// A new cgroup namespace rooted at the group the child was just attached to.
    fn unshare_cgroup_namespace(&mut self) -> io::Result<()>;
    /// A fresh network namespace for the calling process (the helper, before its plan).
    fn unshare_network_namespace(&mut self) -> io::Result<()>;
    /// Sets `lo` up in the caller's network namespace.
    fn bring_up_loopback(&mut self) -> io::Result<()>;
    fn set_hostname(&mut self, name: &str) -> io::Result<()>;
    /// Stops mount events propagating to or from the host.
    fn make_mounts_private(&mut self) -> io::Result<()>;
    fn mount_tmpfs(&mut self, target: &Path, flags: MountFlags, options: &str) -> io::Result<()>;
    /// A non-recursive bind (submounts of the source stay hidden).
    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()>;
    /// Re-applies flags to a bind mount, keeping the flags the kernel locked on it.
    fn remount_bind(&mut self, target: &Path, flags: MountFlags) -> io::Result<()>;
    /// A fresh proc of the caller's pid namespace, showing only its processes where the
    /// kernel can (`subset=pid`) and `only_processes` asks for it, the whole procfs otherwise.
    fn mount_proc(&mut self, target: &Path, only_processes: bool) -> io::Result<ProcView>;
    fn create_dir_all(&mut self, path: &Path, mode: u32) -> io::Result<()>;
    fn create_file(&mut self, path: &Path, contents: &[u8], mode: u32) -> io::Result<()>;
    fn symlink(&mut self, points_to: &Path, link: &Path) -> io::Result<()>;
    /// Whether `path` exists and is a directory (`Some(true)`), another node (`Some(false)`),
    /// or nothing (`None`).
    fn probe(&mut self, path: &Path) -> io::Result<Option<bool>>;
    /// chdir into the new root, pivot_root(".", "."), detach the old root, chdir("/").
    fn pivot_root(&mut self, new_root: &Path) -> io::Result<()>;
    fn remount_root_read_only(&mut self) -> io::Result<()>;
    fn change_directory(&mut self, path: &Path) -> io::Result<()>;
    /// Every descriptor above the report channel closes at exec.
    fn close_other_fds(&mut self) -> io::Result<()>;
    fn new_session(&mut self) -> io::Result<()>;
    fn set_rlimit(&mut self, limit: Rlimit) -> io::Result<()>;
    fn drop_bounding_set(&mut self) -> io::Result<()>;
    fn set_ids(&mut self, uid: u32, gid: u32) -> io::Result<()>;
    /// Clears ambient, inheritable, permitted and effective capabilities, and checks they are
    /// gone.
    fn clear_capabilities(&mut self) -> io::Result<()>;
    fn set_no_new_privs(&mut self) -> io::Result<()>;
    fn apply_landlock(&mut self, plan: &LandlockPlan) -> LandlockOutcome;
    fn load_seccomp(&mut self) -> io::Result<()>;
    /// Replaces the process; returns only the error.
    fn exec(&mut self, path: &Path, argv: &[String]) -> io::Error;
    /// The child tells the helper something (a note, or the layer that failed) over the
    /// setup channel, which closes by itself when the exec succeeds.
    fn child_report(&mut self, status: &crate::jail::Status);
}

/// One byte to the other side of the release pipe.
fn write_one_byte(fd: RawFd) -> io::Result<()> {
    let byte = [1u8];
    loop {
        // SAFETY: writes one byte from a live buffer to a pipe this process created.
        let written = unsafe { libc::write(fd, byte.as_ptr().cast(), 1) };
        if written == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return if written == 1 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
    }
}

/// One byte from the release pipe; end of file (the helper gave up or died) is `missing`.
fn read_one_byte(fd: RawFd, missing: &'static str) -> io::Result<()> {
    let mut byte = [0u8];
    loop {
        // SAFETY: reads at most one byte into a live buffer.
        let read = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if read == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return match read {
            1 => Ok(()),
            0 => Err(io::Error::new(io::ErrorKind::BrokenPipe, missing)),
            _ => {
                let error = io::Error::last_os_error();
                Err(io::Error::new(error.kind(), format!("{missing}: {error}")))
            }
        };
    }
}

/// The real system calls.
pub struct RealSys {
    release_read: RawFd,
    release_write: RawFd,
    setup_read: RawFd,
    setup_write: RawFd,
    /// Directories this process made or found under the new root: dozens of library binds
    /// share a few parents, and asking the kernel again for each costs a mkdir and a stat.
    made_dirs: std::collections::HashSet<std::path::PathBuf>,
    /// The highest capability number the kernel knows, read from the host's `/proc` when the
    /// helper starts: the sandbox's own `/proc` has no `sys`.
    last_capability: u32,
}

impl RealSys {
    pub fn new() -> Self {
        Self {
            release_read: -1,
            release_write: -1,
            setup_read: -1,
            setup_write: -1,
            made_dirs: std::collections::HashSet::new(),
            last_capability: last_capability(),
        }
    }

    /// The helper's end of the setup channel (valid after the clone, in the helper).
    pub fn setup_channel(&self) -> RawFd {
        self.setup_read
    }
}

impl Default for RealSys {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `struct clone_args` of clone3(2).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Locked-flag translation: statvfs's `ST_*` bits to the `MS_*` bits a remount must repeat.
fn mount_flags_of(path: &Path) -> io::Result<MountFlags> {
    let path = c_path(path)?;
    // SAFETY: statvfs writes into the zeroed struct we pass; the path is a valid C string.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    check(unsafe { libc::statvfs(path.as_ptr(), &mut stats) })?;
    let pairs: [(u64, u64); 8] = [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_SYNCHRONOUS, libc::MS_SYNCHRONOUS),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(statvfs_bit, _)| stats.f_flag & statvfs_bit != 0)
        .fold(0, |flags, (_, mount_bit)| flags | mount_bit))
}

fn raw_mount(
    source: Option<&str>,
    target: &Path,
    fstype: Option<&str>,
    flags: MountFlags,
    data: Option<&str>,
) -> io::Result<()> {
    let target = c_path(target)?;
    let source = source
        .map(CString::new)
        .transpose()
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let fstype = fstype
        .map(CString::new)
        .transpose()
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let data = data
        .map(CString::new)
        .transpose()
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: every pointer is either null or a valid C string that outlives the call.
    check(unsafe {
        libc::mount(
            source
                .as_ref()
                .map_or(std::ptr::null(), |value| value.as_ptr()),
            target.as_ptr(),
            fstype
                .as_ref()
                .map_or(std::ptr::null(), |value| value.as_ptr()),
            flags as libc::c_ulong,
            data.as_ref()
                .map_or(std::ptr::null(), |value| value.as_ptr().cast()),
        )
    })
}

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
#[derive(Default)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets read-only, nosuid, nodev and noexec (as given in `MS_*` bits) on the one mount at
/// `target`.
fn set_mount_attributes(target: &Path, flags: MountFlags) -> io::Result<()> {
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const MOUNT_ATTR_NOSUID: u64 = 0x2;
    const MOUNT_ATTR_NODEV: u64 = 0x4;
    const MOUNT_ATTR_NOEXEC: u64 = 0x8;
    let pairs = [
        (libc::MS_RDONLY, MOUNT_ATTR_RDONLY),
        (libc::MS_NOSUID, MOUNT_ATTR_NOSUID),
        (libc::MS_NODEV, MOUNT_ATTR_NODEV),
        (libc::MS_NOEXEC, MOUNT_ATTR_NOEXEC),
    ];
    if flags & !(libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) != 0 {
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    let attributes = MountAttr {
        attr_set: pairs
            .iter()
            .filter(|(mount_bit, _)| flags & mount_bit != 0)
            .fold(0, |set, (_, attribute)| set | attribute),
        ..MountAttr::default()
    };
    let target = c_path(target)?;
    // SAFETY: mount_setattr with a valid C path and a struct we own, passed with its size.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target.as_ptr(),
            0 as libc::c_uint,
            &attributes as *const MountAttr,
            size_of::<MountAttr>(),
        ) as libc::c_int
    })
}

fn pipe_cloexec() -> io::Result<(RawFd, RawFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

fn close(fd: RawFd) {
    if fd >= 0 {
        // SAFETY: closing a descriptor this process created and no longer uses.
        unsafe {
            libc::close(fd);
        }
    }
}

/// The highest capability number the running kernel knows (every number up to 63 when it
/// cannot be read: the bounding-set drop skips the ones the kernel does not know).
fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

impl Sys for RealSys {
    fn drop_supplementary_groups(&mut self) -> io::Result<()> {
        // SAFETY: an empty group list; no pointer is read.
        check(unsafe { libc::setgroups(0, std::ptr::null()) })
    }

    fn join_network_namespace(&mut self, netns: &NetnsPlan) -> io::Result<()> {
        let c_path = c_path(&netns.path)?;
        // SAFETY: open of a valid C string; the descriptor is closed right after setns.
        let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: an all-zero stat is valid; fstat fills it for the descriptor we own.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `stat`, which we own.
        let result = check(unsafe { libc::fstat(fd, &mut stat) }).and_then(|()| {
            if (stat.st_dev, stat.st_ino) != (netns.device, netns.inode) {
                return Err(io::Error::other(format!(
                    "{} is not the sandbox's network namespace (device {} inode {}, expected \
                     device {} inode {})",
                    netns.path.display(),
                    stat.st_dev,
                    stat.st_ino,
                    netns.device,
                    netns.inode
                )));
            }
            // SAFETY: setns on the descriptor just opened and checked.
            check(unsafe { libc::setns(fd, libc::CLONE_NEWNET) })
        });
        close(fd);
        result
    }

    fn clone_child(&mut self, flags: u64, cgroup_v2_dir: Option<&Path>) -> io::Result<Forked> {
        let (release_read, release_write) = pipe_cloexec()?;
        self.release_read = release_read;
        self.release_write = release_write;
        let (setup_read, setup_write) = pipe_cloexec()?;
        self.setup_read = setup_read;
        self.setup_write = setup_write;
        let cgroup_fd = match cgroup_v2_dir {
            Some(dir) => {
                let dir = c_path(dir)?;
                // SAFETY: open of a valid C string, closed after the clone.
                let fd = unsafe {
                    libc::open(
                        dir.as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                };
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                Some(fd)
            }
            None => None,
        };
        let mut pidfd: RawFd = -1;
        let mut args = CloneArgs {
            flags: flags | libc::CLONE_PIDFD as u64,
            pidfd: std::ptr::addr_of_mut!(pidfd) as u64,
            exit_signal: libc::SIGCHLD as u64,
            ..CloneArgs::default()
        };
        if let Some(fd) = cgroup_fd {
            args.flags |= CLONE_INTO_CGROUP;
            args.cgroup = fd as u64;
        }
        // SAFETY: clone3 without CLONE_VM behaves like fork: the child gets a copy of this
        // single-threaded process and continues here with 0; `args` outlives the call.
        let result = unsafe {
            libc::syscall(
                libc::SYS_clone3,
                std::ptr::addr_of_mut!(args),
                size_of::<CloneArgs>(),
            )
        };
        if let Some(fd) = cgroup_fd {
            close(fd);
        }
        match result {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                close(self.release_write);
                self.release_write = -1;
                close(self.setup_read);
                self.setup_read = -1;
                Ok(Forked::Child)
            }
            child => {
                close(self.release_read);
                self.release_read = -1;
                close(self.setup_write);
                self.setup_write = -1;
                Ok(Forked::Parent {
                    child: child as i32,
                    pidfd,
                })
            }
        }
    }

    fn write_control_file(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        std::fs::write(path, contents)
    }

    fn release_child(&mut self) -> io::Result<()> {
        // The pipe stays open for the second byte (`signal_network_ready`).
        write_one_byte(self.release_write)
    }

    fn signal_network_ready(&mut self) -> io::Result<()> {
        let written = write_one_byte(self.release_write);
        close(self.release_write);
        self.release_write = -1;
        written
    }

    fn kill_child(&mut self, child: i32) {
        // SAFETY: kill of the pid our own clone returned.
        unsafe {
            libc::kill(child, libc::SIGKILL);
        }
    }

    fn set_parent_death_signal(&mut self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments only.
        check(unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            )
        })
    }

    fn wait_for_release(&mut self) -> io::Result<()> {
        // The pipe stays open for the second byte (`wait_for_network`).
        read_one_byte(self.release_read, "the helper did not release the child")
    }

    fn wait_for_network(&mut self) -> io::Result<()> {
        let read = read_one_byte(
            self.release_read,
            "the helper did not say the network namespace is ready",
        );
        close(self.release_read);
        self.release_read = -1;
        read
    }

    fn unshare_cgroup_namespace(&mut self) -> io::Result<()> {
        // SAFETY: unshare with a constant flag.
        check(unsafe { libc::unshare(libc::CLONE_NEWCGROUP) })
    }

    fn unshare_network_namespace(&mut self) -> io::Result<()> {
        // SAFETY: unshare with a constant flag.
        check(unsafe { libc::unshare(libc::CLONE_NEWNET) })
    }

    fn bring_up_loopback(&mut self) -> io::Result<()> {
        // SAFETY: a datagram socket is only a handle for the interface ioctls; closed below.
        let socket =
            unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: an all-zero ifreq is valid; the name is copied into its fixed array.
        let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq we own.
        let result = unsafe {
            if libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) == -1 {
                Err(io::Error::last_os_error())
            } else {
                request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                check(libc::ioctl(socket, libc::SIOCSIFFLAGS, &request))
            }
        };
        close(socket);
        result
    }

    fn set_hostname(&mut self, name: &str) -> io::Result<()> {
        // SAFETY: the pointer and length describe `name`'s bytes.
        check(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) })
    }

    fn make_mounts_private(&mut self) -> io::Result<()> {
        raw_mount(
            None,
            Path::new("/"),
            None,
            libc::MS_REC | libc::MS_PRIVATE,
            None,
        )
    }

    fn mount_tmpfs(&mut self, target: &Path, flags: MountFlags, options: &str) -> io::Result<()> {
        raw_mount(Some("tmpfs"), target, Some("tmpfs"), flags, Some(options))
    }

    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()> {
        let source = source
            .to_str()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        raw_mount(Some(source), target, None, libc::MS_BIND, None)
    }

    fn remount_bind(&mut self, target: &Path, flags: MountFlags) -> io::Result<()> {
        // One mount_setattr sets the attributes without restating the flags the kernel
        // locked (a remount must repeat them, which costs a statvfs first). It only adds
        // attributes, never clears one; where the kernel lacks it, the remount does the same.
        if set_mount_attributes(target, flags).is_ok() {
            return Ok(());
        }
        let locked = mount_flags_of(target)?;
        raw_mount(
            None,
            target,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | flags | locked,
            None,
        )
    }

    fn mount_proc(&mut self, target: &Path, only_processes: bool) -> io::Result<ProcView> {
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if only_processes {
            match raw_mount(
                Some("proc"),
                target,
                Some("proc"),
                flags,
                Some("subset=pid"),
            ) {
                // Taken at the kernel's word only if `sys` is really gone: a kernel that
                // accepted the option and ignored it gets the masks.
                Ok(()) => match std::fs::symlink_metadata(target.join("sys")) {
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {
                        return Ok(ProcView::OwnProcesses);
                    }
                    _ => return Ok(ProcView::Full),
                },
                // A kernel before 5.8 does not know the option.
                Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {}
                Err(error) => return Err(error),
            }
        }
        raw_mount(Some("proc"), target, Some("proc"), flags, None).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "{error} (the whole procfs, after subset=pid was refused or not asked for)"
                ),
            )
        })?;
        Ok(ProcView::Full)
    }

    fn create_dir_all(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if self.made_dirs.contains(path) {
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(path)?;
        self.made_dirs.insert(path.to_path_buf());
        Ok(())
    }

    fn create_file(&mut self, path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)?;
        file.write_all(contents)
    }

    fn symlink(&mut self, points_to: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(points_to, link)
    }

    fn probe(&mut self, path: &Path) -> io::Result<Option<bool>> {
        match std::fs::metadata(path) {
            Ok(metadata) => Ok(Some(metadata.is_dir())),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn pivot_root(&mut self, new_root: &Path) -> io::Result<()> {
        let new_root = c_path(new_root)?;
        let dot = c".";
        // SAFETY: chdir/pivot_root/umount2 with valid C strings. pivot_root(".", ".") stacks
        // the old root under the new one, and the detach removes it from this namespace.
        unsafe {
            check(libc::chdir(new_root.as_ptr()))?;
            check(libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) as libc::c_int)?;
            check(libc::umount2(dot.as_ptr(), libc::MNT_DETACH))?;
            check(libc::chdir(c"/".as_ptr()))
        }
    }

    fn remount_root_read_only(&mut self) -> io::Result<()> {
        let locked = mount_flags_of(Path::new("/"))?;
        raw_mount(
            None,
            Path::new("/"),
            None,
            libc::MS_REMOUNT
                | libc::MS_BIND
                | libc::MS_RDONLY
                | libc::MS_NOSUID
                | libc::MS_NODEV
                | locked,
            None,
        )
    }

    fn change_directory(&mut self, path: &Path) -> io::Result<()> {
        std::env::set_current_dir(path)
    }

    fn close_other_fds(&mut self) -> io::Result<()> {
        // SAFETY: marks every descriptor from 4 up close-on-exec; the status channel stays
        // usable until the exec, and nothing but 0-3 reaches Python.
        let result = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                4 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        check(result as libc::c_int)
    }

    fn new_session(&mut self) -> io::Result<()> {
        // SAFETY: no arguments.
        let result = unsafe { libc::setsid() };
        if result == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn set_rlimit(&mut self, limit: Rlimit) -> io::Result<()> {
        let resource = match limit.resource {
            RlimitResource::AddressSpace => libc::RLIMIT_AS,
            RlimitResource::Data => libc::RLIMIT_DATA,
            RlimitResource::Processes => libc::RLIMIT_NPROC,
            RlimitResource::CpuSeconds => libc::RLIMIT_CPU,
            RlimitResource::FileSize => libc::RLIMIT_FSIZE,
            RlimitResource::OpenFiles => libc::RLIMIT_NOFILE,
            RlimitResource::CoreSize => libc::RLIMIT_CORE,
        };
        let value = libc::rlimit {
            rlim_cur: limit.value,
            rlim_max: limit.ceiling.max(limit.value),
        };
        // SAFETY: setrlimit reads the struct we pass.
        check(unsafe { libc::setrlimit(resource, &value) })
    }

    fn drop_bounding_set(&mut self) -> io::Result<()> {
        for capability in 0..=self.last_capability {
            // SAFETY: prctl with integer arguments only.
            let result =
                unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) };
            if result == -1 {
                let error = io::Error::last_os_error();
                // A capability number the kernel does not know is not in the set.
                if error.raw_os_error() != Some(libc::EINVAL) {
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    fn set_ids(&mut self, uid: u32, gid: u32) -> io::Result<()> {
        // SAFETY: integer arguments only; gid first, while we may still change it.
        check(unsafe { libc::setresgid(gid, gid, gid) })?;
        // SAFETY: as above.
        check(unsafe { libc::setresuid(uid, uid, uid) })
    }

    fn clear_capabilities(&mut self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments only.
        check(unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            )
        })?;
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        // SAFETY: capset reads the header and two data words we own.
        check(unsafe {
            libc::syscall(libc::SYS_capset, &mut header, data.as_mut_ptr()) as libc::c_int
        })?;
        // SAFETY: capget writes into the two data words we own.
        check(unsafe {
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) as libc::c_int
        })?;
        let left = data
            .iter()
            .any(|word| word.effective != 0 || word.permitted != 0 || word.inheritable != 0);
        if left {
            return Err(io::Error::other("capabilities remain after capset"));
        }
        Ok(())
    }

    fn set_no_new_privs(&mut self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        // SAFETY: as above.
        let value = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
        if value == 1 {
            Ok(())
        } else {
            Err(io::Error::other("no_new_privs did not stick"))
        }
    }

    fn apply_landlock(&mut self, plan: &LandlockPlan) -> LandlockOutcome {
        crate::jail::confine::apply_landlock(plan)
    }

    fn load_seccomp(&mut self) -> io::Result<()> {
        crate::jail::filter::load_all()
    }

    fn exec(&mut self, path: &Path, argv: &[String]) -> io::Error {
        let Ok(path) = c_path(path) else {
            return io::Error::from(io::ErrorKind::InvalidInput);
        };
        let Ok(arguments) = argv
            .iter()
            .map(|argument| CString::new(argument.as_str()))
            .collect::<Result<Vec<_>, _>>()
        else {
            return io::Error::from(io::ErrorKind::InvalidInput);
        };
        let mut argument_pointers: Vec<*const libc::c_char> =
            arguments.iter().map(|argument| argument.as_ptr()).collect();
        argument_pointers.push(std::ptr::null());
        let environment: [*const libc::c_char; 1] = [std::ptr::null()];
        // SAFETY: path, argv and envp are valid null-terminated arrays of C strings that live
        // across the call; the environment is empty on purpose.
        unsafe {
            libc::execve(
                path.as_ptr(),
                argument_pointers.as_ptr(),
                environment.as_ptr(),
            );
        }
        io::Error::last_os_error()
    }

    fn child_report(&mut self, status: &crate::jail::Status) {
        let Ok(mut line) = serde_json::to_vec(status) else {
            return;
        };
        line.push(b'\n');
        crate::jail::write_all_fd(self.setup_write, &line);
    }
}
