//! Sandbox slots: a small number that is distinct for every sandbox alive at the same time on
//! this host. The local backend maps slot N to host uid/gid `uid_base + N`, and the egress
//! network derives its addresses from it, so two concurrent sandboxes never share an identity.
//!
//! A slot is held by an exclusive `flock` on `DIR/N.lock`; the lock dies with the process, so a
//! crashed platform never leaks a slot for longer than its own life. A released slot keeps its
//! lock file: creating and removing one per sandbox cost a journalled create and unlink on the
//! sandbox state folder's filesystem (about 30 µs on the step's path, more in the teardown).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::Error;

/// Hands out slots `0..count` under one directory.
#[derive(Debug, Clone)]
pub struct SlotAllocator {
    dir: PathBuf,
    count: u32,
}

/// One held slot; released (unlocked, its lock file kept for the next holder) on drop.
#[derive(Debug)]
pub struct Slot {
    index: u32,
    path: PathBuf,
    // Holding the open file holds the lock.
    _file: File,
}

impl SlotAllocator {
    /// An allocator over `dir` (created if missing, and made root's alone: a lock file anyone
    /// can open is a lock anyone can take, since `flock` needs no write access) with `count`
    /// slots.
    pub fn new(dir: &Path, count: u32) -> Result<Self, Error> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).map_err(|source| Error::io("cannot create", dir, source))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| Error::io("cannot chmod", dir, source))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            count,
        })
    }

    /// The directory holding the lock files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the lowest free slot.
    pub fn acquire(&self) -> Result<Slot, Error> {
        for index in 0..self.count {
            if let Some(slot) = self.try_acquire(index)? {
                return Ok(slot);
            }
        }
        Err(Error::SlotsExhausted {
            dir: self.dir.clone(),
            count: self.count,
        })
    }

    fn try_acquire(&self, index: u32) -> Result<Option<Slot>, Error> {
        let path = self.dir.join(format!("{index}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| Error::io("cannot open the slot lock", &path, source))?;
        if !try_lock_exclusive(&file) {
            return Ok(None);
        }
        // Another holder may have released and removed this file between our open and our
        // lock; then we locked an orphaned inode and the slot is not really ours.
        let held = file
            .metadata()
            .map_err(|source| Error::io("cannot stat the slot lock", &path, source))?;
        match std::fs::metadata(&path) {
            Ok(current) if current.ino() == held.ino() && current.dev() == held.dev() => {
                Ok(Some(Slot {
                    index,
                    path,
                    _file: file,
                }))
            }
            Ok(_) => Ok(None),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::io("cannot stat the slot lock", &path, source)),
        }
    }

    /// Removes lock files nobody holds (left by a crash). Called by the start-up sweep, before
    /// any sandbox of this platform exists.
    /// Only the lock files that exist are looked at (one listing, not a probe per slot).
    pub fn sweep(&self) -> Result<(), Error> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|source| Error::io("cannot list", &self.dir, source))?;
        let mut indices: Vec<u32> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let index: u32 = name.to_str()?.strip_suffix(".lock")?.parse().ok()?;
                (index < self.count).then_some(index)
            })
            .collect();
        indices.sort_unstable();
        for index in indices {
            if let Some(slot) = self.try_acquire(index)? {
                // Removed while still locked, so a newcomer either sees no file or a new inode.
                let _ = std::fs::remove_file(&slot.path);
            }
        }
        Ok(())
    }
}

impl Slot {
    /// The slot's number, `0..count`.
    pub fn index(&self) -> u32 {
        self.index
    }
}

fn try_lock_exclusive(file: &File) -> bool {
    // SAFETY: flock on a file descriptor we own; no memory is passed.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    result == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review: a lock file others can open is a lock others can take (flock needs no write
    /// access), and a kept file can be held forever: a local user could take every slot.
    #[test]
    fn g6_only_root_reaches_the_slot_locks() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("slots");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let allocator = SlotAllocator::new(&dir, 2).unwrap();
        let slot = allocator.acquire().unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "the slots folder");
        assert_eq!(mode(&slot.path), 0o600, "a lock file");
    }

    #[test]
    fn g6_a_released_slot_keeps_its_lock_file_for_the_next_holder() {
        let dir = tempfile::tempdir().unwrap();
        let allocator = SlotAllocator::new(dir.path(), 2).unwrap();
        let first = allocator.acquire().unwrap();
        let inode = std::fs::metadata(&first.path).unwrap().ino();
        drop(first);
        let again = allocator.acquire().unwrap();
        assert_eq!(again.index(), 0);
        assert_eq!(std::fs::metadata(&again.path).unwrap().ino(), inode);
        // The start-up sweep removes only lock files nobody holds.
        let other = dir.path().join("1.lock");
        std::fs::write(&other, b"").unwrap();
        allocator.sweep().unwrap();
        assert!(!other.exists());
        assert!(again.path.exists());
        assert!(allocator.acquire().is_ok_and(|slot| slot.index() == 1));
    }

    #[test]
    fn g6_concurrent_slots_are_distinct_and_released() {
        let dir = tempfile::tempdir().unwrap();
        let allocator = SlotAllocator::new(dir.path(), 3).unwrap();
        let first = allocator.acquire().unwrap();
        let second = allocator.acquire().unwrap();
        assert_ne!(first.index(), second.index());
        let third = allocator.acquire().unwrap();
        assert!(matches!(
            allocator.acquire(),
            Err(Error::SlotsExhausted { count: 3, .. })
        ));
        drop(second);
        let again = allocator.acquire().unwrap();
        assert_ne!(again.index(), first.index());
        assert_ne!(again.index(), third.index());
    }
}
