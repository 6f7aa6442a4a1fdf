//! Pinning definitions for a run (issue 16 §1): the exact bytes of the folders a run can reach
//! (its agents, their colleagues, their scripts), taken when the run starts, kept by content
//! hash in the revision store's blobs, and read back by hash however the working folder changes
//! afterwards.
//!
//! A [`PinSession`] holds the working folder's lock shared (as staging a step does), so every
//! folder pinned in one session is seen at one moment: no writer's revision lands half inside.
//! Files are read through [`crate::Tree`] (beneath the folder, never through a link); a link or
//! anything else that is not a regular file is not pinned. Each content is stored in the blob
//! store before its hash is handed out, so a recorded pin always names bytes that exist.

use std::collections::BTreeMap;
use std::fs::File;

use sha2::{Digest, Sha256};

use crate::Error;
use crate::account::Workspace;
use crate::path::RelPath;
use crate::revision::{RevisionId, RevisionStore, io_error};
use crate::tree::{Tree, TreeError};

/// The most files one pinned folder may hold; beyond it the pin is refused (never partial).
pub const MAX_PINNED_FILES: usize = 4_096;
/// The most bytes one pinned folder may hold.
pub const MAX_PINNED_BYTES: u64 = 64 * 1024 * 1024;

/// Why a folder could not be pinned.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Store(#[from] Error),
    #[error("the folder {folder} cannot be read: {reason}")]
    Unreadable { folder: String, reason: TreeError },
    #[error(
        "the folder {folder} holds more than {MAX_PINNED_FILES} files or {MAX_PINNED_BYTES} \
         bytes, too many to pin for a run; move data out of the agent's folder into `shared/`"
    )]
    TooLarge { folder: String },
}

/// The working folder seen at one moment, for pinning.
pub struct PinSession<'a> {
    _workspace: &'a Workspace,
    store: std::sync::Arc<dyn RevisionStore>,
    tree: Tree,
    _lock: File,
}

impl Workspace {
    /// Starts pinning: holds the working folder's lock shared until the session is dropped.
    pub fn pin_session(&self) -> Result<PinSession<'_>, Error> {
        let store = self.revisions()?;
        let lock = File::open(&self.files).map_err(io_error("open", &self.files))?;
        lock.lock_shared().map_err(io_error("lock", &self.files))?;
        let tree = Tree::open(&self.files).map_err(|error| Error::Io {
            operation: "open",
            path: self.files.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        Ok(PinSession {
            _workspace: self,
            store,
            tree,
            _lock: lock,
        })
    }

    /// The bytes a pin recorded under `hash` (checked against it: a damaged store is an error).
    pub fn pinned_bytes(&self, hash: &str) -> Result<Vec<u8>, Error> {
        if !crate::revision::is_hash(hash) {
            return Err(Error::BlobMismatch {
                hash: hash.to_owned(),
            });
        }
        self.revisions()?.blob(hash)
    }

    /// The newest revision's id, `None` for an empty history.
    pub fn head(&self) -> Result<Option<RevisionId>, Error> {
        Ok(self.latest(1)?.pop().map(|revision| revision.id))
    }
}

impl PinSession<'_> {
    /// The newest revision as this session sees it.
    pub fn head(&self) -> Result<Option<RevisionId>, Error> {
        self.store.head()
    }

    /// The bytes a pin of this session recorded under `hash` (checked against it), read from
    /// the store the session holds: a pin never opens the store again while it holds the
    /// working folder.
    pub fn pinned_bytes(&self, hash: &str) -> Result<Vec<u8>, Error> {
        self.store.blob(hash)
    }

    /// Every regular file under `folder` (workspace paths) with the SHA-256 of its contents,
    /// each stored in the blob store. An absent folder pins as empty.
    pub fn pin_folder(&self, folder: &RelPath) -> Result<BTreeMap<String, String>, PinError> {
        let unreadable = |reason| PinError::Unreadable {
            folder: folder.to_string(),
            reason,
        };
        match self.tree.kind(folder) {
            Ok("folder") => {}
            Ok(_) | Err(TreeError::NotFound { .. }) => return Ok(BTreeMap::new()),
            Err(error) => return Err(unreadable(error)),
        }
        let (entries, cut) = self
            .tree
            .walk(Some(folder), MAX_PINNED_FILES * 2)
            .map_err(unreadable)?;
        let files: Vec<_> = entries
            .iter()
            .filter(|entry| entry.kind == "file")
            .collect();
        let total: u64 = files.iter().map(|entry| entry.size).sum();
        if cut || files.len() > MAX_PINNED_FILES || total > MAX_PINNED_BYTES {
            return Err(PinError::TooLarge {
                folder: folder.to_string(),
            });
        }
        let mut pinned = BTreeMap::new();
        for entry in files {
            let (bytes, size) = self
                .tree
                .read(&entry.path, 0, MAX_PINNED_BYTES)
                .map_err(unreadable)?;
            if size > MAX_PINNED_BYTES {
                return Err(PinError::TooLarge {
                    folder: folder.to_string(),
                });
            }
            let hash = hex::encode(Sha256::digest(&bytes));
            self.store.put_blob(&hash, &bytes)?;
            pinned.insert(entry.path.to_string(), hash);
        }
        self.store.sync_blobs()?;
        Ok(pinned)
    }
}
