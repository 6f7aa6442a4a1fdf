//! The kept folder (`LocalOptions::kept_dir`): what every sandbox shares and no account ever
//! holds, kept between processes. It says what every sandbox runs (the harness's bytecode) and
//! which host files it sees (the runtimes' linked views), so it is used only when nobody but
//! root can have changed it: the folder and its parent are directories (not links), root's,
//! and writable by neither group nor others. A process holds the folder's lock (`flock` on
//! `.lock`, mode 0600) while it writes or checks what is kept, so two starting processes never
//! build the same entry at once; entries are checked again at every start (the harness by its
//! digest and the interpreter's identity, a view by the inode of each file it links).

use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The folder's lock, held while this process prepares what is kept; released when dropped.
pub(crate) struct KeptLock {
    _file: std::fs::File,
}

/// Makes `dir` (0711, root's) when it is missing, checks it and its parent, and takes its lock.
/// `Err` says why it cannot be trusted; nothing in it is used then.
pub(crate) fn prepare(dir: &Path) -> Result<KeptLock, String> {
    if !dir.is_absolute() {
        return Err(format!("{} is not an absolute path", dir.display()));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    for each in [Some(dir), dir.parent()].into_iter().flatten() {
        closed_to_others(each)?;
    }
    // A sandbox's id binds from it: every folder above must let others through.
    for ancestor in dir.ancestors() {
        let mode = std::fs::metadata(ancestor)
            .map_err(|error| format!("cannot inspect {}: {error}", ancestor.display()))?
            .mode();
        if mode & 0o001 == 0 {
            return Err(format!(
                "{} cannot be passed through by the sandboxes' ids (mode {:o}): give the \
                 folder a place every user may pass through",
                ancestor.display(),
                mode & 0o7777
            ));
        }
    }
    let lock_path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&lock_path)
        .map_err(|error| format!("cannot open {}: {error}", lock_path.display()))?;
    // SAFETY: flock on a file descriptor we own; no memory is passed.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    if locked != 0 {
        return Err(format!(
            "cannot lock {}: {}",
            lock_path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(KeptLock { _file: file })
}

/// A directory, not a link, owned by root (or by this process's user, which is root where
/// sandboxes run), that neither group nor others may write.
fn closed_to_others(path: &Path) -> Result<(), String> {
    let metadata = std::fs::symlink_metadata(path)
        .map_err(|error| format!("cannot inspect {}: {error}", path.display()))?;
    if !metadata.file_type().is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if metadata.uid() != 0 && metadata.uid() != me {
        return Err(format!(
            "{} belongs to uid {}, not root",
            path.display(),
            metadata.uid()
        ));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is writable by its group or by others (mode {:o})",
            path.display(),
            metadata.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_folder_others_may_write_is_not_kept() {
        let parent = tempfile::tempdir().unwrap();
        let kept = parent.path().join("kept");
        prepare(&kept).expect("a fresh folder is made closed");
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = prepare(&kept).err().expect("refused");
        assert!(
            refused.contains("writable by its group or by others"),
            "{refused}"
        );
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o711)).unwrap();
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o773)).unwrap();
        assert!(prepare(&kept).is_err(), "its parent is checked too");
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&kept, &link).unwrap();
        assert!(prepare(&link).is_err(), "a link is not the folder");
    }
}
