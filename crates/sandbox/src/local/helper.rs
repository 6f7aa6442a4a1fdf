//! The jail helper process as the platform sees it: spawned with its descriptors arranged
//! (see [`crate::jail::plan::fds`]), handed its plan, then watched: the request fed in,
//! stdout, stderr and the report channel collected within their caps, the helper's status
//! lines read, the wall clock enforced by killing the sandbox's cgroups.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::Error;
use crate::jail::Status;
use crate::jail::plan::{Plan, fds};
use crate::local::outcome::Termination;
use crate::local::spawn::Process;

/// How long teardown waits for the helper to report after the sandbox was killed.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Room on the report channel beyond the result itself (the JSON envelope, an error's
/// traceback).
const REPORT_ENVELOPE_BYTES: usize = 64 * 1024;

/// What the watch loop saw.
pub(crate) struct Watched {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub output_truncated: bool,
    pub report: Vec<u8>,
    pub report_overflow: bool,
    pub notes: Vec<String>,
    pub layer_failure: Option<(crate::jail::Layer, String)>,
    pub termination: Termination,
    pub cpu_millis: u64,
    pub timed_out: bool,
}

/// The running helper and the platform's ends of its pipes. Dropping it kills the helper
/// (and with it, through the parent-death signal, the sandbox).
pub(crate) struct Helper {
    child: Process,
    program: PathBuf,
    request: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    report: Option<OwnedFd>,
    status: Option<OwnedFd>,
    /// Held open for the helper's lifetime: its end of file tells the helper we are gone.
    lifeline: Option<OwnedFd>,
    reaped: bool,
    /// What [`Helper::wait_ready`] read ahead, handed to [`Helper::watch`].
    early_report: Vec<u8>,
    early_status: Vec<u8>,
    /// The CPU mask to give back before the plan goes in, when [`Helper::wake_for_request`]
    /// woke it away from the waker's CPU (see `local::affinity`).
    woken_away: Option<crate::local::affinity::Restore>,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two new descriptors into the array we own.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) })
}

