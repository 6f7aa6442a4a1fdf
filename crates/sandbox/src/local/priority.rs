//! The warm pool's refills yield the CPU to requests (issue 13, part 4): a refill thread runs
//! at nice 19, and so does everything it starts for the sandbox (the jail helper, and through
//! it the sandbox's interpreter while it loads its runtime), so under sustained load a refill
//! takes only the CPU the requests leave idle and the pool never costs throughput against
//! always-cold. When a warm sandbox is claimed, before the invocation goes in, the helper's
//! and the sandbox's every thread get nice 0 back, the priority a cold step runs at.
//!
//! `setpriority(PRIO_PROCESS, tid)` changes one thread on Linux, and a thread or process
//! inherits its creator's nice value; so the refill lowers its own thread (it never takes the
//! spare helper, which was started at 0 and is kept for requests: it spawns its own, which
//! inherits the lowered priority), and the claim restores each thread listed in
//! `/proc/<pid>/task`. Raising a priority back needs `CAP_SYS_NICE`, which
//! the platform has (it runs as root); a claim that cannot restore it fails closed, naming
//! the priority, rather than run the step slowed.

use crate::Error;

/// The nice value of refill work.
pub(crate) const BACKGROUND_NICE: i32 = 19;

/// Lowers the calling thread (and what it starts from now on) to [`BACKGROUND_NICE`]. Best
/// effort: a refill at normal priority is only slower for others.
pub(crate) fn lower_this_thread() {
    // SAFETY: gettid and setpriority take and return plain integers.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}

/// Sets every thread of process `pid` to `nice`.
pub(crate) fn set_process(pid: u32, nice: i32) -> Result<(), Error> {
    let failed = |detail: String| Error::LayerFailed {
        layer: String::from("priority"),
        detail,
    };
    let tasks = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&tasks)
        .map_err(|error| failed(format!("cannot list {tasks}: {error}")))?;
    for entry in entries {
        let entry = entry.map_err(|error| failed(format!("cannot list {tasks}: {error}")))?;
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<libc::id_t>().ok())
        else {
            continue;
        };
        // SAFETY: setpriority takes plain integers.
        let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
        if result == -1 {
            let error = std::io::Error::last_os_error();
            // A thread that ended since the listing needs nothing.
            if error.raw_os_error() != Some(libc::ESRCH) {
                return Err(failed(format!(
                    "setpriority({tid} of process {pid}, {nice}): {error}"
                )));
            }
        }
    }
    Ok(())
}
