//! Whether an interpreter may be run on the host. Discovery runs every candidate as the
//! platform's user (root, for sandboxes) to ask it for its facts, binds it into every sandbox,
//! and `stepward check` runs it to read a workflow's code. So only a file that nobody but root
//! can have put there or changed is run: a regular file owned by root that neither its group
//! nor others may write, in folders owned by root that neither group nor others may write
//! (a sticky folder such as `/tmp` counts as closed: others cannot rename or remove what root
//! put in it). A Debian `/usr/local/bin` of `root:staff 2775`, say, is refused: anyone in
//! `staff` could put a `python3.12` there.

use std::collections::BTreeSet;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::runtime::cache::{fstat, open_path};

/// The canonical path of `candidate` when it may be run, else why not, naming the file or
/// folder at fault and what would make it acceptable. Run the returned path, never
/// `candidate`: a link on the way is judged once, here.
///
/// Besides the file and the folders above it, every folder on the way as `candidate` names
/// it is checked (each resolved): a link there, `/usr/local/bin/python3.13 ->
/// /usr/bin/python3.11` say, could otherwise be swapped by whoever may write its folder,
/// between this check and the run, or pointed at another root-owned program.
pub fn trusted_interpreter(candidate: &Path) -> Result<PathBuf, String> {
    let canonical = candidate
        .canonicalize()
        .map_err(|error| format!("{}: {error}", candidate.display()))?;
    let stat = closed_source(&canonical)?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(format!("{} is not a regular file", canonical.display()));
    }
    // The folders on the way that `closed_source` did not see: where a link on the way
    // leads elsewhere, the folders of its side of the path, each checked once.
    let mut on_the_way = BTreeSet::new();
    for folder in candidate.ancestors().skip(1) {
        if folder.as_os_str().is_empty() {
            continue;
        }
        let resolved = folder
            .canonicalize()
            .map_err(|error| format!("{}: {error}", folder.display()))?;
        on_the_way.extend(
            resolved
                .ancestors()
                .filter(|above| !canonical.starts_with(above))
                .map(Path::to_path_buf),
        );
    }
    for folder in &on_the_way {
        closed_folder(folder)
            .map_err(|reason| format!("{reason} (on the way to {})", candidate.display()))?;
    }
    Ok(canonical)
}

/// A canonical source of a sandbox's runtime view (a library, the loader, the standard
/// library's folder) passes the same rule as the interpreter: a root-owned regular file or
/// folder that neither group nor others may write, in folders that are closed too. Whatever
/// is bound into every sandbox could otherwise be replaced by someone but root, and then run
/// in every tenant's steps. Returns what `fstat` said of `path`.
pub(crate) fn closed_source(path: &Path) -> Result<libc::stat, String> {
    let stat = lstat_no_follow(path)?;
    let kind = match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG => "file",
        libc::S_IFDIR => "folder",
        _ => return Err(format!("{} is neither a file nor a folder", path.display())),
    };
    closed_to_others(path, &stat, kind)?;
    for folder in path.ancestors().skip(1) {
        closed_folder(folder)?;
    }
    Ok(stat)
}

/// `folder` (canonical) is a folder, root's and closed to group and others, or a root-owned
/// sticky folder.
fn closed_folder(folder: &Path) -> Result<(), String> {
    let stat = lstat_no_follow(folder)?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(format!("{} is not a folder", folder.display()));
    }
    if stat.st_mode & libc::S_ISVTX as libc::mode_t != 0 && stat.st_uid == 0 {
        return Ok(());
    }
    closed_to_others(folder, &stat, "folder")
}

fn closed_to_others(path: &Path, stat: &libc::stat, what: &str) -> Result<(), String> {
    if stat.st_uid != 0 {
        return Err(format!(
            "the {what} {} belongs to uid {}, not root: an interpreter stepward runs must be \
             replaceable by root alone (give it to root, or install Python where only root \
             writes)",
            path.display(),
            stat.st_uid
        ));
    }
    if stat.st_mode & 0o022 != 0 {
        return Err(format!(
            "the {what} {} may be written by {} (mode {:o}): an interpreter stepward runs \
             must be replaceable by root alone (chmod go-w it)",
            path.display(),
            if stat.st_mode & 0o002 != 0 {
                String::from("anyone")
            } else {
                format!("group {}", group_name(stat.st_gid))
            },
            stat.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// `staff (50)` from the host's group table, or the number alone.
fn group_name(gid: libc::gid_t) -> String {
    std::fs::read_to_string("/etc/group")
        .ok()
        .and_then(|table| {
            table.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)?.parse::<libc::gid_t>().ok()? == gid)
                    .then(|| format!("{name} ({gid})"))
            })
        })
        .unwrap_or_else(|| gid.to_string())
}

