//! The unisolated step as a child process: spawned with an empty environment, the report
//! pipe at fd 3, rlimits and its own process group; watched under the wall-clock limit with
//! bounded output; its group killed at the end.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::runtime::Runtime;
use crate::{Error, Invocation, Limits};

/// How long the platform keeps reading the step's output after its main process ended.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);

/// What was seen of the child from outside.
pub(crate) struct Watched {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) timed_out: bool,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) output_truncated: bool,
    pub(crate) report: Vec<u8>,
    pub(crate) report_truncated: bool,
}

pub(crate) fn run_child(
    runtime: &Runtime,
    harness: &Path,
    work: &Path,
    invocation: &Invocation,
) -> Result<Watched, Error> {
    let limits = &invocation.limits;
    let request = crate::request::harness_request(invocation)?;

    let (report_read, report_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|errno| Error::io("cannot create a pipe for", harness, errno.into()))?;
    let mut command = Command::new(&runtime.executable);
    command
        .arg("-I")
        .arg("-S")
        .arg(harness)
        .env_clear()
        .current_dir(work)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let report_raw = report_write.as_raw_fd();
    let rlimits = rlimits_for(limits);
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (fcntl, dup2, setrlimit, prctl, close_range through
    // syscall), allocating nothing; `rlimits` is a plain array copied into the closure.
    unsafe {
        command.pre_exec(move || child_setup(report_raw, &rlimits));
    }
    let mut child = command.spawn().map_err(|source| Error::HelperSpawn {
        helper: runtime.executable.clone(),
        source,
    })?;
    drop(report_write);
    let group = KillGroupOnDrop::new(&child);

    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(stdin) = stdin.as_mut() {
            // A step that never reads its request just gets a broken pipe here.
            let _ = stdin.write_all(&request);
        }
        drop(stdin);
    });
    let watched = watch(&mut child, report_read, limits)?;
    group.disarm();
    let _ = writer.join();
    Ok(watched)
}

/// One resource limit for the child: (resource, value), soft = hard.
type ChildRlimit = (libc::__rlimit_resource_t, u64);

fn rlimits_for(limits: &Limits) -> [ChildRlimit; 5] {
    [
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_DATA, limits.memory_bytes),
        (libc::RLIMIT_FSIZE, limits.file_size_bytes),
        (libc::RLIMIT_NOFILE, limits.open_files),
        (libc::RLIMIT_CORE, 0),
    ]
}

