//! Staging a workspace folder into an empty scratch folder before a step runs.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, Uid};
use sha2::{Digest, Sha256};
use workspace::{RelPath, Snapshot, StepFiles, is_protected};

use crate::copyback::{Error, Manifest, ManifestEntry, Refusal, RefusalReason, kind_name};

const FOLDER_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);
const CREATE_FLAGS: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::EXCL)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Stages what a step may see into the empty folder `scratch`: folders and regular files only,
/// never following a link, every created entry owned by `owner` (uid, gid). The working folder
/// is copied under its shared lock (so no revision is applied meanwhile), beneath the
/// descriptor [`StepFiles::open`] gives, never by path; files held in memory are written.
/// Protected entries, links and special files are left out and listed in
/// [`Manifest::skipped`].
pub fn stage_in(files: &StepFiles, scratch: &Path, owner: (u32, u32)) -> Result<Manifest, Error> {
    let target = rustix::fs::open(scratch, FOLDER_FLAGS, Mode::empty())
        .map_err(Error::io("open", scratch))?;
    let has_entries = rustix::fs::Dir::read_from(&target)
        .map_err(Error::io("read", scratch))?
        .filter_map(Result::ok)
        .any(|entry| !matches!(entry.file_name().to_bytes(), b"." | b".."));
    if has_entries {
        return Err(Error::ScratchNotEmpty {
            path: scratch.to_path_buf(),
        });
    }
    let stager = Stager {
        owner: (Uid::from_raw(owner.0), Gid::from_raw(owner.1)),
        scratch,
    };
    stager.chown(&target, scratch)?;
    let mut manifest = Manifest::default();
    let source = files.open().map_err(|error| Error::Io {
        operation: "open",
        path: Path::new(WORKSPACE).to_path_buf(),
        source: std::io::Error::other(error.to_string()),
    })?;
    match source {
        // The lock is let go when `folder` drops, at the end of this arm.
        Snapshot::Folder(folder) => stager.copy_folder(
            folder.fd(),
            &target,
            None,
            Path::new(WORKSPACE),
            &mut manifest,
        )?,
        Snapshot::Files(files) => {
            for (path, contents) in files {
                stager.write_file(&target, path, contents, &mut manifest)?;
            }
        }
    }
    Ok(manifest)
}

/// How errors name the folder a step's files are staged from: never the host's path of it.
const WORKSPACE: &str = "<workspace>";

struct Stager<'a> {
    owner: (Uid, Gid),
    scratch: &'a Path,
}