/// FUSE's `f_type`: a FUSE server decides what owner and mode it reports.
const FUSE_SUPER_MAGIC: libc::c_long = 0x6573_5546;

/// The node at `path` itself (a final link is not followed), by `fstat` on what was opened.
/// A node on a FUSE filesystem is refused: its owner and mode are whatever the FUSE server
/// (possibly an unprivileged user's, with `allow_other`) says.
fn lstat_no_follow(path: &Path) -> Result<libc::stat, String> {
    let fd = open_path(path, libc::O_PATH | libc::O_NOFOLLOW)?;
    let stat = fstat(&fd, path)?;
    // SAFETY: an all-zero statfs is a valid value for fstatfs to overwrite.
    let mut filesystem: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs on a descriptor we own, into a local.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut filesystem) } == -1 {
        return Err(format!(
            "{}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    if filesystem.f_type as libc::c_long == FUSE_SUPER_MAGIC {
        return Err(format!(
            "{} is on a FUSE filesystem, whose server says who owns it: install Python on a \
             local filesystem",
            path.display()
        ));
    }
    Ok(stat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, chown};

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A root-owned folder (0755) under /tmp with a root-owned executable (0755) in it.
    fn planted() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        set_mode(dir.path(), 0o755);
        let file = dir.path().join("python3.99");
        std::fs::write(&file, b"#!/bin/false\n").unwrap();
        set_mode(&file, 0o755);
        (dir, file)
    }

    #[test]
    fn g8_the_systems_python_is_trusted() {
        let python = Path::new("/usr/bin/python3");
        if python.exists() {
            assert!(trusted_interpreter(python).is_ok());
        }
    }

    #[test]
    fn g8_an_interpreter_in_a_group_writable_folder_is_refused_needs_root() {
        if not_root() {
            return;
        }
        let (dir, file) = planted();
        assert!(
            trusted_interpreter(&file).is_ok(),
            "root's own file, closed folders"
        );
        set_mode(dir.path(), 0o2775);
        let refused = trusted_interpreter(&file).unwrap_err();
        assert!(
            refused.contains("may be written by group root (0)"),
            "{refused}"
        );
        assert!(
            refused.contains(&dir.path().display().to_string()),
            "{refused}"
        );
    }

    #[test]
    fn g8_an_interpreter_others_may_write_or_another_user_owns_is_refused_needs_root() {
        if not_root() {
            return;
        }
        let (_dir, file) = planted();
        set_mode(&file, 0o757);
        let refused = trusted_interpreter(&file).unwrap_err();
        assert!(refused.contains("may be written by anyone"), "{refused}");
        set_mode(&file, 0o755);
        chown(&file, Some(65534), None).unwrap();
        let refused = trusted_interpreter(&file).unwrap_err();
        assert!(refused.contains("belongs to uid 65534"), "{refused}");
    }

    #[test]
    fn g8_a_link_to_an_untrusted_interpreter_is_judged_by_its_target_needs_root() {
        if not_root() {
            return;
        }
        let (dir, file) = planted();
        let closed = tempfile::tempdir().unwrap();
        set_mode(closed.path(), 0o755);
        let link = closed.path().join("python3");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(trusted_interpreter(&link).unwrap(), file);
        set_mode(dir.path(), 0o777);
        assert!(trusted_interpreter(&link).is_err());
    }

    /// A link to root's own interpreter in a folder others may write: they could swap it
    /// after the check, or point it at another program.
    #[test]
    fn g8_a_link_in_a_folder_others_may_write_is_refused_needs_root() {
        if not_root() {
            return;
        }
        let (_dir, file) = planted();
        let open = tempfile::tempdir().unwrap();
        set_mode(open.path(), 0o2775);
        let link = open.path().join("python3.99");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let refused = trusted_interpreter(&link).unwrap_err();
        assert!(
            refused.contains("may be written by group") && refused.contains("on the way to"),
            "{refused}"
        );
    }

    /// These tests plant root-owned files; as another user they have nothing to show.
    fn not_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("Uid:"))
                    .map(|ids| ids.split_whitespace().nth(1) != Some("0"))
            })
            .unwrap_or(true)
    }
}
