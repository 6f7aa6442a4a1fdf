//! The data directory's engine lock: held by the one process whose workers run the data
//! directory's steps (its sandboxes, its cgroup parent and the start-up sweep are that
//! process's). Since issue 38 runs are driven through the run queue: a command that finds the
//! lock held records its decision and follows the run while the holder's workers run it; the
//! lock is taken at once after its holder dies (a released `flock`), and the leases of a
//! holder proven dead are reaped at once by the next one.
//!
//! The holder names itself in the lock file (its pid, and for `stepward serve` the address it
//! serves), so that a command refused beside it (`stepward worker` beside a server with
//! workers, `keys rotate-links` beside a server) can say who holds the data directory. What
//! the file says is only ever printed, after checks that keep it to a pid and a plain URL;
//! the lock itself is the kernel's (`flock`), held until the holder exits.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Held while a process drives runs of a data directory; released when dropped.
pub struct EngineLock {
    file: File,
}

/// Who holds a data directory's engine lock, as its lock file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) pid: u32,
    /// The address `stepward serve` prints its links with, when the holder is a server.
    pub(crate) serving: Option<String>,
    /// Whether the holder is a `stepward worker`.
    pub(crate) worker: bool,
}

/// Why a command could not take the engine lock: another live process holds it.
#[derive(Debug)]
pub(crate) struct LockHeld {
    path: PathBuf,
    holder: Option<Holder>,
}

/// The longest lock file read back; anything longer is not one this program wrote.
const MAX_LOCK_FILE_BYTES: u64 = 1024;

impl EngineLock {
    /// The lock of the data directory `data_dir` (its `engine.lock`).
    pub(crate) fn of_data_dir(data_dir: &Path) -> anyhow::Result<EngineLock> {
        EngineLock::take(data_dir.join("engine.lock"))
    }

    fn take(path: PathBuf) -> anyhow::Result<EngineLock> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {
                let lock = EngineLock { file };
                // The name is advice for whoever is refused; a lock whose file cannot be
                // written is still the lock.
                let _ = lock.name(&Holder {
                    pid: std::process::id(),
                    serving: None,
                    worker: false,
                });
                Ok(lock)
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = Holder::read(&file);
                Err(anyhow::Error::new(LockHeld { path, holder }))
            }
            Err(std::fs::TryLockError::Error(error)) => {
                Err(error).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }

    /// Names this process in the lock file as the server serving at `url`.
    pub(crate) fn name_server(&self, url: &str) -> anyhow::Result<()> {
        self.name(&Holder {
            pid: std::process::id(),
            serving: Some(url.to_owned()),
            worker: false,
        })
        .context("cannot name the server in the engine lock file")
    }

    /// Names this process in the lock file as a `stepward worker`.
    pub(crate) fn name_worker(&self) -> anyhow::Result<()> {
        self.name(&Holder {
            pid: std::process::id(),
            serving: None,
            worker: true,
        })
        .context("cannot name the worker in the engine lock file")
    }

    /// Writes first and cuts after, so a refused reader never finds the file empty or cut
    /// short. In the moment between the two it may read the new pid above an earlier, longer
    /// name's last line: the name is advice printed on a refusal, never what the lock is.
    fn name(&self, holder: &Holder) -> std::io::Result<()> {
        let text = holder.to_text();
        self.file.write_all_at(text.as_bytes(), 0)?;
        self.file.set_len(text.len() as u64)
    }
}

impl Holder {
    fn to_text(&self) -> String {
        let mut text = format!("pid {}\n", self.pid);
        if let Some(url) = &self.serving {
            text.push_str(&format!("serve {url}\n"));
        } else if self.worker {
            text.push_str("worker\n");
        }
        text
    }

    /// What the lock file says, if it is what a holder writes: a positive pid, and a URL of
    /// plain printable characters (no control character reaches a terminal from here).
    fn read(file: &File) -> Option<Holder> {
        let mut text = String::new();
        file.take(MAX_LOCK_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .ok()?;
        Holder::parse(&text)
    }

    fn parse(text: &str) -> Option<Holder> {
        if text.len() as u64 > MAX_LOCK_FILE_BYTES {
            return None;
        }
        let mut lines = text.lines();
        let pid = lines
            .next()?
            .strip_prefix("pid ")?
            .parse::<u32>()
            .ok()
            .filter(|pid| *pid > 0)?;
        let (serving, worker) = match lines.next() {
            None => (None, false),
            Some("worker") => (None, true),
            Some(line) => {
                let url = line.strip_prefix("serve ")?;
                let plain = url.bytes().all(|byte| byte.is_ascii_graphic());
                if !plain || !(url.starts_with("http://") || url.starts_with("https://")) {
                    return None;
                }
                (Some(url.to_owned()), false)
            }
        };
        if lines.next().is_some() {
            return None;
        }
        Some(Holder {
            pid,
            serving,
            worker,
        })
    }
}

impl LockHeld {
    /// The holder's pid, as its lock file names it.
    pub(crate) fn holder_pid(&self) -> Option<u32> {
        self.holder.as_ref().map(|holder| holder.pid)
    }

