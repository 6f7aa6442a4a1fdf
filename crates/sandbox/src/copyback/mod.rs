//! The copy-back filter (G12): which files a finished step may return to the workspace.
//!
//! Two halves around a sandbox run:
//! - [`stage_in`] copies the agent's folder into an empty scratch folder (regular files and
//!   folders only, never following links, owned by the sandbox user) and records a
//!   [`Manifest`] of what it copied; protected entries (`.secrets`, `.journal/`,
//!   `knowledge/*/index/`) are never copied, so the sandbox never sees them.
//! - [`collect`] walks the scratch folder after every sandbox process is dead and returns the
//!   new or changed files that pass every rule, and a [`Refusal`] with a reason for each one
//!   that does not. The scratch folder is treated as hostile anyway: it is walked with `openat`
//!   relative to already-open folder descriptors, `O_NOFOLLOW` on every component, and each
//!   decision is taken on `fstat` of the descriptor actually opened, so a link or a swapped
//!   entry cannot redirect a read outside the folder.
//!
//! A file whose contents hold a current secret value is refused, never edited (G12, G19): the
//! [`SecretScreen`] is built by the caller from the run's redactor, so it covers every encoding
//! the redactor knows.

mod collect;
mod stage;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use workspace::RelPath;

pub use crate::copyback::collect::collect;
pub use crate::copyback::stage::stage_in;
// One screen type serves the revision store and the copy-back filter, so a caller builds it
// once from the redactor and hands the same value to both.
pub use workspace::SecretScreen;

/// Everything that stops staging or collection as a whole (as opposed to one file's refusal).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation failed.
    #[error("copy-back: {operation} {path}")]
    Io {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The scratch folder given to [`stage_in`] already holds entries.
    #[error("copy-back: the scratch folder {path} is not empty")]
    ScratchNotEmpty { path: PathBuf },
}

impl Error {
    fn io(
        operation: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(rustix::io::Errno) -> Error {
        let path = path.to_path_buf();
        move |errno| Error::Io {
            operation,
            path,
            source: errno.into(),
        }
    }
}

/// What [`stage_in`] copied into the scratch folder: each file's path, size and content hash,
/// and each entry it deliberately left out.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    files: BTreeMap<RelPath, ManifestEntry>,
    skipped: Vec<Refusal>,
}

/// One file staged into the scratch folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The file's path relative to the folder.
    pub path: RelPath,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its contents.
    pub sha256: [u8; 32],
}

impl Manifest {
    /// The staged file at `path`, if any.
    pub fn get(&self, path: &RelPath) -> Option<&ManifestEntry> {
        self.files.get(path)
    }

    /// Every staged file, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.files.values()
    }

    /// How many files were staged.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file was staged.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The entries left out of the scratch folder and why (protected paths, links, devices).
    pub fn skipped(&self) -> &[Refusal] {
        &self.skipped
    }
}

/// The caps of the copy-back filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyBackPolicy {
    /// The largest single file that may come back, in bytes.
    pub max_file_bytes: u64,
    /// The most bytes that may come back from one step, all files together.
    pub max_total_bytes: u64,
    /// The most new or changed files that may come back from one step.
    pub max_files: usize,
    /// The most path components a returned file may have.
    pub max_depth: usize,
}

impl Default for CopyBackPolicy {
    fn default() -> Self {
        CopyBackPolicy {
            max_file_bytes: 8 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_files: 1000,
            max_depth: 16,
        }
    }
}

/// A new or changed file that passed every rule: the workspace's [`workspace::FileChange`],
/// the list the copy-back screen and the revision commit take (issue 39).
pub use workspace::FileChange;

/// One entry the filter refused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The entry's path relative to the folder, as found (lossy if not UTF-8).
    pub path: String,
    /// The rule it broke.
    pub reason: RefusalReason,
}

/// The rule a refused entry broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// A fifo, socket, character or block device (named in `kind`).
    NotRegularFile { kind: &'static str },
    /// A symbolic link, or a file with more than one hard link.
    SymlinkOrHardlink,
    /// A file with the set-user-id or set-group-id bit.
    SetIdBits,
    /// An entry that lies on another filesystem than the folder (a mount point).
    OutsideFolder,
    /// The secrets file, the journal or a knowledge index.
    ProtectedPath { kind: workspace::ProtectedKind },
    /// A file over the per-file cap.
    TooLarge { size: u64, cap: u64 },
    /// A file that would take the step's total over its cap.
    TotalTooLarge { total: u64, cap: u64 },
    /// More new or changed files (or entries in all) than the cap.
    TooMany { cap: usize },
    /// An entry deeper than the cap.
    TooDeep { depth: usize, cap: usize },
    /// A file whose contents hold a current secret value in some encoding (also inside a
    /// compressed file or an archive member).
    HoldsSecret,
    /// A file the screen cannot fully check: it inflates past the bound, or it is an archive
    /// the screen cannot open from a step that holds credentials.
    Unscreenable { reason: String },
    /// A name that is not a valid workspace path component (not UTF-8, too long).
    BadName { detail: String },
    /// An entry that could not be read.
    Unreadable { detail: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} was not copied back: {}",
            self.path, self.reason
        )
    }
}

/// The reason alone, without the path: a record that withholds a path (one that holds a
/// credential value) must not repeat it in the reason.
impl fmt::Display for RefusalReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusalReason::NotRegularFile { kind } => {
                write!(
                    formatter,
                    "it is a {kind}, and only regular files come back."
                )
            }
            RefusalReason::SymlinkOrHardlink => write!(
                formatter,
                "it is a symbolic link or a hard link, which could point outside the folder."
            ),
            RefusalReason::SetIdBits => {
                write!(formatter, "it has the set-user-id or set-group-id bit.")
            }
            RefusalReason::OutsideFolder => {
                write!(
                    formatter,
                    "it lies outside the folder (another filesystem)."
                )
            }
            RefusalReason::ProtectedPath { kind } => {
                write!(formatter, "it is {kind}, which a step may never write.")
            }
            RefusalReason::TooLarge { size, cap } => write!(
                formatter,
                "it is {size} bytes, over the limit of {cap} bytes per file."
            ),
            RefusalReason::TotalTooLarge { total, cap } => write!(
                formatter,
                "with it the step would return {total} bytes, over the limit of {cap} bytes."
            ),
            RefusalReason::TooMany { cap } => write!(
                formatter,
                "the step left more than {cap} new or changed entries."
            ),
            RefusalReason::TooDeep { depth, cap } => write!(
                formatter,
                "it is {depth} folders deep, over the limit of {cap}."
            ),
            RefusalReason::HoldsSecret => write!(
                formatter,
                "it holds the value of a current secret; it was refused, not edited."
            ),
            RefusalReason::Unscreenable { reason } => write!(formatter, "{reason}."),
            RefusalReason::BadName { detail } => {
                write!(formatter, "its name cannot be a workspace path ({detail}).")
            }
            RefusalReason::Unreadable { detail } => {
                write!(formatter, "it could not be read ({detail}).")
            }
        }
    }
}

/// What a finished step returns to the workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyBack {
    /// New or changed files that passed every rule.
    pub files: Vec<FileChange>,
    /// Staged files the step removed (only where their folder was fully walked).
    pub deleted: Vec<RelPath>,
    /// Every entry refused, with its reason.
    pub refusals: Vec<Refusal>,
}

/// Names a file type for a refusal.
fn kind_name(file_type: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType;
    match file_type {
        FileType::RegularFile => "regular file",
        FileType::Directory => "folder",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}
