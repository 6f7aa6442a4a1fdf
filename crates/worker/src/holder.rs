//! Who holds a lease of the run queue (issue 38), and whether a holder is provably dead: a
//! process of this host and this boot whose pid no longer runs, or runs another program
//! started at another time (a reused pid), or any process of an earlier boot of this host.
//! A holder on another host is never judged here: its lease ends by the store's clock.

use storage::queue::Holder;

/// Where the host's boot id is (read only).
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// This process as a lease holder.
pub fn this_process() -> std::io::Result<Holder> {
    let pid = std::process::id();
    Ok(Holder {
        host: host_id()?,
        boot: boot_id()?,
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
    let (Ok(host), Ok(boot)) = (host_id(), boot_id()) else {
        return false;
    };
    if holder.host != host {
        return false;
    }
    if holder.boot != boot {
        // This host booted again since: every process of the earlier boot is gone.
        return true;
    }
    match process_start(holder.pid) {
        Ok(Some(start)) => start != holder.process_start,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// The machine's id (`/etc/machine-id`), or its host name where it has none.
fn host_id() -> std::io::Result<String> {
    match std::fs::read_to_string("/etc/machine-id") {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        _ => Ok(rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()),
    }
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
        let earlier_boot = Holder {
            boot: "an-earlier-boot".into(),
            ..me.clone()
        };
        assert!(dead_here(&earlier_boot));
        let elsewhere = Holder {
            host: "another-host".into(),
            pid,
            ..me
        };
        assert!(!dead_here(&elsewhere), "never judged from another host");
    }
}
