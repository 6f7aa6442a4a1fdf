//! Where a woken helper runs while it makes a `none` sandbox's network namespace (issue 13,
//! part 4). The platform wakes the helper and goes on making the slot, folder and cgroups;
//! the two are meant to run side by side. The scheduler, though, tends to wake a task on the
//! waker's CPU, and the helper then waits until the platform's thread blocks: on a two-core
//! machine about half of the cold steps lost 0.6 ms that way (measured with a CPU number at
//! each phase: 0.62 ms from wake to running on the waker's CPU, 0.04 ms on the other). So the
//! helper is woken with this thread's CPU left out of its mask, and gets the mask back before
//! its plan is written: it reads the plan only after the namespace is made, and clones the
//! sandbox after the plan, so the sandbox starts with the platform's own mask (a test checks
//! it).
//!
//! Best effort both ways: a mask that cannot be read or set only costs that half
//! millisecond, and the sandbox's CPU placement is never a security boundary.

/// The mask to give back to a helper that was woken away from the waker's CPU.
#[derive(Clone, Copy)]
pub(crate) struct Restore {
    mask: libc::cpu_set_t,
}

/// Leaves the calling thread's CPU out of process `pid`'s mask, when the thread's own mask
/// has another CPU for it; the mask to restore afterwards.
pub(crate) fn away_from_this_cpu(pid: u32) -> Option<Restore> {
    let mask = this_threads_mask()?;
    // SAFETY: sched_getcpu takes no arguments.
    let here = unsafe { libc::sched_getcpu() };
    if here < 0 {
        return None;
    }
    let mut away = mask;
    // SAFETY: CPU_CLR and CPU_COUNT only touch the set they are given.
    let others = unsafe {
        libc::CPU_CLR(here as usize, &mut away);
        libc::CPU_COUNT(&away)
    };
    if others == 0 || !set(pid, &away) {
        return None;
    }
    Some(Restore { mask })
}

/// Gives process `pid` the mask it had before [`away_from_this_cpu`]; where that mask is no
/// longer valid (a CPU went offline, the cpuset changed), the calling thread's current one.
pub(crate) fn restore(pid: u32, restore: Restore) {
    if set(pid, &restore.mask) {
        return;
    }
    if let Some(mask) = this_threads_mask() {
        set(pid, &mask);
    }
}

/// The CPUs the calling thread may run on.
fn this_threads_mask() -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `mask`.
    let read = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut mask) };
    (read == 0).then_some(mask)
}

fn set(pid: u32, mask: &libc::cpu_set_t) -> bool {
    // SAFETY: sched_setaffinity reads size_of::<cpu_set_t>() bytes from a live set.
    unsafe { libc::sched_setaffinity(pid as libc::pid_t, size_of::<libc::cpu_set_t>(), mask) == 0 }
}
