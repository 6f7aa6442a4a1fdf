//! The one confinement primitive every file tool and every agent copy-back goes through (G22):
//! a folder opened once, and every path under it opened relative to that descriptor with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`.
//!
//! A path is first confined lexically ([`crate::confine`]: components, never string prefixes,
//! no `..`, never absolute), then the kernel refuses any link on the way, wherever it points,
//! also one a script made moments ago in this very step (the shape of CVE-2026-39861). A file
//! is read only after `fstat` of the descriptor actually opened says it is a regular file with
//! one name (a hard link to a file elsewhere has two). New files are written beside their
//! target and renamed over it, within the parent descriptor, so a link swapped in between the
//! check and the write is replaced, never followed.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::path::RelPath;

/// How the kernel must resolve every path under the tree's root.
fn beneath() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// What went wrong with one path of a [`Tree`], in words a model or a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` is, or passes through, a symbolic link; links are never followed")]
    Link { path: String },
    #[error("`{path}` is a {kind}, not a regular file")]
    NotAFile { path: String, kind: &'static str },
    #[error("`{path}` is a folder")]
    IsAFolder { path: String },
    #[error("`{path}` has more than one name (a hard link); it is not read or written")]
    HardLink { path: String },
    #[error("`{path}` is larger than {max} bytes")]
    TooLarge { path: String, max: u64 },
    #[error("`{path}`: {detail}")]
    Io { path: String, detail: String },
}

fn kind_name(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "file",
        FileType::Directory => "folder",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "named pipe",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "special file",
    }
}

fn error_of(path: &RelPath, errno: Errno) -> TreeError {
    let path = path.to_string();
    match errno {
        Errno::NOENT => TreeError::NotFound { path },
        // ELOOP: a link where RESOLVE_NO_SYMLINKS refused it; EXDEV: an escape attempt.
        Errno::LOOP | Errno::XDEV => TreeError::Link { path },
        Errno::ISDIR => TreeError::IsAFolder { path },
        Errno::NOTDIR => TreeError::NotAFile {
            path,
            kind: "path through a file",
        },
        other => TreeError::Io {
            path,
            detail: std::io::Error::from(other).to_string(),
        },
    }
}

/// One entry found by [`Tree::walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub path: RelPath,
    /// A regular file, a folder, or something that is neither (reported, never opened).
    pub kind: &'static str,
    pub size: u64,
}

/// A folder every path is confined to. Holds the folder's descriptor: renaming or replacing
/// the folder afterwards does not move what it reaches.
pub struct Tree {
    root: OwnedFd,
}

impl Tree {
    /// Opens the folder at `root` (itself not through a link).
    pub fn open(root: &Path) -> Result<Tree, TreeError> {
        let fd = rustix::fs::open(
            root,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|errno| TreeError::Io {
            path: root.display().to_string(),
            detail: std::io::Error::from(errno).to_string(),
        })?;
        Ok(Tree { root: fd })
    }

    fn open_beneath(&self, path: &RelPath, flags: OFlags) -> Result<OwnedFd, TreeError> {
        rustix::fs::openat2(
            self.root.as_fd(),
            path.as_str(),
            flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
            beneath(),
        )
        .map_err(|errno| error_of(path, errno))
    }

    fn open_folder(&self, path: Option<&RelPath>) -> Result<OwnedFd, TreeError> {
        match path {
            None => rustix::io::dup(self.root.as_fd()).map_err(|errno| TreeError::Io {
                path: ".".to_owned(),
                detail: std::io::Error::from(errno).to_string(),
            }),
            Some(path) => self.open_beneath(path, OFlags::DIRECTORY | OFlags::RDONLY),
        }
    }

