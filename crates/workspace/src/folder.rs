//! Bringing a working folder up to date with a revision's changes.
//!
//! The revision store is the history; the working folder is what the next step's sandbox is
//! staged from. Paths are already confined ([`RelPath`]), and no component of the way to a file
//! may be a symbolic link, so a link planted in the folder cannot redirect a write outside it.
//! Each file is written beside its target and renamed over it, so a reader never sees half a
//! file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::Error;
use crate::path::RelPath;
use crate::protected::is_protected;
use crate::revision::Change;

/// Applies `changes` to the folder at `root`: [`stage`], then [`Staged::finish`]. Refused,
/// writing nothing, when a path is protected or does not fit the folder's layout.
pub fn apply_to_folder(root: &Path, changes: &[(RelPath, Change)]) -> Result<(), Error> {
    stage(root, changes)?.finish()
}

/// Changes checked against the folder, each new content already written beside its target:
/// only renames and removals are left, which do not fail for a layout reason. Dropped without
/// [`Staged::finish`], the temporary files are removed and the folder is as it was.
pub(crate) struct Staged {
    renames: Vec<(PathBuf, PathBuf)>,
    removals: Vec<PathBuf>,
}

/// Checks every change against the folder (protected entries, links, a file where a folder is
/// needed or the other way round, a path inside another path of the same revision) and writes
/// every new content to a temporary file beside its target. Nothing visible changes.
pub(crate) fn stage(root: &Path, changes: &[(RelPath, Change)]) -> Result<Staged, Error> {
    for (path, _) in changes {
        if let Some(kind) = is_protected(path) {
            return Err(Error::Protected {
                path: path.to_string(),
                kind,
            });
        }
        let nested = changes.iter().find(|(other, _)| {
            other
                .as_str()
                .strip_prefix(path.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        });
        if let Some((inner, _)) = nested {
            return Err(Error::PathConflict {
                path: inner.to_string(),
                reason: format!("{path} is a file of the same revision, so it holds no files"),
            });
        }
    }
    // Every change is fitted before any folder is made, so a refused revision leaves nothing.
    for (path, change) in changes {
        checked_target(root, path, Folders::Leave)?;
        let is_file =
            fs::symlink_metadata(root.join(path.as_path())).is_ok_and(|meta| meta.is_file());
        if matches!(change, Change::Delete) && !is_file {
            return Err(Error::NoSuchFile {
                path: path.to_string(),
            });
        }
    }
    fs::create_dir_all(root).map_err(|source| io("create", root, source))?;
    let mut staged = Staged {
        renames: Vec::new(),
        removals: Vec::new(),
    };
    for (path, change) in changes {
        let target = checked_target(root, path, Folders::Create)?;
        match change {
            Change::Write(bytes) => {
                let temporary = write_temporary(&target, bytes)?;
                staged.renames.push((temporary, target));
            }
            Change::Delete => staged.removals.push(target),
        }
    }
    Ok(staged)
}

impl Staged {
    /// Moves every new content into place and removes every deleted file.
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        for (temporary, target) in std::mem::take(&mut self.renames) {
            if let Err(source) = fs::rename(&temporary, &target) {
                let _ = fs::remove_file(&temporary);
                return Err(io("rename into place", &target, source));
            }
        }
        for target in std::mem::take(&mut self.removals) {
            match fs::remove_file(&target) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(io("remove", &target, source)),
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (temporary, _) in &self.renames {
            let _ = fs::remove_file(temporary);
        }
    }
}

/// Whether [`checked_target`] makes the missing folders on the way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Folders {
    Leave,
    Create,
}

/// The file's place under `root` (making its missing folders when asked); refuses any symbolic
/// link on the way, a file where a folder is needed, and a folder where the file goes.
fn checked_target(root: &Path, path: &RelPath, folders: Folders) -> Result<PathBuf, Error> {
    let components: Vec<&str> = path.components().collect();
    let mut current = root.to_path_buf();
    let conflict = |reason: String| Error::PathConflict {
        path: path.to_string(),
        reason,
    };
    for (index, component) in components.iter().enumerate() {
        current.push(component);
        let is_last = index + 1 == components.len();
        let so_far = components[..=index].join("/");
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(conflict(format!(
                    "{so_far} is a link, and a link inside the workspace is never followed"
                )));
            }
            Ok(meta) if !is_last && !meta.is_dir() => {
                return Err(conflict(format!("{so_far} is a file, not a folder")));
            }
            Ok(meta) if is_last && meta.is_dir() => {
                return Err(conflict(format!("{so_far} is a folder, not a file")));
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if folders == Folders::Leave {
                    // Nothing further down exists either.
                    break;
                }
                if !is_last {
                    fs::create_dir(&current).map_err(|source| io("create", &current, source))?;
                }
            }
            Err(source) => return Err(io("inspect", &current, source)),
        }
    }
    Ok(current)
}

/// Writes `bytes` to a new file beside `target`, under a short name of its own (never derived
/// from the target's name, which may be as long as a name can be), and syncs it.
fn write_temporary(target: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    let folder = target.parent().unwrap_or(target);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    for attempt in 0_u32..16 {
        let seed = format!(
            "{}:{}:{nanos}:{attempt}",
            std::process::id(),
            target.display()
        );
        let name = format!(
            ".sw-{}.tmp",
            &hex::encode(Sha256::digest(seed.as_bytes()))[..16]
        );
        let temporary = folder.join(name);
        let mut file = match fs::File::create_new(&temporary) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(io("create", &temporary, source)),
        };
        if let Err(source) = file.write_all(bytes).and_then(|()| file.sync_all()) {
            let _ = fs::remove_file(&temporary);
            return Err(io("write", &temporary, source));
        }
        return Ok(temporary);
    }
    Err(io(
        "create a temporary file in",
        folder,
        std::io::Error::other("every temporary name tried exists"),
    ))
}

fn io(operation: &'static str, path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        operation,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(path: &str) -> RelPath {
        RelPath::parse(path).unwrap()
    }

    #[test]
    fn g25_changes_reach_the_working_folder() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("old.txt"), b"old").unwrap();
        apply_to_folder(
            root.path(),
            &[
                (rel("reports/2026-11.txt"), Change::Write(b"total".to_vec())),
                (rel("old.txt"), Change::Delete),
            ],
        )
        .unwrap();
        assert_eq!(
            fs::read(root.path().join("reports/2026-11.txt")).unwrap(),
            b"total"
        );
        assert!(!root.path().join("old.txt").exists());
    }

    #[test]
    fn g22_a_link_in_the_folder_never_redirects_a_write() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("reports")).unwrap();
        let result = apply_to_folder(
            root.path(),
            &[(rel("reports/x.txt"), Change::Write(b"x".to_vec()))],
        );
        assert!(matches!(result, Err(Error::PathConflict { .. })));
        assert!(!outside.path().join("x.txt").exists());
    }

    #[test]
    fn g22_protected_paths_are_refused_before_anything_is_written() {
        let root = tempfile::tempdir().unwrap();
        let result = apply_to_folder(
            root.path(),
            &[
                (rel("a.txt"), Change::Write(b"a".to_vec())),
                (rel(".secrets"), Change::Write(b"s".to_vec())),
            ],
        );
        assert!(matches!(result, Err(Error::Protected { .. })));
        assert!(!root.path().join("a.txt").exists());
    }
}
