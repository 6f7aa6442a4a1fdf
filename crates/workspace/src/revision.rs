//! The revision store (G25): every write to a workspace is a revision with an author.
//!
//! On disk, under the store's folder:
//! - `blobs/<sha256>`: file contents, content-addressed, each written to a temporary name,
//!   fsync'd, renamed into place, and the folder fsync'd;
//! - `revisions.log`: one JSON line per revision (id, parent, author, time, message, and each
//!   changed path with its blob hash or `null` for a deletion), appended and fsync'd only after
//!   every blob it names is durable. A torn last line (a crash mid-append) is cut off on open.
//!
//! A revision is all or nothing: every path and every content is checked (protected entries,
//! content holding a current secret, G19) before anything is written.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::path::RelPath;
use crate::protected::is_protected;

/// Tells whether some bytes hold a current secret value, in any encoding the redactor knows.
/// The caller builds it from the run's or the account's secret set; the revision store and
/// the sandbox's copy-back filter refuse content for which it answers `true`.
pub trait SecretScreen: Send + Sync {
    /// `true` when `content` holds a current secret value in any known encoding.
    fn holds_secret(&self, content: &[u8]) -> bool;

    /// What to do with an archive this screen cannot open: refused for the copy-back of a step
    /// that holds credentials, written otherwise (the default).
    fn unreadable_archives(&self) -> crate::UnreadableArchives {
        crate::UnreadableArchives::Accept
    }
}

/// Any `Fn(&[u8]) -> bool` screens, so a caller can hand in `&|content| redactor.holds_secret(content)`.
impl<F: Fn(&[u8]) -> bool + Send + Sync> SecretScreen for F {
    fn holds_secret(&self, content: &[u8]) -> bool {
        self(content)
    }
}

/// Who made a revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Author {
    /// A signed-in person.
    Person { id: String },
    /// An API key (never a person, G26).
    ApiKey { id: String },
    /// An agent acting through its file tools.
    Agent { name: String },
    /// A step of a run whose files were copied back.
    RunStep {
        run_id: ids::RunId,
        step: String,
        attempt: u32,
    },
    /// The command-line tool without a server, acting as an operating-system user.
    Cli { os_user: String },
    /// The platform's assistant, whose proposal the person `accepted_by` (a person's id, never
    /// a key: G26) accepted; only then is it written (issue 17 §2).
    Assistant { accepted_by: String },
    /// The platform itself: moving definitions from an older layout into the workspace.
    Platform { reason: String },
}

impl Author {
    /// Who, in words: `person p-1`, `API key k-1`, `the assistant, accepted by person p-1`.
    pub fn describe(&self) -> String {
        match self {
            Author::Person { id } => format!("person {id}"),
            Author::ApiKey { id } => format!("API key {id}"),
            Author::Agent { name } => format!("agent {name}"),
            Author::RunStep {
                run_id,
                step,
                attempt,
            } => format!("run {run_id} step {step} attempt {attempt}"),
            Author::Cli { os_user } => format!("command line ({os_user})"),
            Author::Assistant { accepted_by } => {
                format!("the assistant, accepted by person {accepted_by}")
            }
            Author::Platform { reason } => format!("the platform ({reason})"),
        }
    }
}

/// What a revision does to one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Create or replace the file with these contents.
    Write(Vec<u8>),
    /// Remove the file.
    Delete,
}

/// A revision's id: the SHA-256 of its log line's other fields, so it also seals its parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RevisionId(String);

impl RevisionId {
    /// The id as lower-case hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RevisionId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// One path changed by a revision, as recorded in the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// The path, relative to the workspace root.
    pub path: String,
    /// The SHA-256 (hex) of the new contents, or `None` for a deletion.
    pub blob: Option<String>,
}

/// One line of the revision log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// This revision's id.
    pub id: RevisionId,
    /// The revision before it, `None` for the first.
    pub parent: Option<RevisionId>,
    /// Who made it.
    pub author: Author,
    /// When, in milliseconds since the Unix epoch.
    pub unix_millis: u64,
    /// Why, in the author's words.
    pub message: String,
    /// What it changed, sorted by path.
    pub changes: Vec<ChangedPath>,
}

/// The fields hashed into a revision id, in a fixed order.
#[derive(Serialize)]
struct IdInput<'a> {
    parent: &'a Option<RevisionId>,
    author: &'a Author,
    unix_millis: u64,
    message: &'a str,
    changes: &'a [ChangedPath],
}

/// An on-disk, append-only store of revisions for one workspace.
pub struct RevisionStore {
    folder: PathBuf,
    // Serialises writers in this process; the log is also locked against other processes.
    writer: Mutex<()>,
}

const LOG_NAME: &str = "revisions.log";
const BLOBS_NAME: &str = "blobs";

