//! One runsc container as the platform sees it: `runsc run` started inside the sandbox's
//! cgroup, handed the request on stdin, watched (stdout and stderr within their cap, the
//! report file's size, the wall clock), killed when it must be, and always deleted.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::Error;
use crate::cgroup::SandboxCgroup;
use crate::gvisor::Platform;
use crate::local::outcome::Termination;

/// Room in the report beyond the result itself (the JSON envelope, an error's traceback).
const REPORT_ENVELOPE_BYTES: usize = 64 * 1024;

/// How often the watch loop looks at the container, the report file and the clock.
const TICK: Duration = Duration::from_millis(10);

/// How long teardown waits for runsc to end after the sandbox was killed.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// What the watch loop saw.
pub(crate) struct Watched {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub output_truncated: bool,
    pub report_overflow: bool,
    pub termination: Termination,
    pub timed_out: bool,
}

/// How to start one container.
pub(crate) struct Launch<'a> {
    pub runsc: &'a Path,
    pub root: &'a Path,
    pub id: &'a str,
    pub bundle: &'a Path,
    pub platform: Platform,
    /// `None`: a new, empty network namespace; `PublicEgress`: the one the spec names, with
    /// gVisor's network stack on its veth.
    pub network: crate::NetworkMode,
    /// An empty root-owned directory for the extra, untouched procfs of `ProcSysMask`.
    pub visible_proc: &'a Path,
    /// The `cgroup.procs` files runsc joins before it execs, so that everything it starts
    /// (the sentry, the gofer, their helpers) is inside the sandbox's limits from the start.
    pub cgroup_procs: Vec<PathBuf>,
}

/// A running (or finished) `runsc run`. Dropping it kills the container if it still runs and
/// deletes it from runsc's state in every case.
pub(crate) struct Container {
    runsc: PathBuf,
    root: PathBuf,
    id: String,
    child: Option<Child>,
}