    /// Whether the holder runs the data directory's steps for every run (a server with
    /// workers, a `stepward worker`): a command then only follows its run. Another holder (a
    /// command driving its own run) runs only its own.
    pub(crate) fn runs_workers(&self) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|holder| holder.serving.is_some() || holder.worker)
    }
}

impl fmt::Display for LockHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.holder {
            Some(Holder {
                pid,
                serving: Some(url),
                ..
            }) => write!(
                f,
                "`stepward serve` (pid {pid}) runs the steps of this data directory (it holds \
                 {}), and only one process may: use its console at {url}/runs or its API at \
                 {url}/api, or stop the server first",
                self.path.display()
            ),
            Some(Holder {
                pid, worker: true, ..
            }) => write!(
                f,
                "`stepward worker` (pid {pid}) runs the steps of this data directory (it holds \
                 {}), and only one process may: stop it first",
                self.path.display()
            ),
            Some(Holder { pid, .. }) => write!(
                f,
                "another stepward process (pid {pid}) is driving runs of this data directory \
                 (it holds {}); wait for it to finish",
                self.path.display()
            ),
            None => write!(
                f,
                "another stepward process is driving runs of this data directory (it holds \
                 {}); wait for it to finish",
                self.path.display()
            ),
        }
    }
}

impl std::error::Error for LockHeld {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_is_read_back_as_written() {
        for holder in [
            Holder {
                pid: 42,
                serving: None,
                worker: false,
            },
            Holder {
                pid: 7,
                serving: Some("https://stepward.example.test:8443".to_owned()),
                worker: false,
            },
            Holder {
                pid: 9,
                serving: None,
                worker: true,
            },
        ] {
            assert_eq!(Holder::parse(&holder.to_text()), Some(holder));
        }
    }

    #[test]
    fn a_lock_file_that_is_not_what_a_holder_writes_names_nobody() {
        for text in [
            "",
            "pid 0\n",
            "pid -1\n",
            "pid 12 extra\n",
            "pid 12\nserve ftp://host\n",
            "pid 12\nserve http://host/\u{1b}[2J\n",
            "pid 12\nserve http://a b\n",
            "pid 12\nserve http://host\nmore\n",
            "pid 12\nlisten http://host\n",
        ] {
            assert_eq!(Holder::parse(text), None, "{text:?}");
        }
        let long = format!("pid 12\nserve http://{}\n", "a".repeat(2000));
        assert_eq!(Holder::parse(&long), None);
    }

    #[test]
    fn a_second_taker_is_told_who_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let first = EngineLock::of_data_dir(dir.path()).unwrap();
        let refused = EngineLock::of_data_dir(dir.path()).err().unwrap();
        let said = refused.to_string();
        assert!(
            said.contains(&format!("(pid {})", std::process::id())),
            "{said}"
        );
        assert!(said.contains("wait for it to finish"), "{said}");
        // A command driving its own run runs no one else's: beside it, a command waits.
        let held =
            |refused: &anyhow::Error| refused.downcast_ref::<LockHeld>().unwrap().runs_workers();
        assert!(!held(&refused));
        first.name_worker().unwrap();
        let refused = EngineLock::of_data_dir(dir.path()).err().unwrap();
        assert!(
            held(&refused),
            "a worker runs every run's steps: a command follows"
        );
        assert!(
            refused.to_string().contains("`stepward worker`"),
            "{refused}"
        );
        first.name_server("http://127.0.0.1:8080").unwrap();
        let refused = EngineLock::of_data_dir(dir.path()).err().unwrap();
        assert!(
            refused
                .to_string()
                .contains("its console at http://127.0.0.1:8080/runs"),
            "{refused}"
        );
        assert!(held(&refused), "a server's worker runs every run's steps");
        drop(first);
        // Released: the next taker gets it and names itself.
        let again = EngineLock::of_data_dir(dir.path()).unwrap();
        drop(again);
    }
}