impl RevisionStore {
    /// Opens (creating if needed) the store in `folder`, cutting off a torn last log line.
    pub fn open(folder: &Path) -> Result<RevisionStore, Error> {
        let blobs = folder.join(BLOBS_NAME);
        crate::account::private_dirs(&blobs).map_err(io_error("create", &blobs))?;
        let log_path = folder.join(LOG_NAME);
        // The folder is synced only when this open made the log: its name is then new.
        let made = !log_path.exists();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&log_path)
            .map_err(io_error("open", &log_path))?;
        log.lock().map_err(io_error("lock", &log_path))?;
        let complete = complete_length(&log, &log_path)?;
        let length = log
            .metadata()
            .map_err(io_error("inspect", &log_path))?
            .len();
        if complete != length {
            log.set_len(complete)
                .map_err(io_error("truncate", &log_path))?;
            log.sync_all().map_err(io_error("fsync", &log_path))?;
        }
        if made {
            sync_folder(folder)?;
        }
        Ok(RevisionStore {
            folder: folder.to_path_buf(),
            writer: Mutex::new(()),
        })
    }

    /// Records one revision. Refuses, writing nothing, if a path is protected, if a path
    /// appears twice, or if any new content holds a current secret according to `screen`.
    pub fn write(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
    ) -> Result<RevisionId, Error> {
        check(message, &changes, screen)?;
        self.append_checked(author, message, &changes, &content_hashes(&changes))
            .map(|revision| revision.id)
    }

    /// Appends a revision whose changes passed [`check`]; `hashes` are their
    /// [`content_hashes`].
    pub(crate) fn append_checked(
        &self,
        author: &Author,
        message: &str,
        changes: &[(RelPath, Change)],
        hashes: &[Option<String>],
    ) -> Result<Revision, Error> {
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let log_path = self.folder.join(LOG_NAME);
        let mut log = OpenOptions::new()
            .append(true)
            .read(true)
            .open(&log_path)
            .map_err(io_error("open", &log_path))?;
        log.lock().map_err(io_error("lock", &log_path))?;

        let mut recorded: Vec<ChangedPath> = Vec::with_capacity(changes.len());
        for ((path, change), hash) in changes.iter().zip(hashes) {
            let blob = match (change, hash) {
                (Change::Write(contents), Some(hash)) => Some(self.store_blob(hash, contents)?),
                _ => None,
            };
            recorded.push(ChangedPath {
                path: path.to_string(),
                blob,
            });
        }
        recorded.sort_by(|left, right| left.path.cmp(&right.path));
        sync_folder(&self.folder.join(BLOBS_NAME))?;

        // Only the last line is read: the log of a busy workspace grows without bound.
        let parent = read_tail(&log_path, 1)?.pop().map(|last| last.id);
        let unix_millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        let id_input = serde_json::to_vec(&IdInput {
            parent: &parent,
            author,
            unix_millis,
            message,
            changes: &recorded,
        })
        .map_err(|source| Error::Encode { source })?;
        let revision = Revision {
            id: RevisionId(hex::encode(Sha256::digest(&id_input))),
            parent,
            author: author.clone(),
            unix_millis,
            message: message.to_owned(),
            changes: recorded,
        };
        let mut line = serde_json::to_vec(&revision).map_err(|source| Error::Encode { source })?;
        line.push(b'\n');
        log.write_all(&line)
            .map_err(io_error("append", &log_path))?;
        log.sync_all().map_err(io_error("fsync", &log_path))?;
        Ok(revision)
    }

    /// Every revision, oldest first. Reads the whole log; [`RevisionStore::latest`] reads only
    /// its end.
    pub fn history(&self) -> Result<Vec<Revision>, Error> {
        read_log(&self.folder.join(LOG_NAME))
    }

    /// The last `count` revisions, newest first, reading the log from its end only.
    pub fn latest(&self, count: usize) -> Result<Vec<Revision>, Error> {
        let mut revisions = read_tail(&self.folder.join(LOG_NAME), count)?;
        revisions.reverse();
        Ok(revisions)
    }

    /// The contents of `path` as of revision `revision`, or `None` if it did not exist then.
    pub fn read(&self, revision: &RevisionId, path: &RelPath) -> Result<Option<Vec<u8>>, Error> {
        let history = self.history()?;
        let end = history
            .iter()
            .position(|candidate| &candidate.id == revision)
            .ok_or_else(|| Error::UnknownRevision {
                id: revision.to_string(),
            })?;
        let mut latest: Option<Option<String>> = None;
        for candidate in history[..=end].iter().rev() {
            if let Some(change) = candidate
                .changes
                .iter()
                .find(|change| change.path == path.as_str())
            {
                latest = Some(change.blob.clone());
                break;
            }
        }
        match latest.flatten() {
            Some(hash) => self.load_blob(&hash).map(Some),
            None => Ok(None),
        }
    }

    /// Every path that exists as of `revision`, with its blob hash.
    pub fn tree(&self, revision: &RevisionId) -> Result<BTreeMap<String, String>, Error> {
        let history = self.history()?;
        let end = history
            .iter()
            .position(|candidate| &candidate.id == revision)
            .ok_or_else(|| Error::UnknownRevision {
                id: revision.to_string(),
            })?;
        let mut tree = BTreeMap::new();
        for candidate in &history[..=end] {
            for change in &candidate.changes {
                match &change.blob {
                    Some(hash) => tree.insert(change.path.clone(), hash.clone()),
                    None => tree.remove(&change.path),
                };
            }
        }
        Ok(tree)
    }

    /// What the history holds now, charged as [`charged_bytes`]: every stored content and the
    /// log.
    pub(crate) fn stored_bytes(&self) -> Result<u64, Error> {
        let blobs = self.folder.join(BLOBS_NAME);
        let mut total = charged_bytes(
            fs::metadata(self.folder.join(LOG_NAME))
                .map_err(io_error("inspect", &self.folder.join(LOG_NAME)))?
                .len(),
        );
        for entry in fs::read_dir(&blobs).map_err(io_error("list", &blobs))? {
            let entry = entry.map_err(io_error("list", &blobs))?;
            total += charged_bytes(
                entry
                    .metadata()
                    .map_err(io_error("inspect", &entry.path()))?
                    .len(),
            );
        }
        Ok(total)
    }

    /// What recording `changes` adds to the history, charged as [`charged_bytes`]: each content
    /// not stored yet (once, however often it appears), and the log line's paths and message.
    pub(crate) fn bytes_to_store(
        &self,
        message: &str,
        changes: &[(RelPath, Change)],
        hashes: &[Option<String>],
    ) -> u64 {
        let blobs = self.folder.join(BLOBS_NAME);
        let mut seen = HashSet::new();
        let mut adding = message.len() as u64;
        for ((path, change), hash) in changes.iter().zip(hashes) {
            // A path, its hash and the JSON around them.
            adding += path.as_str().len() as u64 + 96;
            if let (Change::Write(contents), Some(hash)) = (change, hash)
                && !blobs.join(hash).exists()
                && seen.insert(hash)
            {
                adding += charged_bytes(contents.len() as u64);
            }
        }
        adding
    }

    /// Stores `contents` under its `hash` (from [`content_hashes`]) unless it is there already.
    pub(crate) fn store_blob(&self, hash: &str, contents: &[u8]) -> Result<String, Error> {
        let blobs = self.folder.join(BLOBS_NAME);
        let final_path = blobs.join(hash);
        if final_path.exists() {
            return Ok(hash.to_owned());
        }
        // Unique per call, not only per process: pins run beside each other under the folder's
        // shared lock, and two of them may store the same content at once.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temporary_path = blobs.join(format!(".{hash}.{}.{call}.tmp", std::process::id()));
        let mut file =
            File::create(&temporary_path).map_err(io_error("create", &temporary_path))?;
        file.write_all(contents)
            .map_err(io_error("write", &temporary_path))?;
        file.sync_all()
            .map_err(io_error("fsync", &temporary_path))?;
        fs::rename(&temporary_path, &final_path).map_err(io_error("rename", &final_path))?;
        Ok(hash.to_owned())
    }

    pub(crate) fn load_blob(&self, hash: &str) -> Result<Vec<u8>, Error> {
        let path = self.folder.join(BLOBS_NAME).join(hash);
        let contents = fs::read(&path).map_err(io_error("read", &path))?;
        if hex::encode(Sha256::digest(&contents)) != hash {
            return Err(Error::BlobMismatch {
                hash: hash.to_owned(),
            });
        }
        Ok(contents)
    }
}

