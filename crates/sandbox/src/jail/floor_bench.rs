//! The floor of a cold sandbox (test controls only, never in the platform's binary): one
//! `clone3` straight into fresh user, mount, pid, ipc, uts, network and cgroup namespaces,
//! then `execve` of `python -I -S -c pass`, timed until the parent has its exit status.
//! Nothing else a sandbox needs happens: no uid map, no cgroup, no mount, no root, no
//! filter. Any sandbox that makes its namespaces per step pays at least this; the benchmark
//! prints it beside bare python and the same clone without namespaces, so the sandbox's own
//! figure can be read against what the kernel alone costs here.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which clone the floor measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorClone {
    /// The same clone and exec, no namespace: the control for this code path.
    Plain,
    /// Every namespace a `none` sandbox gets.
    FreshNamespaces,
}

/// Times one clone of `kind`, the exec of `python -I -S -c pass` with an empty environment,
/// and the wait for its exit; an error when the child did not exit 0.
pub fn namespace_floor(python: &Path, kind: FloorClone) -> io::Result<Duration> {
    let path = CString::new(python.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let arguments: Vec<CString> = [python.as_os_str().as_bytes(), b"-I", b"-S", b"-c", b"pass"]
        .iter()
        .map(|argument| CString::new(*argument))
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut argv: Vec<*const libc::c_char> = arguments.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let flags = match kind {
        FloorClone::Plain => 0,
        FloorClone::FreshNamespaces => {
            (libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWCGROUP) as u64
        }
    };
    // `struct clone_args` up to `tls` (CLONE_ARGS_SIZE_VER0, 64 bytes).
    let mut args = [0u64; 8];
    args[0] = flags;
    args[4] = libc::SIGCHLD as u64;
    let started = Instant::now();
    // SAFETY: clone3 without CLONE_VM behaves like fork; the child only calls execve on
    // memory prepared above and `_exit`s if that fails.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args.as_mut_ptr(),
            size_of_val(&args) as libc::size_t,
        )
    };
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
    if pid == -1 {
        return Err(io::Error::last_os_error());
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above, writing into a local.
        let waited = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if waited != -1 {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let elapsed = started.elapsed();
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(io::Error::other(format!(
            "{} -I -S -c pass in a {kind:?} clone ended with wait status {status}",
            python.display()
        )));
    }
    Ok(elapsed)
}
