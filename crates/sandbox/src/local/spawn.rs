//! Starts the jail helper with `posix_spawn`, its descriptors placed by the spawn's own file
//! actions, and keeps the one process it started.
//!
//! `std::process::Command` with a `pre_exec` closure (the only way it offers to put a pipe on
//! descriptor 3, 4 or 5) forks the whole platform: copying the page tables of a large,
//! multithreaded process costs about 0.3 ms, and the thread that spawns waits on the exec
//! beyond that (issue 13: on the path of every sandbox that has no spare helper, and on the
//! refill thread of every one that has). glibc's `posix_spawn` starts the child in the
//! parent's memory (`CLONE_VM | CLONE_VFORK`) and only runs the file actions and the exec
//! there. The child gets what `Command` gave it: an empty environment, no blocked signal,
//! SIGPIPE at its default, and no descriptor but the ones placed (every other one the
//! platform holds is close-on-exec).

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

/// A process this platform spawned and has not yet reaped; [`Process::kill`] never signals a
/// pid once it was reaped (it may belong to someone else by then).
#[derive(Debug)]
pub(crate) struct Process {
    pid: libc::pid_t,
    exited: Option<ExitStatus>,
}

impl Process {
    /// Spawns `program` with `args`, an empty environment and each `(source, target)`
    /// descriptor pair placed. Every source must be above every target, so that no placement
    /// overwrites a source still to be placed, and none may equal its target (a descriptor
    /// duplicated onto itself keeps its close-on-exec flag).
    pub(crate) fn spawn(
        program: &Path,
        args: &[OsString],
        placements: &[(RawFd, RawFd)],
    ) -> io::Result<Process> {
        let highest_target = placements.iter().map(|&(_, target)| target).max();
        if placements
            .iter()
            .any(|&(source, _)| highest_target.is_some_and(|highest| source <= highest))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a descriptor to place is not above every target",
            ));
        }
        let path = CString::new(program.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
        let mut argv_owned = vec![path.clone()];
        for arg in args {
            argv_owned.push(CString::new(arg.as_bytes()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "a NUL in an argument")
            })?);
        }
        let mut argv: Vec<*mut libc::c_char> = argv_owned
            .iter()
            .map(|arg| arg.as_ptr().cast_mut())
            .collect();
        argv.push(std::ptr::null_mut());
        let envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];

        let mut actions = FileActions::new()?;
        for &(source, target) in placements {
            actions.dup2(source, target)?;
        }
        let attributes = Attributes::new()?;
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer is valid for the call: the path and argv point into
        // `argv_owned`, argv and envp end with a null pointer, and the actions and attributes
        // were initialised and stay alive until after it.
        let result = unsafe {
            libc::posix_spawn(
                &mut pid,
                path.as_ptr(),
                &actions.0,
                &attributes.0,
                argv.as_ptr(),
                envp.as_ptr(),
            )
        };
        if result != 0 {
            return Err(io::Error::from_raw_os_error(result));
        }
        Ok(Process { pid, exited: None })
    }

    pub(crate) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// SIGKILL, unless the process was already reaped.
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        if self.exited.is_some() {
            return Ok(());
        }
        // SAFETY: signals our own unreaped child: the pid cannot have been reused.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits for the process to exit.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_with(0)
            .map(|status| status.unwrap_or(ExitStatus::from_raw(0)))
    }

    /// Whether the process has exited, without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.wait_with(libc::WNOHANG)
    }

    fn wait_with(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.exited {
            return Ok(Some(status));
        }
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: waits for our own child into a local.
            let waited = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if waited == -1 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if waited == 0 {
                return Ok(None);
            }
            let status = ExitStatus::from_raw(status);
            self.exited = Some(status);
            return Ok(Some(status));
        }
    }
}