/// Everything a revision must pass before any of it is written: at least one change, no path
/// twice, no protected path, and no current secret in the message, a path or a content (G19).
pub(crate) fn check(
    message: &str,
    changes: &[(RelPath, Change)],
    screen: &dyn SecretScreen,
) -> Result<(), Error> {
    if changes.is_empty() {
        return Err(Error::EmptyRevision);
    }
    // G19: the path and the message are written into the history as they are, so they are
    // screened like the contents.
    if screen.holds_secret(message.as_bytes()) {
        return Err(Error::MessageHoldsSecret);
    }
    let mut seen = HashSet::new();
    for (index, (path, change)) in changes.iter().enumerate() {
        if screen.holds_secret(path.as_str().as_bytes()) {
            return Err(Error::PathHoldsSecret { index });
        }
        if !seen.insert(path.as_str()) {
            return Err(Error::DuplicatePath {
                path: path.to_string(),
            });
        }
        if let Some(kind) = is_protected(path) {
            return Err(Error::Protected {
                path: path.to_string(),
                kind,
            });
        }
        if let Change::Write(contents) = change {
            match crate::screen_contents(screen, contents, screen.unreadable_archives()) {
                crate::Screened::Clean => {}
                crate::Screened::HoldsSecret { .. } => {
                    return Err(Error::HoldsSecret {
                        path: path.to_string(),
                    });
                }
                crate::Screened::Unscreenable { reason } => {
                    return Err(Error::Unscreenable {
                        path: path.to_string(),
                        reason,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The SHA-256 (hex) of each change's new content, `None` for a deletion: computed once per
/// commit, for the quota and for the blob store alike.
pub(crate) fn content_hashes(changes: &[(RelPath, Change)]) -> Vec<Option<String>> {
    changes
        .iter()
        .map(|(_, change)| match change {
            Change::Write(contents) => Some(hex::encode(Sha256::digest(contents))),
            Change::Delete => None,
        })
        .collect()
}

/// What a stored file costs against a quota: its length rounded up to whole 4 KiB blocks, and
/// at least one block, so a flood of tiny files is charged for the disk blocks and inodes it
/// really takes.
pub(crate) fn charged_bytes(length: u64) -> u64 {
    const BLOCK: u64 = 4096;
    length.div_ceil(BLOCK).max(1).saturating_mul(BLOCK)
}

/// How many bytes the log reads backwards at a time.
const TAIL_CHUNK: u64 = 64 * 1024;

/// The length of the log up to and including its last newline (a torn last line excluded),
/// found by reading backwards from the end.
fn complete_length(log: &File, log_path: &Path) -> Result<u64, Error> {
    let length = log.metadata().map_err(io_error("inspect", log_path))?.len();
    let mut end = length;
    let mut chunk = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(TAIL_CHUNK);
        read_range(log, log_path, start, end, &mut chunk)?;
        if let Some(newline) = chunk.iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + newline as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn read_range(
    log: &File,
    log_path: &Path,
    start: u64,
    end: u64,
    into: &mut Vec<u8>,
) -> Result<(), Error> {
    use std::os::unix::fs::FileExt;
    into.clear();
    into.resize(usize::try_from(end - start).unwrap_or(0), 0);
    log.read_exact_at(into, start)
        .map_err(io_error("read", log_path))
}

/// The last `count` complete revisions of the log, oldest first, read from its end: memory and
/// time grow with `count`, not with the log.
fn read_tail(log_path: &Path, count: usize) -> Result<Vec<Revision>, Error> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let log = File::open(log_path).map_err(io_error("open", log_path))?;
    let complete = complete_length(&log, log_path)?;
    let mut start = complete;
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = Vec::new();
    // Enough when the tail holds `count` whole lines: `count + 1` newlines, or the log's start.
    while start > 0 && tail.iter().filter(|byte| **byte == b'\n').count() <= count {
        let from = start.saturating_sub(TAIL_CHUNK);
        read_range(&log, log_path, from, start, &mut chunk)?;
        chunk.extend_from_slice(&tail);
        std::mem::swap(&mut tail, &mut chunk);
        start = from;
    }
    // Unless the log's start was reached, what comes before the first newline may be a cut
    // line: it is never parsed.
    let cut = usize::from(start > 0);
    let whole: Vec<&[u8]> = tail
        .split(|byte| *byte == b'\n')
        .skip(cut)
        .filter(|line| !line.is_empty())
        .collect();
    let skip = whole.len().saturating_sub(count);
    whole[skip..]
        .iter()
        .map(|line| {
            serde_json::from_slice(line).map_err(|source| Error::CorruptLog {
                path: log_path.to_path_buf(),
                line: 0,
                source,
            })
        })
        .collect()
}

fn read_log(log_path: &Path) -> Result<Vec<Revision>, Error> {
    let contents = fs::read(log_path).map_err(io_error("read", log_path))?;
    let mut revisions = Vec::new();
    // Only newline-terminated lines count: an unterminated tail is a write still in progress.
    let complete = contents
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(&contents[..0], |newline| &contents[..=newline]);
    for (index, line) in complete.split(|byte| *byte == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let revision = serde_json::from_slice(line).map_err(|source| Error::CorruptLog {
            path: log_path.to_path_buf(),
            line: index + 1,
            source,
        })?;
        revisions.push(revision);
    }
    Ok(revisions)
}

pub(crate) fn sync_folder(folder: &Path) -> Result<(), Error> {
    File::open(folder)
        .and_then(|handle| handle.sync_all())
        .map_err(io_error("fsync", folder))
}

pub(crate) fn io_error(
    operation: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        operation,
        path,
        source,
    }
}
