//! The filesystem the sandboxes' scratch folders live on: a small tmpfs the backend mounts over
//! `STATE/scratch` when it starts (issue 13). Each sandbox makes a folder and its `work` mount
//! point there and removes them in its teardown; on the data directory's own filesystem (ext4
//! here) that cost a journalled 125 µs to make and 170 µs to remove, against 13 µs and 7 µs
//! on a tmpfs, measured in the same run. It holds directories only (every `/work` is a tmpfs of
//! its own, mounted on its mount point), so its inode cap is two per slot: a sandbox holds its
//! slot for as long as its folder exists.
//!
//! Where the state directory already is on a tmpfs nothing is mounted. The backend that mounted
//! it unmounts it when it goes, after every sandbox is gone; the start-up sweep unmounts one a
//! crashed platform left. The scratch folder is the platform's own (root's, 0711): nothing
//! else mounts there.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::Error;

/// The scratch tmpfs, when this backend mounted it.
#[derive(Debug)]
pub(crate) struct ScratchFs {
    mounted: Option<PathBuf>,
}

impl ScratchFs {
    /// Mounts the tmpfs over `dir` (an existing, empty directory) unless `dir` already is on a
    /// tmpfs.
    pub(crate) fn mount(dir: &Path, slots: u32) -> Result<Self, Error> {
        if on_tmpfs(dir)? {
            return Ok(Self { mounted: None });
        }
        use rustix::mount::{MountFlags, mount};
        let inodes = u64::from(slots) * 2 + 16;
        let options = std::ffi::CString::new(format!("size=1m,nr_inodes={inodes},mode=0711"))
            .map_err(|_| Error::LayerFailed {
                layer: String::from("scratch folders"),
                detail: String::from("the tmpfs options contain a NUL byte"),
            })?;
        mount(
            "tmpfs",
            dir,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            Some(options.as_c_str()),
        )
        .map_err(|errno| Error::LayerFailed {
            layer: String::from("scratch folders"),
            detail: format!("cannot mount a tmpfs at {}: {errno}", dir.display()),
        })?;
        Ok(Self {
            mounted: Some(dir.to_path_buf()),
        })
    }
}

impl Drop for ScratchFs {
    /// Unmounts the tmpfs this backend mounted. Not lazily: a folder still mounted in it (a
    /// sandbox that was not torn down) keeps it, and everything in it, where the sweep finds
    /// it.
    fn drop(&mut self) {
        if let Some(dir) = self.mounted.take() {
            let _ = rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::empty());
        }
    }
}

/// Unmounts a scratch tmpfs a crashed platform left over `dir` (the sweep, after it removed the
/// folders in it). A `dir` that is no mount point of its own is left alone.
pub(crate) fn unmount_leftover(dir: &Path) -> Result<(), Error> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let (Ok(own), Ok(above)) = (std::fs::metadata(dir), std::fs::metadata(parent)) else {
        return Ok(());
    };
    if own.dev() == above.dev() || !on_tmpfs(dir)? {
        return Ok(());
    }
    rustix::mount::unmount(dir, rustix::mount::UnmountFlags::empty()).map_err(|errno| {
        Error::LayerFailed {
            layer: String::from("scratch folders"),
            detail: format!(
                "cannot unmount the scratch tmpfs a crashed platform left at {}: {errno}",
                dir.display()
            ),
        }
    })
}

fn on_tmpfs(dir: &Path) -> Result<bool, Error> {
    let facts = rustix::fs::statfs(dir).map_err(|errno| {
        Error::io(
            "cannot inspect the filesystem of",
            dir,
            std::io::Error::from(errno),
        )
    })?;
    Ok(facts.f_type == libc::TMPFS_MAGIC)
}
