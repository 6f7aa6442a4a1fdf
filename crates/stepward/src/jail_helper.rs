//! Which program builds the local backend's sandboxes: `stepward-jail` beside this program
//! when it is installed there, else this program itself as `stepward __jail`.
//!
//! Both run the same code (`sandbox::jail`). The small program is preferred because it starts
//! faster: before `main`, the dynamic loader of the whole `stepward` program relocates about
//! 44,000 pointers and faults in their pages, about a millisecond on the path of every sandbox
//! (issue 13). The helper runs as root and builds every layer of isolation, so it is trusted
//! exactly like this program's own file: a `stepward-jail` that someone other than its owner
//! (root, or the user running stepward) could replace is refused with an error, never run and
//! never silently skipped for the fallback.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The helper's program name, beside `stepward`.
pub const PROGRAM: &str = "stepward-jail";

/// The program and arguments the local backend execs for each sandbox.
pub fn command() -> anyhow::Result<(PathBuf, Vec<OsString>)> {
    let this = std::env::current_exe().context("cannot find this program's path")?;
    let euid = rustix::process::geteuid().as_raw();
    match beside(&this, euid)? {
        Some(helper) => Ok((helper, Vec::new())),
        None => Ok((this, vec![crate::JAIL_HELPER_ARG.into()])),
    }
}

/// `stepward-jail` in the folder of `program`, if it is there and safe to run as `euid`;
/// `None` when there is none; an error when there is one that others could replace.
///
/// Trusted owners are root, `euid` and the owner of `program` itself (whoever can replace
/// `stepward` can already change what runs as `stepward __jail`). The helper must be a
/// regular file itself, never a symbolic link (a link's target and the folders on its way are
/// not what this checks), and its folder, which is `program`'s, must be writable by no one
/// else: a folder others may write lets them swap the file (a sticky bit stops only a swap of
/// another user's file, and the file is the owner's).
pub fn beside(program: &Path, euid: u32) -> anyhow::Result<Option<PathBuf>> {
    let Some(folder) = program.parent() else {
        return Ok(None);
    };
    let candidate = folder.join(PROGRAM);
    let metadata = match std::fs::symlink_metadata(&candidate) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot inspect {}", candidate.display()));
        }
    };
    let program_owner = std::fs::metadata(program)
        .with_context(|| format!("cannot inspect {}", program.display()))?
        .uid();
    let folder_metadata = std::fs::metadata(folder)
        .with_context(|| format!("cannot inspect {}", folder.display()))?;
    let refuse = |what: String| {
        anyhow::anyhow!(
            "refusing the jail helper {}: {what}; it builds every sandbox as root, so only root, \
             you or the owner of {} may be able to change it: make it a regular file of one of \
             them, not writable by others, in a folder only they can write (for example \
             `chown root {} && chmod 755 {}`), or remove it, and stepward will run its sandboxes \
             through `{} {}`",
            candidate.display(),
            program.display(),
            candidate.display(),
            candidate.display(),
            program.display(),
            crate::JAIL_HELPER_ARG
        )
    };
    if metadata.file_type().is_symlink() {
        return Err(refuse(String::from(
            "it is a symbolic link (install the program itself there)",
        )));
    }
    if !metadata.is_file() {
        return Err(refuse(String::from("it is not a regular file")));
    }
    let trusted_owner = |uid: u32| uid == 0 || uid == euid || uid == program_owner;
    if !trusted_owner(metadata.uid()) {
        return Err(refuse(format!("it belongs to uid {}", metadata.uid())));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "its mode {:04o} lets others write it",
            metadata.mode() & 0o7777
        )));
    }
    if metadata.mode() & 0o100 == 0 {
        return Err(refuse(String::from("its owner may not execute it")));
    }
    if !trusted_owner(folder_metadata.uid()) || folder_metadata.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "its folder {} (uid {}, mode {:04o}) lets others replace it",
            folder.display(),
            folder_metadata.uid(),
            folder_metadata.mode() & 0o7777
        )));
    }
    Ok(Some(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn folder_with(helper_mode: Option<u32>, folder_mode: u32) -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("stepward"), b"").unwrap();
        if let Some(mode) = helper_mode {
            let helper = folder.path().join(PROGRAM);
            std::fs::write(&helper, b"").unwrap();
            std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(folder_mode))
            .unwrap();
        folder
    }

    fn euid() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    #[test]
    fn g10_a_safe_helper_beside_the_program_is_used() {
        let folder = folder_with(Some(0o755), 0o755);
        let found = beside(&folder.path().join("stepward"), euid()).unwrap();
        assert_eq!(found, Some(folder.path().join(PROGRAM)));
    }

    #[test]
    fn g10_without_a_helper_beside_it_the_program_runs_its_own() {
        let folder = folder_with(None, 0o755);
        assert_eq!(
            beside(&folder.path().join("stepward"), euid()).unwrap(),
            None
        );
    }

    #[test]
    fn g10_a_helper_others_can_write_is_refused_not_run_and_not_skipped() {
        for mode in [0o757, 0o775, 0o777] {
            let folder = folder_with(Some(mode), 0o755);
            let error = beside(&folder.path().join("stepward"), euid())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("lets others write it")
                    && error.contains("refusing the jail helper"),
                "mode {mode:o}: {error}"
            );
        }
    }

    #[test]
    fn g10_a_helper_in_a_folder_others_can_write_is_refused() {
        let folder = folder_with(Some(0o755), 0o777);
        let error = beside(&folder.path().join("stepward"), euid())
            .unwrap_err()
            .to_string();
        assert!(error.contains("lets others replace it"), "{error}");
    }

    #[test]
    fn g10_a_helper_of_another_user_is_refused_needs_root() {
        assert_eq!(euid(), 0, "giving the file to another user needs root");
        let folder = folder_with(Some(0o755), 0o755);
        // Neither root, nor the checking user, nor the owner of `stepward` (root).
        std::os::unix::fs::chown(folder.path().join(PROGRAM), Some(54_321), None).unwrap();
        let error = beside(&folder.path().join("stepward"), 0)
            .unwrap_err()
            .to_string();
        assert!(error.contains("belongs to uid 54321"), "{error}");
    }

    #[test]
    fn g10_a_helper_that_is_a_symbolic_link_is_refused_even_to_a_safe_file() {
        // A link to a root-owned program in a root-owned folder passes every check of its
        // target; the name beside stepward is what must be safe, and a link is not checked.
        for target in ["/bin/sh", "/nonexistent/stepward-jail"] {
            let folder = folder_with(None, 0o755);
            std::os::unix::fs::symlink(target, folder.path().join(PROGRAM)).unwrap();
            let error = beside(&folder.path().join("stepward"), euid())
                .unwrap_err()
                .to_string();
            assert!(error.contains("symbolic link"), "{target}: {error}");
        }
    }

    #[test]
    fn g10_a_helper_that_is_a_folder_is_refused() {
        let folder = folder_with(None, 0o755);
        std::fs::create_dir(folder.path().join(PROGRAM)).unwrap();
        let error = beside(&folder.path().join("stepward"), euid())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }
}
