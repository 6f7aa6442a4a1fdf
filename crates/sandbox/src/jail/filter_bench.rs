//! The syscall microbenchmark of the seccomp layout (test controls only, never in the
//! platform's binary): in a forked child, load the filters in one layout (none, seccompiler's
//! linear chains, or the search trees the jail installs), then time system calls in a loop.
//!
//! Three calls: `getppid`, which the kernel's action cache answers without running any filter
//! (every filter allows it whatever its arguments); `ioctl(FIONREAD)` on a pipe, which every
//! filter runs on because the `deny` filter looks at ioctl's request argument; and a syscall
//! number no filter lists (`nr` 1000), whose answer (ENOSYS, as without a filter) comes from
//! the end of each program: the longest walk of a linear chain.

use std::io;
use std::time::Duration;

use crate::jail::filter::{LINEAR, PROGRAMS, decode};

/// Which programs the child loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterLayout {
    /// No filter: the control.
    Off,
    /// seccompiler's linear chains.
    Linear,
    /// The search trees the jail installs.
    Tree,
}

/// What one child measured.
#[derive(Debug, Clone, Copy)]
pub struct SyscallCosts {
    /// Loading every program (three `prctl` calls, including the kernel building its cache).
    pub load: Duration,
    pub getppid: Duration,
    pub ioctl: Duration,
    pub unlisted: Duration,
}

const UNLISTED: libc::c_long = 1000;

/// Measures `iterations` calls of each kind in a forked child with `layout` loaded.
pub fn syscall_costs(layout: FilterLayout, iterations: u32) -> io::Result<SyscallCosts> {
    let programs: Vec<Vec<libc::sock_filter>> = match layout {
        FilterLayout::Off => Vec::new(),
        FilterLayout::Linear => LINEAR.iter().map(|(_, bytes)| decode(bytes)).collect(),
        FilterLayout::Tree => PROGRAMS.iter().map(|(_, bytes)| decode(bytes)).collect(),
    };
    let mut report = [0 as libc::c_int; 2];
    let mut data = [0 as libc::c_int; 2];
    // SAFETY: plain system calls on arrays that live for the whole function.
    unsafe {
        if libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) == -1 {
            return Err(io::Error::last_os_error());
        }
        if libc::pipe2(data.as_mut_ptr(), libc::O_CLOEXEC) == -1 {
            let error = io::Error::last_os_error();
            libc::close(report[0]);
            libc::close(report[1]);
            return Err(error);
        }
    }
    // SAFETY: the child makes only system calls (no allocation, no lock) on memory prepared
    // before the fork, then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above; `child` never returns.
        unsafe { child(&programs, iterations, report[1], data[0]) }
    }
    // SAFETY: closing our copies of the child's ends and reading the report into a local
    // array; waitpid on the child we forked.
    unsafe {
        libc::close(report[1]);
        libc::close(data[0]);
        libc::close(data[1]);
        if pid == -1 {
            let error = io::Error::last_os_error();
            libc::close(report[0]);
            return Err(error);
        }
        let mut figures = [0u64; 5];
        let wanted = size_of_val(&figures);
        let mut got = 0usize;
        while got < wanted {
            let read = libc::read(
                report[0],
                figures.as_mut_ptr().cast::<u8>().add(got).cast(),
                wanted - got,
            );
            if read <= 0 {
                break;
            }
            got += read as usize;
        }
        libc::close(report[0]);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        if got != wanted || figures[0] != 0 {
            return Err(io::Error::other(format!(
                "the benchmark child failed (step {}, errno {}, wait status {status})",
                figures[0] >> 32,
                figures[0] & 0xFFFF_FFFF
            )));
        }
        let per_call = |total: u64| Duration::from_nanos(total / u64::from(iterations.max(1)));
        Ok(SyscallCosts {
            load: Duration::from_nanos(figures[1]),
            getppid: per_call(figures[2]),
            ioctl: per_call(figures[3]),
            unlisted: per_call(figures[4]),
        })
    }
}

fn now() -> u64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes into a local timespec.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time);
    }
    (time.tv_sec as u64) * 1_000_000_000 + time.tv_nsec as u64
}

/// The forked child: loads the programs, times the loops, writes `[status, load, getppid,
/// ioctl, unlisted]` (nanoseconds) to `report`, exits.
unsafe fn child(
    programs: &[Vec<libc::sock_filter>],
    iterations: u32,
    report: libc::c_int,
    pipe_read: libc::c_int,
) -> ! {
    let mut figures = [0u64; 5];
    let fail =
        |step: u64| (step << 32) | io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64;
    // SAFETY: system calls on memory prepared before the fork (the programs, `figures`).
    unsafe {
        'run: {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                figures[0] = fail(1);
                break 'run;
            }
            let started = now();
            for program in programs {
                let fprog = libc::sock_fprog {
                    len: program.len() as libc::c_ushort,
                    filter: program.as_ptr().cast_mut(),
                };
                let loaded = libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &fprog as *const libc::sock_fprog as libc::c_ulong,
                    0,
                    0,
                );
                if loaded == -1 {
                    figures[0] = fail(2);
                    break 'run;
                }
            }
            figures[1] = now() - started;
            let started = now();
            for _ in 0..iterations {
                libc::getppid();
            }
            figures[2] = now() - started;
            let mut available: libc::c_int = 0;
            let started = now();
            for _ in 0..iterations {
                if libc::ioctl(pipe_read, libc::FIONREAD, &mut available) == -1 {
                    figures[0] = fail(3);
                    break 'run;
                }
            }
            figures[3] = now() - started;
            let started = now();
            for _ in 0..iterations {
                if libc::syscall(UNLISTED) != -1 {
                    figures[0] = fail(4);
                    break 'run;
                }
            }
            figures[4] = now() - started;
        }
        libc::write(report, figures.as_ptr().cast(), size_of_val(&figures));
        libc::_exit(0)
    }
}