/// In the child, between fork and exec: the report pipe at fd 3, every other inherited
/// descriptor closed, rlimits set, death with the parent.
fn child_setup(report_raw: i32, rlimits: &[ChildRlimit]) -> std::io::Result<()> {
    const REPORT_FD: i32 = 3;
    if report_raw == REPORT_FD {
        // SAFETY: fcntl on a descriptor this process owns; clears close-on-exec only.
        if unsafe { libc::fcntl(REPORT_FD, libc::F_SETFD, 0) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
    } else {
        // SAFETY: dup2 onto fd 3 of this (forked, single-threaded) child; the copy does not
        // carry close-on-exec.
        if unsafe { libc::dup2(report_raw, REPORT_FD) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    // SAFETY: close_range closes only descriptors of this child above the report channel.
    if unsafe { libc::syscall(libc::SYS_close_range, 4_u32, u32::MAX, 0_u32) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    for (resource, value) in rlimits {
        let limit = libc::rlimit {
            rlim_cur: *value,
            rlim_max: *value,
        };
        // SAFETY: setrlimit reads the struct on this stack frame and changes only this child.
        if unsafe { libc::setrlimit(*resource, &limit) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    // SAFETY: prctl with integer arguments; the child is killed if the platform thread dies.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } == -1
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Kills the child's whole process group when dropped on an error or panic path, while the
/// child is not yet reaped (so its pid, the group's id, cannot have been reused).
struct KillGroupOnDrop {
    group: Option<rustix::process::Pid>,
}

impl KillGroupOnDrop {
    fn new(child: &Child) -> Self {
        let group = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        Self { group }
    }

    /// The group was killed and the child reaped by [`watch`]: nothing is left to do.
    fn disarm(mut self) {
        self.group = None;
    }
}

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

/// Reads stdout, stderr and the report under the wall-clock limit until the main process has
/// ended and its output is drained; kills the group at the limit and after the end.
fn watch(child: &mut Child, report: OwnedFd, limits: &Limits) -> Result<Watched, Error> {
    let started = Instant::now();
    let report_cap = limits.output_bytes.saturating_add(64 * 1024);
    let mut streams: Vec<Stream> = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        streams.push(Stream::new(OwnedFd::from(stdout), StreamKind::Stdout));
    }
    if let Some(stderr) = child.stderr.take() {
        streams.push(Stream::new(OwnedFd::from(stderr), StreamKind::Stderr));
    }
    streams.push(Stream::new(report, StreamKind::Report));
    for stream in &streams {
        set_nonblocking(&stream.fd)?;
    }
    let group = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    let mut watched = Watched {
        status: None,
        timed_out: false,
        stdout: Vec::new(),
        stderr: Vec::new(),
        output_truncated: false,
        report: Vec::new(),
        report_truncated: false,
    };
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if watched.status.is_none() && now.duration_since(started) >= limits.wall {
            watched.timed_out = true;
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
        }
        if watched.status.is_none() && main_process_ended(child)? {
            // Kill what the step left in its group while the main process is still a zombie,
            // so the group id cannot belong to anyone else yet; then reap it.
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let status = child
                .wait()
                .map_err(|source| Error::io("cannot wait for", "the unisolated step", source))?;
            watched.status = Some(status);
            drain_until = Some(
                Instant::now()
                    .checked_add(DRAIN_AFTER_EXIT)
                    .unwrap_or_else(Instant::now),
            );
        }
        let open = streams.iter().any(|stream| stream.open);
        if watched.status.is_some()
            && (!open || drain_until.is_some_and(|until| Instant::now() >= until))
        {
            break;
        }
        poll_streams(&mut streams, Duration::from_millis(20));
        for stream in &mut streams {
            stream.read_available(&mut watched, limits.output_bytes, report_cap);
        }
    }
    Ok(watched)
}

/// Whether the child has ended, without reaping it.
fn main_process_ended(child: &Child) -> Result<bool, Error> {
    let Some(pid) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(true);
    };
    let options = rustix::process::WaitIdOptions::EXITED
        | rustix::process::WaitIdOptions::NOHANG
        | rustix::process::WaitIdOptions::NOWAIT;
    match rustix::process::waitid(rustix::process::WaitId::Pid(pid), options) {
        Ok(found) => Ok(found.is_some()),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(errno) => Err(Error::io(
            "cannot wait for",
            "the unisolated step",
            errno.into(),
        )),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    Stdout,
    Stderr,
    Report,
}

struct Stream {
    fd: OwnedFd,
    kind: StreamKind,
    open: bool,
}

impl Stream {
    fn new(fd: OwnedFd, kind: StreamKind) -> Self {
        Self {
            fd,
            kind,
            open: true,
        }
    }

    /// Reads what is there without blocking; keeps at most the caps and drops the rest, so a
    /// flooding step never blocks on a full pipe and never fills the platform's memory.
    fn read_available(&mut self, watched: &mut Watched, output_cap: usize, report_cap: usize) {
        let mut buffer = [0_u8; 16 * 1024];
        while self.open {
            match rustix::io::read(&self.fd, &mut buffer) {
                Ok(0) => self.open = false,
                Ok(count) => {
                    let chunk = &buffer[..count];
                    match self.kind {
                        StreamKind::Report => {
                            let room = report_cap.saturating_sub(watched.report.len());
                            watched
                                .report
                                .extend_from_slice(&chunk[..chunk.len().min(room)]);
                            if chunk.len() > room {
                                watched.report_truncated = true;
                            }
                        }
                        StreamKind::Stdout | StreamKind::Stderr => {
                            let room = output_cap
                                .saturating_sub(watched.stdout.len() + watched.stderr.len());
                            let kept = &chunk[..chunk.len().min(room)];
                            if self.kind == StreamKind::Stdout {
                                watched.stdout.extend_from_slice(kept);
                            } else {
                                watched.stderr.extend_from_slice(kept);
                            }
                            if chunk.len() > room {
                                watched.output_truncated = true;
                            }
                        }
                    }
                }
                Err(rustix::io::Errno::AGAIN) => return,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => self.open = false,
            }
        }
    }
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), Error> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|errno| {
        Error::io(
            "cannot read flags of",
            "a pipe of the unisolated step",
            errno.into(),
        )
    })?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK).map_err(|errno| {
        Error::io(
            "cannot set flags of",
            "a pipe of the unisolated step",
            errno.into(),
        )
    })
}

/// Waits until one of the open streams has data or is closed, or `timeout` passes.
fn poll_streams(streams: &mut [Stream], timeout: Duration) {
    let mut fds: Vec<libc::pollfd> = streams
        .iter()
        .filter(|stream| stream.open)
        .map(|stream| libc::pollfd {
            fd: stream.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    if fds.is_empty() {
        std::thread::sleep(timeout);
        return;
    }
    // SAFETY: `fds` is a live, correctly sized array of pollfd for the duration of the call,
    // and every descriptor in it is owned by `streams`.
    let _ = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
}