/// Moves a descriptor above the numbers the helper's layout uses, so the dup2 in the child
/// never lands on itself (which would keep close-on-exec set).
fn above_layout(fd: OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new one we then own.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if moved == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `moved` is fresh and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl flag manipulation on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags == -1 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) == -1
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Helper {
    /// Spawns the helper and hands it its plan.
    pub(crate) fn spawn(
        helper: &(PathBuf, Vec<std::ffi::OsString>),
        plan: &Plan,
    ) -> Result<Self, Error> {
        let mut spawned = Self::spawn_idle(helper)?;
        spawned.send_plan(plan)?;
        Ok(spawned)
    }

    /// Spawns the helper with its descriptors arranged; it waits for its plan (see
    /// [`Helper::send_plan`]). A spare helper holds nothing of any tenant until then, and
    /// exits when its lifeline closes (dropping it).
    pub(crate) fn spawn_idle(helper: &(PathBuf, Vec<std::ffi::OsString>)) -> Result<Self, Error> {
        let program = helper.0.clone();
        let spawn_error = |source| Error::HelperSpawn {
            helper: program.clone(),
            source,
        };
        let (request_read, request_write) = pipe().map_err(spawn_error)?;
        let (stdout_read, stdout_write) = pipe().map_err(spawn_error)?;
        let (stderr_read, stderr_write) = pipe().map_err(spawn_error)?;
        let (report_read, report_write) = pipe().map_err(spawn_error)?;
        let (control_read, control_write) = pipe().map_err(spawn_error)?;
        let (status_read, status_write) = pipe().map_err(spawn_error)?;
        // Every source above every target (see `spawn::Process::spawn`).
        let request_read = above_layout(request_read).map_err(spawn_error)?;
        let stdout_write = above_layout(stdout_write).map_err(spawn_error)?;
        let stderr_write = above_layout(stderr_write).map_err(spawn_error)?;
        let report_write = above_layout(report_write).map_err(spawn_error)?;
        let control_read = above_layout(control_read).map_err(spawn_error)?;
        let status_write = above_layout(status_write).map_err(spawn_error)?;
        let layout = [
            (request_read.as_raw_fd(), fds::REQUEST),
            (stdout_write.as_raw_fd(), fds::STDOUT),
            (stderr_write.as_raw_fd(), fds::STDERR),
            (report_write.as_raw_fd(), fds::REPORT),
            (control_read.as_raw_fd(), fds::CONTROL),
            (status_write.as_raw_fd(), fds::STATUS),
        ];
        let child = Process::spawn(&helper.0, &helper.1, &layout).map_err(spawn_error)?;
        drop((
            request_read,
            stdout_write,
            stderr_write,
            report_write,
            control_read,
            status_write,
        ));
        let helper = Self {
            child,
            program: program.clone(),
            request: Some(request_write),
            stdout: Some(stdout_read),
            stderr: Some(stderr_read),
            report: Some(report_read),
            status: Some(status_read),
            lifeline: Some(control_write),
            reaped: false,
            early_report: Vec::new(),
            early_status: Vec::new(),
            woken_away: None,
        };
        for fd in [
            &helper.request,
            &helper.stdout,
            &helper.stderr,
            &helper.report,
            &helper.status,
        ]
        .into_iter()
        .flatten()
        {
            set_nonblocking(fd).map_err(spawn_error)?;
        }
        Ok(helper)
    }

    /// The helper's host pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Tells a waiting helper that its request arrived: it makes the sandbox's fresh network
    /// namespace (for a `none` sandbox) while the platform makes the slot, folder and cgroups;
    /// the plan follows. An empty line on the control pipe.
    pub(crate) fn wake(&mut self) -> Result<(), Error> {
        let Some(lifeline) = &self.lifeline else {
            return Err(Error::HelperProtocol {
                detail: String::from("the helper's control pipe is closed"),
            });
        };
        write_fully(lifeline.as_raw_fd(), b"\n").map_err(|source| Error::HelperSpawn {
            helper: self.program.clone(),
            source,
        })
    }

    /// [`Helper::wake`] for a request waiting on this sandbox: on another CPU than this
    /// thread's, which goes on making the sandbox meanwhile (see `local::affinity`). A refill
    /// or a sandbox built ahead is off every request's path and takes whichever CPU is free.
    pub(crate) fn wake_for_request(&mut self) -> Result<(), Error> {
        if self.woken_away.is_none() {
            self.woken_away = crate::local::affinity::away_from_this_cpu(self.child.id());
        }
        self.wake()
    }

    /// Hands the helper its plan: one JSON line on the control pipe, which then stays open
    /// as the lifeline.
    pub(crate) fn send_plan(&mut self, plan: &Plan) -> Result<(), Error> {
        let mut line = serde_json::to_vec(plan).map_err(|source| Error::Plan {
            action: "encoded",
            source,
        })?;
        line.push(b'\n');
        let Some(lifeline) = &self.lifeline else {
            return Err(Error::HelperProtocol {
                detail: String::from("the helper's control pipe is closed"),
            });
        };
        // The sandbox, cloned after the plan, starts with the platform's own CPU mask.
        if let Some(restore) = self.woken_away.take() {
            crate::local::affinity::restore(self.child.id(), restore);
        }
        write_fully(lifeline.as_raw_fd(), &line).map_err(|source| Error::HelperSpawn {
            helper: self.program.clone(),
            source,
        })
    }

    /// Feeds the request, collects output and reports until the sandbox ended (or the wall
    /// clock ran out, when it kills the sandbox through its cgroups).
    pub(crate) fn watch(
        &mut self,
        request: &[u8],
        deadline: Instant,
        limits: &crate::Limits,
        cgroup: &mut crate::cgroup::SandboxCgroup,
        live: Option<&crate::LiveOutput>,
    ) -> Result<Watched, Error> {
        let report_cap = limits.output_bytes.saturating_add(REPORT_ENVELOPE_BYTES);
        let mut watched = Watched {
            stdout: Vec::new(),
            stderr: Vec::new(),
            output_truncated: false,
            report: Vec::new(),
            report_overflow: false,
            notes: Vec::new(),
            layer_failure: None,
            termination: Termination::Unobserved,
            cpu_millis: 0,
            timed_out: false,
        };
        watched.report = std::mem::take(&mut self.early_report);
        let mut request_sent = 0usize;
        let mut status_buffer = std::mem::take(&mut self.early_status);
        let mut ended = false;
        let mut kill_deadline: Option<Instant> = None;
        loop {
            let open_streams = [&self.stdout, &self.stderr, &self.report]
                .iter()
                .filter(|fd| fd.is_some())
                .count();
            if open_streams == 0 && (ended || self.status.is_none()) {
                break;
            }
            let now = Instant::now();
            let limit = kill_deadline.unwrap_or(deadline);
            if now >= limit {
                if kill_deadline.is_some() {
                    // The helper did not report within the grace period: end it ourselves.
                    let _ = self.child.kill();
                    break;
                }
                watched.timed_out = true;
                cgroup.destroy()?;
                kill_deadline = Some(now.checked_add(KILL_GRACE).unwrap_or_else(Instant::now));
                continue;
            }
            let slots = [
                (self.request.as_ref(), libc::POLLOUT),
                (self.stdout.as_ref(), libc::POLLIN),
                (self.stderr.as_ref(), libc::POLLIN),
                (self.report.as_ref(), libc::POLLIN),
                (self.status.as_ref(), libc::POLLIN),
            ];
            let mut polled: Vec<libc::pollfd> = slots
                .iter()
                .map(|(fd, events)| libc::pollfd {
                    fd: fd.map_or(-1, |fd| fd.as_raw_fd()),
                    events: *events,
                    revents: 0,
                })
                .collect();
            let wait = limit
                .saturating_duration_since(now)
                .as_millis()
                .min(i32::MAX as u128) as i32;
            // SAFETY: poll over a vector we own.
            let ready = unsafe {
                libc::poll(
                    polled.as_mut_ptr(),
                    polled.len() as libc::nfds_t,
                    wait.max(1),
                )
            };
            if ready == -1 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::HelperProtocol {
                    detail: format!("poll: {error}"),
                });
            }
            if polled[0].revents != 0 {
                self.feed_request(request, &mut request_sent);
            }
            if polled[1].revents != 0 || polled[2].revents != 0 {
                for index in [1usize, 2] {
                    let is_stdout = index == 1;
                    if polled[index].revents == 0 {
                        continue;
                    }
                    let fd = if is_stdout {
                        &mut self.stdout
                    } else {
                        &mut self.stderr
                    };
                    let budget = limits
                        .output_bytes
                        .saturating_sub(watched.stdout.len() + watched.stderr.len());
                    let target = if is_stdout {
                        &mut watched.stdout
                    } else {
                        &mut watched.stderr
                    };
                    let before = target.len();
                    if read_bounded(fd, target, budget) {
                        watched.output_truncated = true;
                    }
                    if let Some(live) = live
                        && target.len() > before
                    {
                        let stream = if is_stdout {
                            crate::OutputStream::Stdout
                        } else {
                            crate::OutputStream::Stderr
                        };
                        live(stream, &target[before..]);
                    }
                }
            }
            if polled[3].revents != 0 {
                let budget = report_cap.saturating_sub(watched.report.len());
                if read_bounded(&mut self.report, &mut watched.report, budget)
                    && !watched.report_overflow
                {
                    // A report bigger than any honest one: stop the sandbox now.
                    watched.report_overflow = true;
                    cgroup.destroy()?;
                }
            }
            if polled[4].revents != 0 {
                let mut sink = Vec::new();
                read_bounded(&mut self.status, &mut sink, 64 * 1024);
                status_buffer.extend_from_slice(&sink);
                while let Some(end) = status_buffer.iter().position(|byte| *byte == b'\n') {
                    let line: Vec<u8> = status_buffer.drain(..=end).collect();
                    let status: Status =
                        serde_json::from_slice(&line).map_err(|error| Error::HelperProtocol {
                            detail: format!("unreadable status line: {error}"),
                        })?;
                    match status {
                        Status::Note { text } => watched.notes.push(text),
                        Status::Failed { layer, detail } => {
                            watched.layer_failure = Some((layer, detail));
                            cgroup.destroy()?;
                            return Ok(watched);
                        }
                        Status::Running => {}
                        Status::Exited { code, cpu_millis } => {
                            watched.termination = Termination::Exited { code };
                            watched.cpu_millis = cpu_millis;
                            ended = true;
                        }
                        Status::Signaled { signal, cpu_millis } => {
                            watched.termination = Termination::Signaled { signal };
                            watched.cpu_millis = cpu_millis;
                            ended = true;
                        }
                    }
                }
                if ended && kill_deadline.is_none() {
                    // The first process is gone, so the kernel is killing the rest of the pid
                    // namespace; the streams close within moments.
                    kill_deadline = Some(
                        Instant::now()
                            .checked_add(KILL_GRACE)
                            .unwrap_or_else(Instant::now),
                    );
                }
            }
        }
        Ok(watched)
    }

    fn feed_request(&mut self, request: &[u8], sent: &mut usize) {
        let Some(fd) = &self.request else { return };
        if *sent < request.len() {
            let rest = &request[*sent..];
            // SAFETY: writes from a live buffer to our end of the request pipe.
            let written = unsafe { libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()) };
            if written > 0 {
                *sent += written as usize;
            } else if written == -1
                && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
            {
                return;
            } else {
                // The sandbox is gone; nothing more to send.
                self.request = None;
                return;
            }
        }
        if *sent >= request.len() {
            // End of file tells the harness the request is complete.
            self.request = None;
        }
    }

    /// Waits until the harness says it is loaded and waiting for its request (a warm
    /// sandbox is pooled only then). Fails when setup failed or the sandbox ended.
    pub(crate) fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(Instant::now);
        loop {
            let ready = self
                .early_report
                .split(|byte| *byte == b'\n')
                .any(|line| line.starts_with(b"{\"event\": \"ready\"}"));
            if ready {
                return Ok(());
            }
            for line in self
                .early_status
                .split(|byte| *byte == b'\n')
                .filter(|line| !line.is_empty())
            {
                match serde_json::from_slice::<Status>(line) {
                    Ok(Status::Failed { layer, detail }) => {
                        return Err(Error::LayerFailed {
                            layer: layer.name().to_owned(),
                            detail,
                        });
                    }
                    Ok(Status::Exited { .. } | Status::Signaled { .. }) => {
                        return Err(Error::HelperProtocol {
                            detail: String::from("the sandbox ended before the harness was ready"),
                        });
                    }
                    _ => {}
                }
            }
            let now = Instant::now();
            if now >= deadline || (self.report.is_none() && self.status.is_none()) {
                return Err(Error::HelperProtocol {
                    detail: String::from("the harness did not get ready in time"),
                });
            }
            let mut polled = [
                libc::pollfd {
                    fd: self.report.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.status.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let wait = deadline
                .saturating_duration_since(now)
                .as_millis()
                .min(i32::MAX as u128) as i32;
            // SAFETY: poll over an array we own.
            let result = unsafe {
                libc::poll(
                    polled.as_mut_ptr(),
                    polled.len() as libc::nfds_t,
                    wait.max(1),
                )
            };
            if result == -1 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(Error::HelperProtocol {
                    detail: format!("poll: {}", io::Error::last_os_error()),
                });
            }
            if polled[0].revents != 0 {
                read_bounded(&mut self.report, &mut self.early_report, 64 * 1024);
            }
            if polled[1].revents != 0 {
                read_bounded(&mut self.status, &mut self.early_status, 64 * 1024);
            }
        }
    }

    /// Ends a helper that was never given a plan (a spare nobody took): it holds no sandbox,
    /// so it is killed outright instead of waited for while it may still be starting.
    pub(crate) fn discard_idle(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }

    /// Waits for the helper to exit (it does right after the sandbox ends).
    pub(crate) fn reap(&mut self) {
        if self.reaped {
            return;
        }
        let started = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if started.elapsed() > KILL_GRACE => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_micros(200)),
            }
        }
        self.reaped = true;
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // Closing the lifeline makes the helper kill the sandbox and reap its first process
        // before exiting; killing the helper itself would leave that process to the host's
        // init as a zombie. SIGKILL only if the helper does not end by itself.
        self.lifeline = None;
        self.reap();
    }
}

/// Reads what is available into `target`, keeping at most `budget` more bytes. Closes the
/// descriptor at end of file. Returns true when bytes were dropped for lack of budget.
fn read_bounded(fd: &mut Option<OwnedFd>, target: &mut Vec<u8>, budget: usize) -> bool {
    let Some(open) = fd else { return false };
    let mut dropped = false;
    let mut buffer = [0u8; 16 * 1024];
    let mut kept = 0usize;
    // A bounded number of reads per wake-up, so a flood cannot starve the other streams or
    // the wall clock.
    for _ in 0..64 {
        // SAFETY: reads into a live buffer from our end of a pipe.
        let read =
            unsafe { libc::read(open.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        if read > 0 {
            let read = read as usize;
            let room = budget.saturating_sub(kept).min(read);
            target.extend_from_slice(&buffer[..room]);
            kept += room;
            if room < read {
                dropped = true;
            }
            continue;
        }
        if read == 0 {
            *fd = None;
        } else {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if error.kind() != io::ErrorKind::WouldBlock {
                *fd = None;
            }
        }
        return dropped;
    }
    dropped
}

fn write_fully(fd: RawFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: writes from a live buffer to a blocking descriptor we own.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        bytes = &bytes[written as usize..];
    }
    Ok(())
}
