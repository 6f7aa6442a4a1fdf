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

use crate::Error;
use crate::path::RelPath;
use crate::protected::is_protected;
use crate::revision::Change;

/// Applies `changes` to the folder at `root`. Protected paths are refused, nothing written.
pub fn apply_to_folder(root: &Path, changes: &[(RelPath, Change)]) -> Result<(), Error> {
    for (path, _) in changes {
        if let Some(kind) = is_protected(path) {
            return Err(Error::Protected {
                path: path.to_string(),
                kind,
            });
        }
    }
    fs::create_dir_all(root).map_err(|source| io("create", root, source))?;
    for (path, change) in changes {
        let target = checked_target(root, path)?;
        match change {
            Change::Write(bytes) => write_file(&target, bytes)?,
            Change::Delete => match fs::remove_file(&target) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(io("remove", &target, source)),
            },
        }
    }
    Ok(())
}

/// The file's place under `root`, creating its folders; refuses any symbolic link on the way.
fn checked_target(root: &Path, path: &RelPath) -> Result<PathBuf, Error> {
    let components: Vec<&str> = path.components().collect();
    let mut current = root.to_path_buf();
    for (index, component) in components.iter().enumerate() {
        current.push(component);
        let is_last = index + 1 == components.len();
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(io(
                    "refuse a symbolic link at",
                    &current,
                    std::io::Error::other("a link inside the workspace is never followed"),
                ));
            }
            Ok(meta) if !is_last && !meta.is_dir() => {
                return Err(io(
                    "use as a folder",
                    &current,
                    std::io::Error::other("it is a file"),
                ));
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if !is_last {
                    fs::create_dir(&current).map_err(|source| io("create", &current, source))?;
                }
            }
            Err(source) => return Err(io("inspect", &current, source)),
        }
    }
    Ok(current)
}

fn write_file(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    let file_name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = target.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    let mut file =
        fs::File::create_new(&temporary).map_err(|source| io("create", &temporary, source))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|source| io("write", &temporary, source))?;
    fs::rename(&temporary, target).map_err(|source| io("rename into place", target, source))
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
        assert!(result.is_err());
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