/// `posix_spawn_file_actions_t`, destroyed on drop.
struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    fn new() -> io::Result<FileActions> {
        // SAFETY: an all-zero value is a valid argument to `init`, which overwrites it.
        let mut actions: libc::posix_spawn_file_actions_t = unsafe { std::mem::zeroed() };
        // SAFETY: initialises the value we own.
        check(unsafe { libc::posix_spawn_file_actions_init(&mut actions) })?;
        Ok(FileActions(actions))
    }

    fn dup2(&mut self, source: RawFd, target: RawFd) -> io::Result<()> {
        // SAFETY: adds an action to an initialised value we own.
        check(unsafe { libc::posix_spawn_file_actions_adddup2(&mut self.0, source, target) })
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: destroys the value `new` initialised, once.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

/// `posix_spawnattr_t` with no blocked signal and SIGPIPE back at its default (the platform
/// ignores it), destroyed on drop.
struct Attributes(libc::posix_spawnattr_t);

impl Attributes {
    fn new() -> io::Result<Attributes> {
        // SAFETY: an all-zero value is a valid argument to `init`, which overwrites it; the
        // signal sets are initialised by `sigemptyset` before use.
        unsafe {
            let mut attributes: libc::posix_spawnattr_t = std::mem::zeroed();
            check(libc::posix_spawnattr_init(&mut attributes))?;
            let mut attributes = Attributes(attributes);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(&mut attributes.0, &none))?;
            let mut defaults: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut defaults);
            libc::sigaddset(&mut defaults, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(
                &mut attributes.0,
                &defaults,
            ))?;
            check(libc::posix_spawnattr_setflags(
                &mut attributes.0,
                (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as libc::c_short,
            ))?;
            Ok(attributes)
        }
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: destroys the value `new` initialised, once.
        unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
    }
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    fn pipe_above(minimum: RawFd) -> (OwnedFd, OwnedFd) {
        let mut ends = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two new descriptors into the array we own.
        let made = unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) };
        assert_eq!(made, 0);
        let moved: Vec<OwnedFd> = ends
            .iter()
            .map(|&end| {
                // SAFETY: duplicates a descriptor we own, then closes the original.
                unsafe {
                    let moved = libc::fcntl(end, libc::F_DUPFD_CLOEXEC, minimum);
                    libc::close(end);
                    OwnedFd::from_raw_fd(moved)
                }
            })
            .collect();
        let mut moved = moved.into_iter();
        (moved.next().unwrap(), moved.next().unwrap())
    }

    #[test]
    fn g7_a_spawned_helper_gets_its_placed_descriptors_an_empty_environment_and_nothing_else() {
        // SAFETY: sets the test process's own environment before spawning (nothing else in
        // this test reads it concurrently).
        unsafe { std::env::set_var("STEPWARD_SPAWN_TEST_SECRET", "must-not-pass") };
        let (read, write) = pipe_above(20);
        // A close-on-exec descriptor the child must not get.
        let (_kept_read, kept_write) = pipe_above(20);
        let script = "import os,sys; os.write(4, repr((sorted(int(fd) for fd in os.listdir('/proc/self/fd')), sorted(os.environ))).encode()); sys.exit(3)";
        let mut process = Process::spawn(
            Path::new("/usr/bin/python3"),
            &["-I".into(), "-S".into(), "-c".into(), script.into()],
            &[(write.as_raw_fd(), 4)],
        )
        .unwrap();
        drop(write);
        let status = process.wait().unwrap();
        assert_eq!(status.code(), Some(3));
        let mut file = std::fs::File::from(read);
        let mut printed = String::new();
        io::Read::read_to_string(&mut file, &mut printed).unwrap();
        let (fds, environment) = printed
            .trim_start_matches("([")
            .trim_end_matches("])")
            .split_once("], [")
            .unwrap_or_else(|| panic!("unexpected report: {printed}"));
        let fds: Vec<RawFd> = fds.split(", ").map(|fd| fd.parse().unwrap()).collect();
        assert!(
            fds.contains(&4),
            "the placed descriptor is missing: {fds:?}"
        );
        assert!(
            !fds.contains(&kept_write.as_raw_fd()),
            "a close-on-exec descriptor reached the child: {fds:?}"
        );
        // Only what the interpreter sets itself (PEP 538's locale coercion).
        assert!(
            environment.is_empty() || environment == "'LC_CTYPE'",
            "environment: {environment}"
        );
        // Reaped: a kill afterwards signals nothing.
        process.kill().unwrap();
        assert_eq!(process.try_wait().unwrap(), Some(status));
    }

    #[test]
    fn a_placement_onto_or_above_its_source_is_refused() {
        let error = Process::spawn(Path::new("/bin/true"), &[], &[(3, 4), (10, 5)]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}