impl Container {
    pub(crate) fn start(launch: Launch<'_>) -> Result<Self, Error> {
        let spawn_error = |source| Error::HelperSpawn {
            helper: launch.runsc.to_path_buf(),
            source,
        };
        let procs: Vec<CString> = launch
            .cgroup_procs
            .iter()
            .map(|path| CString::new(path.as_os_str().as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|error| spawn_error(std::io::Error::other(error)))?;
        let mut command = Command::new(launch.runsc);
        command
            .arg(format!("--root={}", launch.root.display()))
            .arg(match launch.network {
                crate::NetworkMode::None => "--network=none",
                crate::NetworkMode::PublicEgress => "--network=sandbox",
            })
            .arg(format!("--platform={}", launch.platform.name()))
            // The cgroup around the sandbox is the platform's (joined below): runsc's own
            // cgroup handling does not support this host's mixed v1/v2 layout.
            .arg("--ignore-cgroups")
            .arg("--host-uds=none")
            .arg("--host-fifo=none")
            .arg("run")
            .arg(format!("--bundle={}", launch.bundle.display()))
            .arg(launch.id)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: runs in the forked child before exec and only calls open, write and close,
        // which are async-signal-safe, on paths allocated before the fork.
        unsafe {
            command.pre_exec(move || {
                for path in &procs {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                    let error = std::io::Error::last_os_error();
                    libc::close(fd);
                    if written != 1 {
                        return Err(error);
                    }
                }
                Ok(())
            });
        }
        if launch.network == crate::NetworkMode::PublicEgress {
            let mask = ProcSysMask::prepare(launch.visible_proc).map_err(spawn_error)?;
            // SAFETY: runs in the forked child before exec and only makes system calls
            // (unshare, mount, mkdir, open, write, close) on strings prepared before the fork.
            unsafe {
                command.pre_exec(move || mask.apply());
            }
        }
        let child = command.spawn().map_err(spawn_error)?;
        Ok(Self {
            runsc: launch.runsc.to_path_buf(),
            root: launch.root.to_path_buf(),
            id: launch.id.to_string(),
            child: Some(child),
        })
    }

    /// Feeds the request, collects output, and waits for the container to end, killing it
    /// at the deadline or when the report file grows past any honest size. Every process of
    /// the sandbox is dead when this returns `Ok`.
    pub(crate) fn watch(
        &mut self,
        request: Zeroizing<Vec<u8>>,
        deadline: Instant,
        limits: &crate::Limits,
        report_file: &Path,
        cgroup: &mut SandboxCgroup,
        live: Option<&crate::LiveOutput>,
    ) -> Result<Watched, Error> {
        let Some(child) = self.child.as_mut() else {
            return Err(Error::HelperProtocol {
                detail: String::from("the runsc container was already watched"),
            });
        };
        let budget = Arc::new(AtomicUsize::new(limits.output_bytes));
        let writer = child.stdin.take().map(|mut stdin| {
            std::thread::spawn(move || {
                // A sandbox that ends before reading its request closes the pipe; that is
                // seen in how it ended, not here.
                let _ = stdin.write_all(&request);
                drop(request);
            })
        });
        let stdout = child.stdout.take().map(|pipe| {
            let told = live.map(|live| (crate::OutputStream::Stdout, Arc::clone(live)));
            spawn_reader(pipe, Arc::clone(&budget), told)
        });
        let stderr = child.stderr.take().map(|pipe| {
            let told = live.map(|live| (crate::OutputStream::Stderr, Arc::clone(live)));
            spawn_reader(pipe, Arc::clone(&budget), told)
        });
        let report_cap = limits.output_bytes.saturating_add(REPORT_ENVELOPE_BYTES) as u64;
        let mut timed_out = false;
        let mut report_overflow = false;
        let mut kill_deadline: Option<Instant> = None;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(source) => {
                    return Err(Error::io("cannot wait for", &self.runsc, source));
                }
            }
            let now = Instant::now();
            if let Some(limit) = kill_deadline {
                if now >= limit {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            } else {
                let report_size = std::fs::metadata(report_file).map_or(0, |meta| meta.len());
                if report_size > report_cap {
                    // A report bigger than any honest one: stop the sandbox now.
                    report_overflow = true;
                } else if now >= deadline {
                    timed_out = true;
                }
                if report_overflow || timed_out {
                    kill(&self.runsc, &self.root, &self.id);
                    cgroup.destroy()?;
                    kill_deadline = Some(now.checked_add(KILL_GRACE).unwrap_or_else(Instant::now));
                }
            }
            std::thread::sleep(TICK);
        };
        // Whatever runsc left (it normally takes its sandbox down with it) dies here, so the
        // output pipes close and the copy-back sees a folder nobody writes any more.
        cgroup.destroy()?;
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let (stdout, stdout_truncated) = join_reader(stdout);
        let (stderr, stderr_truncated) = join_reader(stderr);
        let termination = match status {
            Some(status) => match (status.code(), status.signal()) {
                // runsc exits with 128 + N when the container's first process died of signal N.
                (Some(code), _) if (129..=128 + 64).contains(&code) => {
                    Termination::Signaled { signal: code - 128 }
                }
                (Some(code), _) => Termination::Exited { code },
                (None, Some(signal)) => Termination::Signaled { signal },
                (None, None) => Termination::Unobserved,
            },
            None => Termination::Unobserved,
        };
        Ok(Watched {
            stdout,
            stderr,
            output_truncated: stdout_truncated || stderr_truncated,
            report_overflow,
            termination,
            timed_out,
        })
    }
}

