//! What a step may see (issue 39): [`StepFiles`], a read-only handle on a snapshot of the
//! account's files, handed to whatever runs the step in place of a host path. A backend stages
//! it into a scratch folder of its own ([`StepFiles::open`]); an agent's view and its
//! colleagues read it ([`StepFiles::reader`]); what the step changed comes back as a list of
//! [`FileChange`]s, which the copy-back screen and the revision commit take.
//!
//! Two sources today: the working folder of this host (the head revision's files, read under
//! its shared lock, so a snapshot never holds half of a revision) and files held in memory (a
//! step whose files come from elsewhere: tests today; a pod or an object store next). No crate
//! above this one and `sandbox` learns where the working folder is.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use crate::Error;
use crate::path::RelPath;
use crate::revision::Change;
use crate::tree::{Tree, TreeEntry, TreeError};

/// A read-only snapshot of what a step may see. Cheap to clone.
#[derive(Clone)]
pub struct StepFiles {
    source: Source,
}

#[derive(Clone)]
enum Source {
    /// The working folder of this host.
    Folder(Arc<PathBuf>),
    /// Files held in memory, by path.
    Memory(Arc<BTreeMap<RelPath, Vec<u8>>>),
}

impl std::fmt::Debug for StepFiles {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Source::Folder(_) => formatter.write_str("StepFiles(working folder)"),
            Source::Memory(files) => {
                write!(formatter, "StepFiles({} files in memory)", files.len())
            }
        }
    }
}

/// A snapshot opened for staging ([`StepFiles::open`]).
pub enum Snapshot<'a> {
    /// The working folder, opened (`O_DIRECTORY | O_NOFOLLOW`) and held under its shared lock
    /// until this is dropped: copy beneath the descriptor, never by path.
    Folder(LockedFolder),
    /// Every file, by path.
    Files(&'a BTreeMap<RelPath, Vec<u8>>),
}

/// The working folder's descriptor under its shared lock: no revision is applied while it
/// lives. The lock is let go when it is dropped.
pub struct LockedFolder {
    fd: OwnedFd,
}

impl LockedFolder {
    /// The folder's descriptor.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

impl Drop for LockedFolder {
    fn drop(&mut self) {
        // Let go at once, whatever else still holds this open file description.
        let _ = rustix::fs::flock(&self.fd, rustix::fs::FlockOperation::Unlock);
    }
}

impl StepFiles {
    /// The working folder at `folder`: only this crate knows where it is.
    pub(crate) fn folder(folder: PathBuf) -> StepFiles {
        StepFiles {
            source: Source::Folder(Arc::new(folder)),
        }
    }

    /// A folder its caller owns and stages from, which is not a workspace's (a sandbox
    /// session's tree: an agent's view of its step's files).
    pub fn scratch_folder(folder: PathBuf) -> StepFiles {
        StepFiles::folder(folder)
    }

    /// These files, held in memory (protected paths are left out, as staging leaves them out
    /// of the working folder). Refused ([`Error::PathConflict`]) when one path is a file and
    /// also a folder of another: no folder can hold both.
    pub fn in_memory(
        files: impl IntoIterator<Item = (RelPath, Vec<u8>)>,
    ) -> Result<StepFiles, Error> {
        let files: BTreeMap<RelPath, Vec<u8>> = files
            .into_iter()
            .filter(|(path, _)| crate::is_protected(path).is_none())
            .collect();
        if let Some(inner) = files
            .keys()
            .find(|path| files.keys().any(|outer| is_beneath(path, Some(outer))))
        {
            return Err(Error::PathConflict {
                path: inner.to_string(),
                reason: "a file of the same snapshot stands where its folder would be".to_owned(),
            });
        }
        Ok(StepFiles {
            source: Source::Memory(Arc::new(files)),
        })
    }

    /// No files at all.
    pub fn empty() -> StepFiles {
        StepFiles {
            source: Source::Memory(Arc::new(BTreeMap::new())),
        }
    }

    /// Opens the snapshot for a backend to stage: the working folder under its shared lock,
    /// or the files in memory.
    pub fn open(&self) -> Result<Snapshot<'_>, Error> {
        match &self.source {
            Source::Memory(files) => Ok(Snapshot::Files(files)),
            Source::Folder(folder) => {
                let io = |operation| {
                    move |errno: rustix::io::Errno| Error::Io {
                        operation,
                        path: PathBuf::from("<the working folder>"),
                        source: errno.into(),
                    }
                };
                let fd = rustix::fs::open(
                    folder.as_path(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(io("open"))?;
                // Writers (`Workspace::commit`) hold the folder's lock exclusively while they
                // apply a revision; a snapshot holds it shared, so it never takes half of one.
                rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockShared)
                    .map_err(io("lock"))?;
                Ok(Snapshot::Folder(LockedFolder { fd }))
            }
        }
    }

