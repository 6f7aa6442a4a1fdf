//! Collecting what a finished step left in its scratch folder, through the filter's rules.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use sha2::{Digest, Sha256};
use workspace::{RelPath, is_protected};

use crate::copyback::{
    CopyBack, CopyBackPolicy, Error, FileChange, Manifest, Refusal, RefusalReason, SecretScreen,
    kind_name,
};

const FOLDER_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
// NONBLOCK so that opening a fifo swapped in after the stat cannot hang the platform; NOCTTY so
// that a terminal device can never become our controlling terminal.
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);
const SET_ID_BITS: u32 = 0o6000;

/// Walks `scratch` after the step's processes are all dead and returns the new or changed
/// files (compared with `manifest`) that pass every rule of `policy`, the staged files that
/// were removed, and a refusal for everything else.
///
/// The walk visits at most `manifest.len() + 4 * policy.max_files` entries, so a step that
/// leaves millions of empty folders costs bounded work; past that it stops with one
/// [`RefusalReason::TooMany`] and reports no deletions.
pub fn collect(
    scratch: &Path,
    manifest: &Manifest,
    policy: &CopyBackPolicy,
    screen: &dyn SecretScreen,
) -> Result<CopyBack, Error> {
    let root = rustix::fs::open(scratch, FOLDER_FLAGS, Mode::empty())
        .map_err(Error::io("open", scratch))?;
    let root_status = rustix::fs::fstat(&root).map_err(Error::io("stat", scratch))?;
    let mut walker = Walker {
        scratch,
        manifest,
        policy,
        screen,
        device: root_status.st_dev,
        budget: manifest
            .len()
            .saturating_add(policy.max_files.saturating_mul(4)),
        truncated: false,
        total_bytes: 0,
        seen: HashSet::new(),
        unwalked: Vec::new(),
        result: CopyBack::default(),
    };
    walker.walk_folder(&root, None)?;
    if !walker.truncated {
        let deleted: Vec<RelPath> = manifest
            .files()
            .map(|entry| &entry.path)
            .filter(|path| !walker.seen.contains(*path))
            .filter(|path| !walker.unwalked.iter().any(|folder| is_under(path, folder)))
            .cloned()
            .collect();
        walker.result.deleted = deleted;
    }
    Ok(walker.result)
}

struct Walker<'a> {
    scratch: &'a Path,
    manifest: &'a Manifest,
    policy: &'a CopyBackPolicy,
    screen: &'a dyn SecretScreen,
    device: u64,
    budget: usize,
    truncated: bool,
    total_bytes: u64,
    seen: HashSet<RelPath>,
    // Folders that were refused or not fully listed: staged files under them are not deleted.
    unwalked: Vec<RelPath>,
    result: CopyBack,
}

enum Named {
    Path(RelPath),
    Refused,
}

