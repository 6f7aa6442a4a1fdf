//! Workspace paths: confinement, protected entries, did-you-mean suggestions, revisions with
//! authors.
//!
//! This crate is pure path logic plus a small on-disk revision store. It knows nothing about
//! sandboxes: the copy-back filter, the agent file tools and the revision writer all ask it the
//! same questions ("is this path inside?", "is it protected?", "what did they mean?") so that
//! the answers cannot drift apart between those callers.

#![forbid(unsafe_code)]

mod account;
mod files;
mod folder;
mod path;
mod pin;
mod protected;
mod revision;
mod screen;
mod step_writers;
mod suggest;
mod tree;
mod versions;

// The path, protection and revision types are the crate's whole vocabulary; every caller needs
// them, so they are exported at the root rather than behind module paths.
pub use crate::account::{
    CommitFence, DEFAULT_QUOTA_BYTES, FileContents, FolderRevisionStores, ListedFile, Listing,
    MAX_LISTED_ENTRIES, MemoryRevisionStores, RevisionStores, Workspace, Workspaces, WriteInFlight,
};
pub use crate::files::{FileChange, FilesReader, LockedFolder, Snapshot, StepFiles};
pub use crate::folder::apply_to_folder;
pub use crate::path::{
    MAX_COMPONENT_BYTES, MAX_DEPTH, MAX_PATH_BYTES, Refusal, RefusalReason, RelPath, confine,
    confine_suggesting, escape_forbidden, is_forbidden_in_names,
};
pub use crate::pin::{MAX_PINNED_BYTES, MAX_PINNED_FILES, PinError, PinSession};
pub use crate::protected::{ProtectedKind, is_protected};
pub use crate::revision::{
    Author, Change, ChangedPath, FolderRevisions, MemoryRevisions, Revision, RevisionId,
    RevisionStore, SecretScreen, StoreLease,
};
pub use crate::screen::{
    MAX_ARCHIVE_DEPTH, MAX_INFLATED_BYTES, Screened, UnreadableArchives, screen_contents,
};
pub use crate::step_writers::{AgentView, StepWriteRefusal, StepWriterRules};
pub use crate::suggest::did_you_mean;
pub use crate::tree::{Tree, TreeEntry, TreeError};
pub use crate::versions::FileVersion;

use std::path::PathBuf;

/// Everything that can go wrong in the revision store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation on the workspace (its folder or its revision store) failed.
    #[error("workspace: {operation} {path}")]
    Io {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A revision tried to write a protected entry (the secrets file, the journal, an index).
    #[error("refused to write {path}: it is {kind}, which no revision may change")]
    Protected { path: String, kind: ProtectedKind },
    /// A revision's content holds a current secret value; nothing of the revision was written.
    #[error(
        "refused to write {path}: its content holds a current secret value (secrets are never \
         written into a workspace)"
    )]
    HoldsSecret { path: String },
    /// A path of the revision holds a current secret value; the path itself is not repeated
    /// here, so the error can be shown without leaking it. Nothing was written.
    #[error(
        "refused to write change {index} of the revision: its path holds a current secret value \
         (secrets are never written into a workspace)"
    )]
    PathHoldsSecret { index: usize },
    /// A content cannot be fully checked for credentials (it inflates past the bound, or it is
    /// an archive the screen cannot open from a writer that holds credentials).
    #[error("refused to write {path}: {reason}; nothing of the revision was written")]
    Unscreenable { path: String, reason: String },
    /// The revision's message holds a current secret value; nothing was written.
    #[error(
        "refused to write the revision: its message holds a current secret value (secrets are \
         never written into a workspace)"
    )]
    MessageHoldsSecret,
    /// A revision without any change.
    #[error("a revision needs at least one change")]
    EmptyRevision,
    /// A revision whose parent is not the store's newest revision: another writer appended
    /// first. Nothing was written.
    #[error(
        "revision {id} does not follow the newest revision of its workspace: nothing was written"
    )]
    NotHead { id: String },
    /// An append under a lease that another store gave. Nothing was written.
    #[error("a revision was appended under another store's lease: nothing was written")]
    ForeignLease,
    /// A step's change whose attempt is no longer current (its worker lost its lease, and the
    /// attempt was judged without it): nothing was written.
    #[error(
        "the change comes from attempt {attempt}, which is no longer current (its worker lost          its lease): nothing was written"
    )]
    Fenced { attempt: u32 },
    /// The same path appears twice in one revision.
    #[error("the path {path} appears twice in one revision")]
    DuplicatePath { path: String },
    /// A line of the revision log cannot be parsed.
    #[error("revision log {path} line {line} is corrupt")]
    CorruptLog {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    /// A revision id that is not in the log.
    #[error("no revision with id {id}")]
    UnknownRevision { id: String },
    /// A stored blob whose content no longer matches its hash.
    #[error("blob {hash} does not match its content hash: the store is damaged")]
    BlobMismatch { hash: String },
    /// A change that does not fit the working folder's layout (a file where a folder is
    /// needed, a folder where the file goes, a link on the way). Nothing was written.
    #[error("cannot write {path}: {reason}")]
    PathConflict { path: String, reason: String },
    /// The revision would take the account's history beyond its quota. Nothing was written.
    #[error(
        "the workspace's history holds {used} bytes of its {quota}, and this revision would add \
         {adding}: nothing was written (the history keeps every revision, so deleting files frees \
         nothing; the operator can raise the quota with --workspace-quota-mib)"
    )]
    QuotaExceeded { used: u64, adding: u64, quota: u64 },
    /// A file changed since the writer read it ([`Workspace::commit_expecting`]). Nothing was
    /// written.
    #[error(
        "{path} changed since this change was made from it, so nothing was written; start again \
         from its current version"
    )]
    Changed { path: String },
    /// A deletion of a path that is not a file of the working folder. Nothing was written.
    #[error("cannot delete {path}: there is no such file in the workspace")]
    NoSuchFile { path: String },
    /// The server's own audit chain, which is no account and has no workspace.
    #[error("the server's own audit chain has no workspace: name an account")]
    ServerChain,
    /// Serialising a revision line failed.
    #[error("cannot encode revision")]
    Encode {
        #[source]
        source: serde_json::Error,
    },
}