    /// What `path` is, without following a link (a link is reported as one).
    pub fn kind(&self, path: &RelPath) -> Result<&'static str, TreeError> {
        let (parent, name) = split(path);
        let folder = self.open_folder(parent.as_ref())?;
        let stat = rustix::fs::statat(folder.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| error_of(path, errno))?;
        Ok(kind_name(FileType::from_raw_mode(stat.st_mode)))
    }

    /// The contents of the regular file at `path`, at most `max_bytes` from `offset`, and the
    /// file's whole size.
    pub fn read(
        &self,
        path: &RelPath,
        offset: u64,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, u64), TreeError> {
        let fd = self.open_beneath(path, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| error_of(path, errno))?;
        let file_type = FileType::from_raw_mode(stat.st_mode);
        if file_type == FileType::Directory {
            return Err(TreeError::IsAFolder {
                path: path.to_string(),
            });
        }
        if file_type != FileType::RegularFile {
            return Err(TreeError::NotAFile {
                path: path.to_string(),
                kind: kind_name(file_type),
            });
        }
        if stat.st_nlink > 1 {
            return Err(TreeError::HardLink {
                path: path.to_string(),
            });
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        let mut file = std::fs::File::from(fd);
        if offset > 0 {
            use std::io::Seek;
            file.seek(std::io::SeekFrom::Start(offset))
                .map_err(|error| TreeError::Io {
                    path: path.to_string(),
                    detail: error.to_string(),
                })?;
        }
        let mut bytes = Vec::new();
        file.take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(|error| TreeError::Io {
                path: path.to_string(),
                detail: error.to_string(),
            })?;
        Ok((bytes, size))
    }

    /// Writes `contents` to `path`, making its folders; the file is written beside its target
    /// and renamed over it inside the parent's descriptor.
    pub fn write(&self, path: &RelPath, contents: &[u8]) -> Result<(), TreeError> {
        let (parent, name) = split(path);
        let folder = match &parent {
            None => self.open_folder(None)?,
            Some(parent) => self.make_folders(parent)?,
        };
        // An existing entry that is not a regular file with one name is never replaced.
        match rustix::fs::statat(folder.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                let file_type = FileType::from_raw_mode(stat.st_mode);
                if file_type == FileType::Symlink {
                    return Err(TreeError::Link {
                        path: path.to_string(),
                    });
                }
                if file_type != FileType::RegularFile {
                    return Err(TreeError::NotAFile {
                        path: path.to_string(),
                        kind: kind_name(file_type),
                    });
                }
                if stat.st_nlink > 1 {
                    return Err(TreeError::HardLink {
                        path: path.to_string(),
                    });
                }
            }
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(error_of(path, errno)),
        }
        // A name of its own length, whatever the target's: a name of up to 255 bytes (the
        // file system's limit) still has room for its temporary sibling.
        let temporary = format!(
            ".stepward-{}-{}.tmp",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|since| since.as_nanos())
                .unwrap_or_default()
        );
        let fd = rustix::fs::openat(
            folder.as_fd(),
            temporary.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|errno| error_of(path, errno))?;
        let mut file = std::fs::File::from(fd);
        let written = file.write_all(contents).and_then(|()| file.flush());
        if let Err(error) = written {
            let _ = rustix::fs::unlinkat(folder.as_fd(), temporary.as_str(), AtFlags::empty());
            return Err(TreeError::Io {
                path: path.to_string(),
                detail: error.to_string(),
            });
        }
        rustix::fs::renameat(folder.as_fd(), temporary.as_str(), folder.as_fd(), name).map_err(
            |errno| {
                let _ = rustix::fs::unlinkat(folder.as_fd(), temporary.as_str(), AtFlags::empty());
                error_of(path, errno)
            },
        )
    }

    /// Opens the folder `path`, making each missing component (never through a link).
    fn make_folders(&self, path: &RelPath) -> Result<OwnedFd, TreeError> {
        let mut current = self.open_folder(None)?;
        for component in path.components() {
            match rustix::fs::mkdirat(current.as_fd(), component, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(error_of(path, errno)),
            }
            // O_DIRECTORY on a link reports "not a folder": say what it is.
            if let Ok(stat) =
                rustix::fs::statat(current.as_fd(), component, AtFlags::SYMLINK_NOFOLLOW)
                && FileType::from_raw_mode(stat.st_mode) == FileType::Symlink
            {
                return Err(TreeError::Link {
                    path: path.to_string(),
                });
            }
            current = rustix::fs::openat2(
                current.as_fd(),
                component,
                OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
                beneath(),
            )
            .map_err(|errno| error_of(path, errno))?;
        }
        Ok(current)
    }

    /// Every entry under `start` (the whole tree for `None`), depth first, never entering a
    /// link; at most `max_entries` (the second value says whether the walk was cut).
    pub fn walk(
        &self,
        start: Option<&RelPath>,
        max_entries: usize,
    ) -> Result<(Vec<TreeEntry>, bool), TreeError> {
        let mut unnamed = Vec::new();
        self.walk_noting(start, max_entries, &mut unnamed)
    }

    /// [`Tree::walk`], and every entry whose name cannot be a workspace path (not UTF-8, a
    /// control or bidi character, too long) pushed to `unnamed`, shown escaped, so a caller
    /// that takes files from the tree can refuse them by name instead of passing over them.
    pub fn walk_noting(
        &self,
        start: Option<&RelPath>,
        max_entries: usize,
        unnamed: &mut Vec<String>,
    ) -> Result<(Vec<TreeEntry>, bool), TreeError> {
        let mut entries = Vec::new();
        let mut pending: Vec<Option<RelPath>> = vec![start.cloned()];
        while let Some(folder_path) = pending.pop() {
            let folder = self.open_folder(folder_path.as_ref())?;
            let mut names = Vec::new();
            let dir = rustix::fs::Dir::read_from(&folder).map_err(|errno| TreeError::Io {
                path: folder_path
                    .as_ref()
                    .map_or_else(|| ".".to_owned(), ToString::to_string),
                detail: std::io::Error::from(errno).to_string(),
            })?;
            for entry in dir {
                let Ok(entry) = entry else { break };
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == "." || name == ".." {
                    continue;
                }
                names.push(name);
            }
            names.sort();
            for name in names.into_iter().rev() {
                let path = match &folder_path {
                    None => RelPath::parse(&name),
                    Some(parent) => parent.join(&name),
                };
                let Ok(path) = path else {
                    let shown = crate::path::escape_forbidden(&name);
                    unnamed.push(match &folder_path {
                        None => shown,
                        Some(parent) => format!("{parent}/{shown}"),
                    });
                    continue;
                };
                let Ok(stat) =
                    rustix::fs::statat(folder.as_fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                else {
                    continue;
                };
                let file_type = FileType::from_raw_mode(stat.st_mode);
                if file_type == FileType::Directory {
                    pending.push(Some(path.clone()));
                }
                entries.push(TreeEntry {
                    path,
                    kind: kind_name(file_type),
                    size: u64::try_from(stat.st_size).unwrap_or(0),
                });
                if entries.len() >= max_entries {
                    return Ok((entries, true));
                }
            }
        }
        entries.sort_by(|left, right| left.path.cmp(&right.path));
        Ok((entries, false))
    }
}

/// The parent folder of `path` (`None` for the root) and its last component.
fn split(path: &RelPath) -> (Option<RelPath>, &str) {
    match path.as_str().rsplit_once('/') {
        None => (None, path.as_str()),
        Some((parent, name)) => (RelPath::parse(parent).ok(), name),
    }
}