impl Walker<'_> {
    fn refuse(&mut self, path: String, reason: RefusalReason) {
        self.result.refusals.push(Refusal { path, reason });
    }

    fn walk_folder(&mut self, folder: &OwnedFd, prefix: Option<&RelPath>) -> Result<(), Error> {
        let here = prefix.map_or_else(
            || self.scratch.to_path_buf(),
            |p| self.scratch.join(p.as_path()),
        );
        let mut names: Vec<Vec<u8>> = Vec::new();
        for entry in rustix::fs::Dir::read_from(folder).map_err(Error::io("read", &here))? {
            let entry = entry.map_err(Error::io("read", &here))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if self.budget == 0 {
                self.truncated = true;
                self.refuse(
                    prefix.map_or_else(String::new, RelPath::to_string),
                    RefusalReason::TooMany {
                        cap: self.policy.max_files,
                    },
                );
                return Ok(());
            }
            self.budget -= 1;
            names.push(name.to_vec());
        }
        names.sort();
        for name in names {
            if self.truncated {
                return Ok(());
            }
            let path = match self.name_to_path(prefix, &name) {
                Named::Path(path) => path,
                Named::Refused => continue,
            };
            self.seen.insert(path.clone());
            self.visit(folder, &name, path)?;
        }
        Ok(())
    }

    fn name_to_path(&mut self, prefix: Option<&RelPath>, name: &[u8]) -> Named {
        let lossy = workspace::escape_forbidden(&String::from_utf8_lossy(name));
        let shown = prefix.map_or_else(|| lossy.clone(), |p| format!("{p}/{lossy}"));
        let text = match std::str::from_utf8(name) {
            Ok(text) => text,
            Err(error) => {
                self.refuse(
                    shown,
                    RefusalReason::BadName {
                        detail: error.to_string(),
                    },
                );
                return Named::Refused;
            }
        };
        let joined = match prefix {
            Some(p) => p.join(text),
            None => RelPath::parse(text),
        };
        match joined {
            Ok(path) if path.depth() > self.policy.max_depth => {
                self.refuse(
                    shown,
                    RefusalReason::TooDeep {
                        depth: path.depth(),
                        cap: self.policy.max_depth,
                    },
                );
                self.unwalked.push(path);
                Named::Refused
            }
            Ok(path) => Named::Path(path),
            Err(refusal) => {
                let reason = match refusal.reason {
                    workspace::RefusalReason::TooDeep { depth, .. } => RefusalReason::TooDeep {
                        depth,
                        cap: self.policy.max_depth,
                    },
                    other => RefusalReason::BadName {
                        detail: other.to_string(),
                    },
                };
                self.refuse(shown, reason);
                Named::Refused
            }
        }
    }

    fn visit(&mut self, folder: &OwnedFd, name: &[u8], path: RelPath) -> Result<(), Error> {
        let shown = path.to_string();
        if let Some(kind) = is_protected(&path) {
            self.refuse(shown, RefusalReason::ProtectedPath { kind });
            self.unwalked.push(path);
            return Ok(());
        }
        let status = match rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(status) => status,
            Err(errno) => {
                self.refuse(
                    shown,
                    RefusalReason::Unreadable {
                        detail: std::io::Error::from(errno).to_string(),
                    },
                );
                self.unwalked.push(path);
                return Ok(());
            }
        };
        if status.st_dev != self.device {
            self.refuse(shown, RefusalReason::OutsideFolder);
            self.unwalked.push(path);
            return Ok(());
        }
        match FileType::from_raw_mode(status.st_mode) {
            FileType::Directory => self.visit_folder(folder, name, path, &status),
            FileType::RegularFile => {
                self.visit_file(folder, name, path, &status);
                Ok(())
            }
            FileType::Symlink => {
                self.refuse(shown, RefusalReason::SymlinkOrHardlink);
                Ok(())
            }
            other => {
                self.refuse(
                    shown,
                    RefusalReason::NotRegularFile {
                        kind: kind_name(other),
                    },
                );
                Ok(())
            }
        }
    }

    fn visit_folder(
        &mut self,
        folder: &OwnedFd,
        name: &[u8],
        path: RelPath,
        status: &Stat,
    ) -> Result<(), Error> {
        let opened = match rustix::fs::openat(folder, name, FOLDER_FLAGS, Mode::empty())
            .and_then(|fd| rustix::fs::fstat(&fd).map(|opened_status| (fd, opened_status)))
        {
            Ok((fd, opened_status))
                if opened_status.st_ino == status.st_ino
                    && opened_status.st_dev == status.st_dev =>
            {
                fd
            }
            Ok(_) => {
                self.refuse(
                    path.to_string(),
                    RefusalReason::Unreadable {
                        detail: "the folder changed while it was being read".to_owned(),
                    },
                );
                self.unwalked.push(path);
                return Ok(());
            }
            Err(errno) => {
                self.refuse(
                    path.to_string(),
                    RefusalReason::Unreadable {
                        detail: std::io::Error::from(errno).to_string(),
                    },
                );
                self.unwalked.push(path);
                return Ok(());
            }
        };
        self.walk_folder(&opened, Some(&path))
    }

    fn visit_file(&mut self, folder: &OwnedFd, name: &[u8], path: RelPath, status: &Stat) {
        let shown = path.to_string();
        let opened = rustix::fs::openat(folder, name, READ_FLAGS, Mode::empty())
            .and_then(|fd| rustix::fs::fstat(&fd).map(|opened_status| (fd, opened_status)));
        let (fd, opened_status) = match opened {
            Ok(pair) => pair,
            Err(rustix::io::Errno::LOOP) => {
                self.refuse(shown, RefusalReason::SymlinkOrHardlink);
                return;
            }
            Err(errno) => {
                self.refuse(
                    shown,
                    RefusalReason::Unreadable {
                        detail: std::io::Error::from(errno).to_string(),
                    },
                );
                return;
            }
        };
        // Every decision below is taken on the descriptor actually opened, not on the name.
        let opened_type = FileType::from_raw_mode(opened_status.st_mode);
        if opened_type != FileType::RegularFile {
            self.refuse(
                shown,
                RefusalReason::NotRegularFile {
                    kind: kind_name(opened_type),
                },
            );
            return;
        }
        if opened_status.st_ino != status.st_ino || opened_status.st_dev != self.device {
            self.refuse(
                shown,
                RefusalReason::Unreadable {
                    detail: "the file changed while it was being read".to_owned(),
                },
            );
            return;
        }
        if opened_status.st_nlink > 1 {
            self.refuse(shown, RefusalReason::SymlinkOrHardlink);
            return;
        }
        if opened_status.st_mode & SET_ID_BITS != 0 {
            self.refuse(shown, RefusalReason::SetIdBits);
            return;
        }
        let cap = self.policy.max_file_bytes;
        let size = u64::try_from(opened_status.st_size).unwrap_or(u64::MAX);
        if size > cap {
            self.refuse(shown, RefusalReason::TooLarge { size, cap });
            return;
        }
        let mut contents = Vec::new();
        let read = File::from(fd)
            .take(cap.saturating_add(1))
            .read_to_end(&mut contents);
        if let Err(error) = read {
            self.refuse(
                shown,
                RefusalReason::Unreadable {
                    detail: error.to_string(),
                },
            );
            return;
        }
        let read_size = contents.len() as u64;
        if read_size > cap {
            self.refuse(
                shown,
                RefusalReason::TooLarge {
                    size: read_size.max(size),
                    cap,
                },
            );
            return;
        }
        if let Some(staged) = self.manifest.get(&path)
            && staged.size == read_size
            && staged.sha256 == <[u8; 32]>::from(Sha256::digest(&contents))
        {
            return;
        }
        match workspace::screen_contents(self.screen, &contents, self.screen.unreadable_archives())
        {
            workspace::Screened::Clean => {}
            workspace::Screened::HoldsSecret { .. } => {
                self.refuse(shown, RefusalReason::HoldsSecret);
                return;
            }
            workspace::Screened::Unscreenable { reason } => {
                self.refuse(shown, RefusalReason::Unscreenable { reason });
                return;
            }
        }
        if self.result.files.len() >= self.policy.max_files {
            self.refuse(
                shown,
                RefusalReason::TooMany {
                    cap: self.policy.max_files,
                },
            );
            return;
        }
        let total = self.total_bytes.saturating_add(read_size);
        if total > self.policy.max_total_bytes {
            self.refuse(
                shown,
                RefusalReason::TotalTooLarge {
                    total,
                    cap: self.policy.max_total_bytes,
                },
            );
            return;
        }
        self.total_bytes = total;
        self.result.files.push(FileChange::write(path, contents));
    }
}

/// Whether `path` is `folder` or inside it.
fn is_under(path: &RelPath, folder: &RelPath) -> bool {
    path == folder
        || path
            .as_str()
            .strip_prefix(folder.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
}