impl Container {
    /// The container's id in runsc's state.
    #[cfg(feature = "test-controls")]
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Lets go of the container without killing or deleting it, as a crashed platform
    /// would; returns runsc's process for the caller to reap.
    #[cfg(feature = "test-controls")]
    pub(crate) fn abandon(mut self) -> Option<Child> {
        let child = self.child.take();
        // Only paths and an id are leaked; the point is that Drop does not run.
        std::mem::forget(self);
        child
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // A child that already ended is reaped by the try_wait itself.
        if let Some(mut child) = self.child.take()
            && matches!(child.try_wait(), Ok(None))
        {
            kill(&self.runsc, &self.root, &self.id);
            let started = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && started.elapsed() < KILL_GRACE {
                std::thread::sleep(TICK);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        force_delete(&self.runsc, &self.root, &self.id);
    }
}

/// The `/proc/sys` that `runsc run` sees when it joins a platform-made network namespace.
///
/// runsc 20221219 refuses `--network=sandbox` when it believes it runs in the host's network
/// namespace, and believes so when `/proc/sys/net/core/rmem_default` exists, which was true
/// only of the initial namespace before Linux made that setting per namespace (it exists in
/// every namespace on current kernels, so the check refuses every namespace). runsc's own
/// process therefore gets a private mount namespace in which `/proc/sys` is a small read-only
/// tmpfs holding copies of the only other settings runsc reads there (`kernel/cap_last_cap`,
/// `kernel/hostname`, `vm/mmap_min_addr`) and no `net`. A procfs with something mounted over
/// part of it no longer counts as fully visible, and the kernel then refuses the gofer (in its
/// user namespace) a procfs of its own; so a second, untouched procfs is mounted on an empty
/// directory of the backend's state. It changes nothing the host sees: the mounts live in
/// runsc's namespace only (and its children's copies, which chroot away from them), and
/// gVisor's own kernel mounts a fresh procfs of its own. The namespace the sandbox joins is
/// the platform's own, checked when the platform made it.
struct ProcSysMask {
    visible_proc: CString,
    directories: Vec<CString>,
    files: Vec<(CString, Vec<u8>)>,
}

impl ProcSysMask {
    const ROOT: &'static str = "/proc/sys";
    const COPIED: [&'static str; 3] =
        ["kernel/cap_last_cap", "kernel/hostname", "vm/mmap_min_addr"];

    fn prepare(visible_proc: &Path) -> std::io::Result<ProcSysMask> {
        let c = |text: String| CString::new(text).map_err(std::io::Error::other);
        let visible_proc =
            CString::new(visible_proc.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        let mut directories = vec![c(Self::ROOT.to_owned())?];
        for directory in ["kernel", "vm"] {
            directories.push(c(format!("{}/{directory}", Self::ROOT))?);
        }
        let mut files = Vec::new();
        for name in Self::COPIED {
            let path = format!("{}/{name}", Self::ROOT);
            let contents = std::fs::read(&path)?;
            files.push((c(path)?, contents));
        }
        Ok(ProcSysMask {
            visible_proc,
            directories,
            files,
        })
    }

    /// In the forked child: a private mount namespace, the tmpfs over `/proc/sys` with the
    /// copies, read-only.
    fn apply(&self) -> std::io::Result<()> {
        let check = |result: libc::c_int| {
            if result == -1 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        let root = &self.directories[0];
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: system calls on C strings that live in `self` for the whole call.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                c"proc".as_ptr(),
                self.visible_proc.as_ptr(),
                c"proc".as_ptr(),
                0,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                c"tmpfs".as_ptr(),
                root.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                c"size=65536,mode=0555".as_ptr().cast(),
            ))?;
            for directory in &self.directories[1..] {
                check(libc::mkdir(directory.as_ptr(), 0o555))?;
            }
            for (path, contents) in &self.files {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                    0o444,
                );
                if fd == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                let written = libc::write(fd, contents.as_ptr().cast(), contents.len());
                let error = std::io::Error::last_os_error();
                libc::close(fd);
                if written != contents.len() as isize {
                    return Err(error);
                }
            }
            check(libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_RDONLY | flags,
                std::ptr::null(),
            ))?;
        }
        Ok(())
    }
}

/// Reads a pipe to its end, keeping what the shared budget allows and dropping the rest (the
/// sandbox must never block on a full pipe). Returns what was kept and whether anything was
/// dropped.
/// Reads one output pipe of the sandbox, keeping what the shared `budget` grants, and telling
/// `live` each kept piece as it comes (the run page's live view).
fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    budget: Arc<AtomicUsize>,
    live: Option<(crate::OutputStream, crate::LiveOutput)>,
) -> JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = false;
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let read = match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut granted = 0;
            let _ = budget.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                granted = left.min(read);
                Some(left - granted)
            });
            kept.extend_from_slice(&buffer[..granted]);
            if let Some((stream, live)) = &live
                && granted > 0
            {
                live(*stream, &buffer[..granted]);
            }
            if granted < read {
                dropped = true;
            }
        }
        (kept, dropped)
    })
}

fn join_reader(reader: Option<JoinHandle<(Vec<u8>, bool)>>) -> (Vec<u8>, bool) {
    reader
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default()
}

fn runsc_command(runsc: &Path, root: &Path) -> Command {
    let mut command = Command::new(runsc);
    command
        .arg(format!("--root={}", root.display()))
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Sends SIGKILL to every process of the container (best effort: the cgroup kill follows).
fn kill(runsc: &Path, root: &Path, id: &str) {
    let _ = runsc_command(runsc, root)
        .args(["kill", "--all", id, "KILL"])
        .status();
}

/// Removes the container from runsc's state, killing it first if it still runs.
pub(crate) fn force_delete(runsc: &Path, root: &Path, id: &str) {
    let _ = runsc_command(runsc, root)
        .args(["delete", "--force", id])
        .status();
}

/// The ids of the containers in runsc's state under `root`.
pub(crate) fn list(runsc: &Path, root: &Path) -> Result<Vec<String>, Error> {
    let output = runsc_command(runsc, root)
        .args(["list", "--quiet"])
        .stdout(Stdio::piped())
        .output()
        .map_err(|source| Error::io("cannot run", runsc, source))?;
    if !output.status.success() {
        return Err(Error::LayerFailed {
            layer: String::from("gvisor (runsc)"),
            detail: format!(
                "`runsc list` under {} exited with {}",
                root.display(),
                output.status
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect())
}
