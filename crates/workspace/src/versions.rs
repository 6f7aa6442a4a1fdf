//! The versions of one file (issue 17 §3): the revision log filtered to that path. Every
//! revision that writes the path is its next version (1, 2, 3, ...), with the revision's
//! author and time; a deletion is no version, and a file written again after one goes on
//! counting. The versions are not stored apart from the history, so no version can exist
//! without the revision that wrote it, nor a write of the file without its version.

use crate::Error;
use crate::account::Workspace;
use crate::path::RelPath;
use crate::revision::{Author, RevisionId};

/// One version of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVersion {
    /// 1 for the first write of the path.
    pub number: u32,
    /// The revision that wrote it.
    pub revision: RevisionId,
    pub author: Author,
    /// When, in milliseconds since the Unix epoch.
    pub unix_millis: u64,
    /// The revision's message.
    pub message: String,
    /// The SHA-256 (hex) of the text.
    pub blob: String,
}

impl Workspace {
    /// Every version of `path`, oldest first.
    pub fn file_versions(&self, path: &RelPath) -> Result<Vec<FileVersion>, Error> {
        let history = self.revisions()?.history()?;
        let mut versions = Vec::new();
        for revision in history {
            let Some(blob) = revision
                .changes
                .iter()
                .find(|change| change.path == path.as_str())
                .and_then(|change| change.blob.clone())
            else {
                continue;
            };
            versions.push(FileVersion {
                number: u32::try_from(versions.len() + 1).unwrap_or(u32::MAX),
                revision: revision.id,
                author: revision.author,
                unix_millis: revision.unix_millis,
                message: revision.message,
                blob,
            });
        }
        Ok(versions)
    }

    /// Version `number` of `path` and its bytes; `None` when there is no such version.
    pub fn file_version(
        &self,
        path: &RelPath,
        number: u32,
    ) -> Result<Option<(FileVersion, Vec<u8>)>, Error> {
        let Some(version) = self
            .file_versions(path)?
            .into_iter()
            .find(|version| version.number == number)
        else {
            return Ok(None);
        };
        let bytes = self.revisions()?.blob(&version.blob)?;
        Ok(Some((version, bytes)))
    }
}