    /// Reads the snapshot in place: what an agent's view and its colleagues stage from.
    pub fn reader(&self) -> Result<FilesReader, TreeError> {
        let read = match &self.source {
            Source::Folder(folder) => Read::Tree(Tree::open(folder)?),
            Source::Memory(files) => Read::Memory(Arc::clone(files)),
        };
        Ok(FilesReader { read })
    }
}

/// Reads a [`StepFiles`] snapshot: every path confined as [`Tree`] confines it. Opaque, so
/// that no caller learns where the working folder is.
pub struct FilesReader {
    read: Read,
}

enum Read {
    Tree(Tree),
    Memory(Arc<BTreeMap<RelPath, Vec<u8>>>),
}

impl FilesReader {
    /// What `path` is: `file`, `folder`, or what [`Tree::kind`] says.
    pub fn kind(&self, path: &RelPath) -> Result<&'static str, TreeError> {
        match &self.read {
            Read::Tree(tree) => tree.kind(path),
            Read::Memory(files) => {
                if files.contains_key(path) {
                    Ok("file")
                } else if files.keys().any(|file| is_beneath(file, Some(path))) {
                    Ok("folder")
                } else {
                    Err(TreeError::NotFound {
                        path: path.to_string(),
                    })
                }
            }
        }
    }

    /// At most `max` bytes of `path` from `offset`, and the file's whole size.
    pub fn read(&self, path: &RelPath, offset: u64, max: u64) -> Result<(Vec<u8>, u64), TreeError> {
        match &self.read {
            Read::Tree(tree) => tree.read(path, offset, max),
            Read::Memory(files) => {
                let Some(bytes) = files.get(path) else {
                    return Err(match self.kind(path) {
                        Ok(_) => TreeError::IsAFolder {
                            path: path.to_string(),
                        },
                        Err(error) => error,
                    });
                };
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                let end = start
                    .saturating_add(usize::try_from(max).unwrap_or(usize::MAX))
                    .min(bytes.len());
                Ok((bytes[start..end].to_vec(), bytes.len() as u64))
            }
        }
    }

    /// Every entry under `start` (all for `None`), sorted by path; at most `max_entries`
    /// (the second value says whether the walk was cut).
    pub fn walk(
        &self,
        start: Option<&RelPath>,
        max_entries: usize,
    ) -> Result<(Vec<TreeEntry>, bool), TreeError> {
        match &self.read {
            Read::Tree(tree) => tree.walk(start, max_entries),
            Read::Memory(files) => {
                // As a folder is walked: a start that is no folder is an error.
                if let Some(start) = start {
                    match self.kind(start)? {
                        "folder" => {}
                        _ => {
                            return Err(TreeError::NotAFile {
                                path: start.to_string(),
                                kind: "path through a file",
                            });
                        }
                    }
                }
                let mut entries: BTreeMap<RelPath, TreeEntry> = BTreeMap::new();
                for (path, bytes) in files.iter().filter(|(path, _)| is_beneath(path, start)) {
                    // The folders on the way, below `start`.
                    let components: Vec<&str> = path.components().collect();
                    let skip = start.map_or(0, RelPath::depth);
                    for depth in skip + 1..components.len() {
                        if let Ok(folder) = RelPath::parse(&components[..depth].join("/")) {
                            entries.entry(folder.clone()).or_insert(TreeEntry {
                                path: folder,
                                kind: "folder",
                                size: 0,
                            });
                        }
                    }
                    entries.insert(
                        path.clone(),
                        TreeEntry {
                            path: path.clone(),
                            kind: "file",
                            size: bytes.len() as u64,
                        },
                    );
                }
                let cut = entries.len() > max_entries;
                Ok((entries.into_values().take(max_entries).collect(), cut))
            }
        }
    }
}

/// Whether `path` lies strictly beneath `folder` (anything, for `None`).
fn is_beneath(path: &RelPath, folder: Option<&RelPath>) -> bool {
    folder.is_none_or(|folder| {
        path.as_str()
            .strip_prefix(folder.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// One path a step changed: what comes out of a backend's copy-back, and what the screen and
/// the revision commit take.
#[derive(Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: RelPath,
    pub change: Change,
}

impl FileChange {
    /// A new or changed file.
    pub fn write(path: RelPath, contents: Vec<u8>) -> FileChange {
        FileChange {
            path,
            change: Change::Write(contents),
        }
    }

    /// The new contents, or `None` for a deletion.
    pub fn contents(&self) -> Option<&[u8]> {
        match &self.change {
            Change::Write(contents) => Some(contents),
            Change::Delete => None,
        }
    }
}

impl std::fmt::Debug for FileChange {
    // Contents are not printed: they may be large, and a debug line is no place for them.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = formatter.debug_struct("FileChange");
        shown.field("path", &self.path);
        match &self.change {
            Change::Write(contents) => shown.field("bytes", &contents.len()),
            Change::Delete => shown.field("deleted", &true),
        };
        shown.finish()
    }
}

impl AsFd for LockedFolder {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