impl Stager<'_> {
    fn chown(&self, fd: &OwnedFd, path: &Path) -> Result<(), Error> {
        rustix::fs::fchown(fd, Some(self.owner.0), Some(self.owner.1))
            .map_err(Error::io("chown", path))
    }

    fn copy_folder(
        &self,
        source: &OwnedFd,
        target: &OwnedFd,
        prefix: Option<&RelPath>,
        workspace: &Path,
        manifest: &mut Manifest,
    ) -> Result<(), Error> {
        let here = prefix.map_or_else(|| workspace.to_path_buf(), |p| workspace.join(p.as_path()));
        let mut names: Vec<Vec<u8>> = Vec::new();
        for entry in rustix::fs::Dir::read_from(source).map_err(Error::io("read", &here))? {
            let entry = entry.map_err(Error::io("read", &here))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
        names.sort();
        for name in names {
            let lossy = String::from_utf8_lossy(&name).into_owned();
            let shown = prefix.map_or_else(|| lossy.clone(), |p| format!("{p}/{lossy}"));
            let path = match std::str::from_utf8(&name)
                .map_err(|error| error.to_string())
                .and_then(|text| {
                    match prefix {
                        Some(p) => p.join(text),
                        None => RelPath::parse(text),
                    }
                    .map_err(|refusal| refusal.reason.to_string())
                }) {
                Ok(path) => path,
                Err(detail) => {
                    manifest.skipped.push(Refusal {
                        path: shown,
                        reason: RefusalReason::BadName { detail },
                    });
                    continue;
                }
            };
            if let Some(kind) = is_protected(&path) {
                manifest.skipped.push(Refusal {
                    path: shown,
                    reason: RefusalReason::ProtectedPath { kind },
                });
                continue;
            }
            let full = workspace.join(path.as_path());
            let status = rustix::fs::statat(source, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(Error::io("stat", &full))?;
            match FileType::from_raw_mode(status.st_mode) {
                FileType::Directory => {
                    let child_source =
                        rustix::fs::openat(source, name.as_slice(), FOLDER_FLAGS, Mode::empty())
                            .map_err(Error::io("open", &full))?;
                    let target_path = self.scratch.join(path.as_path());
                    rustix::fs::mkdirat(target, name.as_slice(), Mode::from_raw_mode(0o755))
                        .map_err(Error::io("mkdir", &target_path))?;
                    let child_target =
                        rustix::fs::openat(target, name.as_slice(), FOLDER_FLAGS, Mode::empty())
                            .map_err(Error::io("open", &target_path))?;
                    self.chown(&child_target, &target_path)?;
                    self.copy_folder(
                        &child_source,
                        &child_target,
                        Some(&path),
                        workspace,
                        manifest,
                    )?;
                }
                FileType::RegularFile => {
                    match self.copy_file(source, target, &name, &path, &full)? {
                        Some(entry) => {
                            manifest.files.insert(path, entry);
                        }
                        None => manifest.skipped.push(Refusal {
                            path: shown,
                            reason: RefusalReason::Unreadable {
                                detail: String::from("it changed type while being staged"),
                            },
                        }),
                    }
                }
                other => manifest.skipped.push(Refusal {
                    path: shown,
                    reason: if other == FileType::Symlink {
                        RefusalReason::SymlinkOrHardlink
                    } else {
                        RefusalReason::NotRegularFile {
                            kind: kind_name(other),
                        }
                    },
                }),
            }
        }
        Ok(())
    }

    /// Writes one file held in memory at `path` beneath `target`, making the folders on the
    /// way (each owned by the sandbox user), and records it in the manifest.
    fn write_file(
        &self,
        target: &OwnedFd,
        path: &RelPath,
        contents: &[u8],
        manifest: &mut Manifest,
    ) -> Result<(), Error> {
        let components: Vec<&str> = path.components().collect();
        let Some((name, folders)) = components.split_last() else {
            return Ok(());
        };
        let mut folder = rustix::io::dup(target).map_err(Error::io("open", self.scratch))?;
        let mut here = self.scratch.to_path_buf();
        for component in folders {
            here.push(component);
            match rustix::fs::mkdirat(&folder, *component, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(errno) => return Err(Error::io("mkdir", &here)(errno)),
            }
            let next = rustix::fs::openat(&folder, *component, FOLDER_FLAGS, Mode::empty())
                .map_err(Error::io("open", &here))?;
            self.chown(&next, &here)?;
            folder = next;
        }
        let target_path = self.scratch.join(path.as_path());
        let output = rustix::fs::openat(&folder, *name, CREATE_FLAGS, Mode::from_raw_mode(0o644))
            .map_err(Error::io("create", &target_path))?;
        self.chown(&output, &target_path)?;
        File::from(output)
            .write_all(contents)
            .map_err(|source| Error::Io {
                operation: "write",
                path: target_path.clone(),
                source,
            })?;
        manifest.files.insert(
            path.clone(),
            ManifestEntry {
                path: path.clone(),
                size: contents.len() as u64,
                sha256: Sha256::digest(contents).into(),
            },
        );
        Ok(())
    }

    fn copy_file(
        &self,
        source: &OwnedFd,
        target: &OwnedFd,
        name: &[u8],
        path: &RelPath,
        full: &Path,
    ) -> Result<Option<ManifestEntry>, Error> {
        let input = rustix::fs::openat(source, name, READ_FLAGS, Mode::empty())
            .map_err(Error::io("open", full))?;
        // The decision is taken on what was opened: a name swapped for a fifo or a device
        // after the stat is left out, never read.
        let opened = rustix::fs::fstat(&input).map_err(Error::io("stat", full))?;
        if FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let target_path = self.scratch.join(path.as_path());
        let output = rustix::fs::openat(target, name, CREATE_FLAGS, Mode::from_raw_mode(0o644))
            .map_err(Error::io("create", &target_path))?;
        self.chown(&output, &target_path)?;
        let mut input = File::from(input);
        let mut output = File::from(output);
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            let read = input.read(&mut buffer).map_err(|source| Error::Io {
                operation: "read",
                path: full.to_path_buf(),
                source,
            })?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            output
                .write_all(&buffer[..read])
                .map_err(|source| Error::Io {
                    operation: "write",
                    path: target_path.clone(),
                    source,
                })?;
            size += read as u64;
        }
        Ok(Some(ManifestEntry {
            path: path.clone(),
            size,
            sha256: hasher.finalize().into(),
        }))
    }
}
