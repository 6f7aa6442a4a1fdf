//! Who holds a lease of the run queue (issue 38), and whether a holder is provably dead: a
//! process of this machine, this pid namespace and this boot whose pid no longer runs, or
//! runs another program started at another time (a reused pid). Nothing else is judged here:
//! a holder of another machine or pid namespace (another container sharing the machine id),
//! of another boot (a clone of this machine's disk shares its id), or whose process this one
//! cannot see (`/proc` mounted with `hidepid`), keeps its lease until it ends by the store's
//! clock.

use storage::queue::Holder;

/// Where the host's boot id is (read only).
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// This machine (with this process's pid namespace) and boot, read once: neither changes in
/// a process's life, and a worker asks at every reaping, once per lease it finds. `None` when
/// they cannot be read: nothing is then proven dead from here.
fn here() -> Option<&'static (String, String)> {
    static HERE: std::sync::OnceLock<Option<(String, String)>> = std::sync::OnceLock::new();
    HERE.get_or_init(|| Some((host_id().ok()?, boot_id().ok()?)))
        .as_ref()
}

/// This process as a lease holder.
pub fn this_process() -> std::io::Result<Holder> {
    let pid = std::process::id();
    let (host, boot) = here().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "this machine's id, pid namespace or boot id cannot be read",
        )
    })?;
    Ok(Holder {
        host: host.clone(),
        boot: boot.clone(),
        pid,
        process_start: process_start(pid)?.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "this process has no start time in /proc",
            )
        })?,
    })
}

/// Whether `holder` is provably dead, as seen from this host. `false` whenever it cannot be
/// proven (another host, an unreadable `/proc`): its lease then ends by the store's clock.
pub fn dead_here(holder: &Holder) -> bool {
    let Some((host, boot)) = here() else {
        return false;
    };
    if &holder.host != host || &holder.boot != boot {
        return false;
    }
    let Some(pid) = i32::try_from(holder.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // The kernel says whether any process has the pid (signal 0 sends nothing); `/proc` may
    // hide processes of other users.
    if let Err(rustix::io::Errno::SRCH) = rustix::process::test_kill_process(pid) {
        return true;
    }
    match process_start(holder.pid) {
        Ok(Some(start)) => start != holder.process_start,
        // Running by the kernel's word, unseen in `/proc` (or gone since): not proven.
        Ok(None) | Err(_) => false,
    }
}

/// The machine's id (`/etc/machine-id`, else its host name) and this process's pid namespace:
/// a pid names one process only within both.
fn host_id() -> std::io::Result<String> {
    let machine = match std::fs::read_to_string("/etc/machine-id") {
        Ok(id) if !id.trim().is_empty() => id.trim().to_owned(),
        _ => rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned(),
    };
    let namespace = std::fs::read_link("/proc/self/ns/pid")?;
    Ok(format!("{machine} {}", namespace.display()))
}

fn boot_id() -> std::io::Result<String> {
    Ok(std::fs::read_to_string(BOOT_ID)?.trim().to_owned())
}

/// The start time of process `pid` (clock ticks after boot: field 22 of `/proc/PID/stat`),
/// or `None` when no such process runs.
fn process_start(pid: u32) -> std::io::Result<Option<u64>> {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    // The command name (field 2) is in parentheses and may hold spaces and parentheses: the
    // fields after it start after the last `)`. Field 22 is the 20th after it.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name
        .split_whitespace()
        .nth(19)
        .and_then(|field| field.parse().ok())
        .map(Some)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("/proc/{pid}/stat has no start time"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reused_pid_or_an_ended_process_is_dead() {
        let me = this_process().unwrap();
        assert!(!dead_here(&me));
        let reused = Holder {
            process_start: me.process_start + 1,
            ..me.clone()
        };
        assert!(dead_here(&reused), "another start time is another process");
        let mut child = std::process::Command::new("/bin/true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let ended = Holder { pid, ..me.clone() };
        assert!(dead_here(&ended), "an ended process (pid {pid}) is dead");
        let other_boot = Holder {
            boot: "another-boot".into(),
            pid,
            ..me.clone()
        };
        assert!(
            !dead_here(&other_boot),
            "a clone of this machine shares its id: another boot is not proof"
        );
        let other_namespace = Holder {
            host: me.host.replace("pid:[", "pid:[9"),
            pid,
            ..me.clone()
        };
        assert_ne!(other_namespace.host, me.host);
        assert!(
            !dead_here(&other_namespace),
            "a pid of another namespace is not ours"
        );
        let elsewhere = Holder {
            host: "another-host".into(),
            pid,
            ..me
        };
        assert!(!dead_here(&elsewhere), "never judged from another host");
    }
}
