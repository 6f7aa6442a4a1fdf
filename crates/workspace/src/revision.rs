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

/// Where one workspace's revisions live (issue 39): the revision log, the content-addressed
/// blobs (a run's pinned definitions are blobs too), and the workspace's write lease. The
/// host-folder store ([`FolderRevisions`]) and the in-memory one ([`MemoryRevisions`])
/// implement it today; a Postgres or object store adds an implementation, and the conformance
/// suite (`tests/it/revision_store.rs`) is written once and runs against each.
///
/// All synchronous and `&self`, like every storage port. The required methods are the store's;
/// the provided ones ([`RevisionStore::write`], [`RevisionStore::record`],
/// [`RevisionStore::read`], [`RevisionStore::tree`]) are the same for every store.
pub trait RevisionStore: Send + Sync {
    /// Takes the workspace's write lease: one writer at a time, in any process that shares the
    /// store, until the lease is dropped. Waits for the writer holding it.
    fn lease(&self) -> Result<StoreLease<'_>, Error>;

    /// Every revision, oldest first.
    fn history(&self) -> Result<Vec<Revision>, Error>;

    /// The last `count` revisions, newest first; a store reads only what it needs of them.
    fn latest(&self, count: usize) -> Result<Vec<Revision>, Error>;

    /// Whether the blob `hash` is stored.
    fn has_blob(&self, hash: &str) -> Result<bool, Error>;

    /// Stores `contents` under `hash` (its SHA-256, hex) unless it is there already; durable
    /// only once [`RevisionStore::sync_blobs`] returns.
    fn put_blob(&self, hash: &str, contents: &[u8]) -> Result<(), Error>;

    /// Makes every blob stored so far durable.
    fn sync_blobs(&self) -> Result<(), Error>;

    /// The bytes stored under `hash`, checked against it: a damaged store is
    /// [`Error::BlobMismatch`].
    fn blob(&self, hash: &str) -> Result<Vec<u8>, Error>;

    /// Appends `revision`, whose blobs are stored and synced, under `lease`; durable when it
    /// returns. Refused ([`Error::NotHead`]) unless its parent is the newest revision.
    fn append(&self, lease: &StoreLease<'_>, revision: &Revision) -> Result<(), Error>;

    /// What the history holds, charged as [`charged_bytes`]: every blob and the log.
    fn stored_bytes(&self) -> Result<u64, Error>;

    /// The newest revision's id, `None` for an empty history.
    fn head(&self) -> Result<Option<RevisionId>, Error> {
        Ok(self.latest(1)?.pop().map(|revision| revision.id))
    }

    /// Records one revision. Refuses, writing nothing, if a path is protected, if a path
    /// appears twice, or if any new content holds a current secret according to `screen`.
    fn write(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
    ) -> Result<RevisionId, Error> {
        check(message, &changes, screen)?;
        let lease = self.lease()?;
        self.record(&lease, author, message, &changes, &content_hashes(&changes))
            .map(|revision| revision.id)
    }

    /// Appends a revision whose changes passed [`check`] under `lease`; `hashes` are their
    /// [`content_hashes`]. Every blob it names is durable before the revision is appended.
    fn record(
        &self,
        lease: &StoreLease<'_>,
        author: &Author,
        message: &str,
        changes: &[(RelPath, Change)],
        hashes: &[Option<String>],
    ) -> Result<Revision, Error> {
        let mut recorded: Vec<ChangedPath> = Vec::with_capacity(changes.len());
        for ((path, change), hash) in changes.iter().zip(hashes) {
            let blob = match (change, hash) {
                (Change::Write(contents), Some(hash)) => {
                    self.put_blob(hash, contents)?;
                    Some(hash.clone())
                }
                _ => None,
            };
            recorded.push(ChangedPath {
                path: path.to_string(),
                blob,
            });
        }
        recorded.sort_by(|left, right| left.path.cmp(&right.path));
        self.sync_blobs()?;
        let revision = seal(self.head()?, author, message, recorded)?;
        self.append(lease, &revision)?;
        Ok(revision)
    }

    /// The contents of `path` as of revision `revision`, or `None` if it did not exist then.
    fn read(&self, revision: &RevisionId, path: &RelPath) -> Result<Option<Vec<u8>>, Error> {
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
            Some(hash) => self.blob(&hash).map(Some),
            None => Ok(None),
        }
    }

    /// Every path that exists as of `revision`, with its blob hash.
    fn tree(&self, revision: &RevisionId) -> Result<BTreeMap<String, String>, Error> {
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

    /// What recording `changes` adds to the history, charged as [`charged_bytes`]: each content
    /// not stored yet (once, however often it appears), and the log line's paths and message.
    fn bytes_to_store(
        &self,
        message: &str,
        changes: &[(RelPath, Change)],
        hashes: &[Option<String>],
    ) -> Result<u64, Error> {
        let mut seen = HashSet::new();
        let mut adding = message.len() as u64;
        for ((path, change), hash) in changes.iter().zip(hashes) {
            // A path, its hash and the JSON around them.
            adding += path.as_str().len() as u64 + 96;
            if let (Change::Write(contents), Some(hash)) = (change, hash)
                && seen.insert(hash)
                && !self.has_blob(hash)?
            {
                adding += charged_bytes(contents.len() as u64);
            }
        }
        Ok(adding)
    }
}

/// A writer's hold on a workspace ([`RevisionStore::lease`]), let go when dropped. It names
/// the store that gave it: [`RevisionStore::append`] takes no other store's.
pub struct StoreLease<'a> {
    _held: Box<dyn Held + 'a>,
    owner: usize,
}

impl<'a> StoreLease<'a> {
    /// The lease `store` gives, held as long as `held` lives: what a store's
    /// [`RevisionStore::lease`] returns.
    pub fn holding<S: ?Sized>(store: &'a S, held: impl Send + 'a) -> StoreLease<'a> {
        StoreLease {
            _held: Box::new(held),
            owner: owner_of(store),
        }
    }

    /// Refused ([`Error::ForeignLease`]) unless `store` gave this lease.
    pub fn check_owner<S: ?Sized>(&self, store: &S) -> Result<(), Error> {
        if self.owner == owner_of(store) {
            Ok(())
        } else {
            Err(Error::ForeignLease)
        }
    }
}

/// Which store a lease belongs to: the store value's address, for as long as it lives.
fn owner_of<S: ?Sized>(store: &S) -> usize {
    std::ptr::from_ref(store).cast::<()>() as usize
}

/// Anything a lease keeps alive.
trait Held {}
impl<T> Held for T {}

/// The revision `changes` by `author` make on top of `parent`, its id sealing them all.
pub(crate) fn seal(
    parent: Option<RevisionId>,
    author: &Author,
    message: &str,
    changes: Vec<ChangedPath>,
) -> Result<Revision, Error> {
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
        changes: &changes,
    })
    .map_err(|source| Error::Encode { source })?;
    Ok(Revision {
        id: RevisionId(hex::encode(Sha256::digest(&id_input))),
        parent,
        author: author.clone(),
        unix_millis,
        message: message.to_owned(),
        changes,
    })
}

/// The host-folder revision store: on disk, under its folder, `blobs/<sha256>` and
/// `revisions.log` (see the module's words). Its lease is the log's own `flock`, held against
/// every other writer of any process.
pub struct FolderRevisions {
    folder: PathBuf,
}

const LOG_NAME: &str = "revisions.log";
const BLOBS_NAME: &str = "blobs";

impl FolderRevisions {
    /// Opens (creating if needed) the store in `folder`, cutting off a torn last log line.
    pub fn open(folder: &Path) -> Result<FolderRevisions, Error> {
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
        // A torn last line is cut here only when no writer holds the lease: opening never
        // waits (a pin opens the store while it holds the working folder, which a writer may
        // be waiting for), and a writer cuts it itself before it appends.
        match log.try_lock() {
            Ok(()) => cut_torn_line(&log, &log_path)?,
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(source)) => {
                return Err(io_error("lock", &log_path)(source));
            }
        }
        drop(log);
        if made {
            sync_folder(folder)?;
        }
        Ok(FolderRevisions {
            folder: folder.to_path_buf(),
        })
    }

    fn log_path(&self) -> PathBuf {
        self.folder.join(LOG_NAME)
    }
}

impl RevisionStore for FolderRevisions {
    fn lease(&self) -> Result<StoreLease<'_>, Error> {
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .append(true)
            .read(true)
            .open(&log_path)
            .map_err(io_error("open", &log_path))?;
        log.lock().map_err(io_error("lock", &log_path))?;
        Ok(StoreLease::holding(self, log))
    }

    fn history(&self) -> Result<Vec<Revision>, Error> {
        read_log(&self.log_path())
    }

    fn latest(&self, count: usize) -> Result<Vec<Revision>, Error> {
        let mut revisions = read_tail(&self.log_path(), count)?;
        revisions.reverse();
        Ok(revisions)
    }

    fn has_blob(&self, hash: &str) -> Result<bool, Error> {
        Ok(is_hash(hash) && self.folder.join(BLOBS_NAME).join(hash).exists())
    }

    fn put_blob(&self, hash: &str, contents: &[u8]) -> Result<(), Error> {
        checked_blob(hash, contents)?;
        let blobs = self.folder.join(BLOBS_NAME);
        let final_path = blobs.join(hash);
        if final_path.exists() {
            return Ok(());
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
        Ok(())
    }

    fn sync_blobs(&self) -> Result<(), Error> {
        sync_folder(&self.folder.join(BLOBS_NAME))
    }

    fn blob(&self, hash: &str) -> Result<Vec<u8>, Error> {
        if !is_hash(hash) {
            return Err(Error::BlobMismatch {
                hash: hash.to_owned(),
            });
        }
        let path = self.folder.join(BLOBS_NAME).join(hash);
        let contents = fs::read(&path).map_err(io_error("read", &path))?;
        checked_blob(hash, &contents)?;
        Ok(contents)
    }

    fn append(&self, lease: &StoreLease<'_>, revision: &Revision) -> Result<(), Error> {
        lease.check_owner(self)?;
        let log_path = self.log_path();
        // The lease holds the log's lock; these handles read and append under it.
        let mut log = OpenOptions::new()
            .append(true)
            .read(true)
            .open(&log_path)
            .map_err(io_error("open", &log_path))?;
        cut_torn_line(&log, &log_path)?;
        let head = read_tail(&log_path, 1)?.pop().map(|last| last.id);
        if head != revision.parent {
            return Err(Error::NotHead {
                id: revision.id.to_string(),
            });
        }
        let mut line = serde_json::to_vec(revision).map_err(|source| Error::Encode { source })?;
        line.push(b'\n');
        log.write_all(&line)
            .map_err(io_error("append", &log_path))?;
        log.sync_all().map_err(io_error("fsync", &log_path))
    }

    fn stored_bytes(&self) -> Result<u64, Error> {
        let blobs = self.folder.join(BLOBS_NAME);
        let mut total = charged_bytes(
            fs::metadata(self.log_path())
                .map_err(io_error("inspect", &self.log_path()))?
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
}

/// Refused ([`Error::BlobMismatch`]) unless `hash` is the SHA-256 of `contents`: a blob is
/// stored only under its own name, never under a name a caller made up, and one read back
/// that no longer matches its name is a damaged store.
fn checked_blob(hash: &str, contents: &[u8]) -> Result<(), Error> {
    if is_hash(hash) && hex::encode(Sha256::digest(contents)) == hash {
        Ok(())
    } else {
        Err(Error::BlobMismatch {
            hash: hash.chars().take(64).collect(),
        })
    }
}

/// Cuts a torn last line (a crash mid-append) off the log, under its lock.
fn cut_torn_line(log: &File, log_path: &Path) -> Result<(), Error> {
    let complete = complete_length(log, log_path)?;
    let length = log.metadata().map_err(io_error("inspect", log_path))?.len();
    if complete != length {
        log.set_len(complete)
            .map_err(io_error("truncate", log_path))?;
        log.sync_all().map_err(io_error("fsync", log_path))?;
    }
    Ok(())
}

/// Whether `hash` is a SHA-256 in lower-case hex: the only names a blob has.
pub(crate) fn is_hash(hash: &str) -> bool {
    hash.len() == 64
        && hash
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The in-memory revision store: what the conformance suite runs against beside the folder
/// store, and what a test of everything above the port can use. Its lease is a flag under a
/// mutex, waited for on a condition variable.
#[derive(Default)]
pub struct MemoryRevisions {
    state: Mutex<MemoryState>,
    leased: Mutex<bool>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct MemoryState {
    log: Vec<Revision>,
    blobs: std::collections::HashMap<String, Vec<u8>>,
}

impl MemoryRevisions {
    fn state(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the stored bytes of `hash`, as a damaged disk would: for the conformance
    /// suite's damaged-store case.
    pub fn damage_blob(&self, hash: &str, contents: &[u8]) {
        self.state()
            .blobs
            .insert(hash.to_owned(), contents.to_vec());
    }
}

/// An in-memory lease: frees the flag and wakes a waiting writer when dropped.
struct MemoryLease<'a>(&'a MemoryRevisions);

impl Drop for MemoryLease<'_> {
    fn drop(&mut self) {
        *self
            .0
            .leased
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        self.0.freed.notify_one();
    }
}

impl RevisionStore for MemoryRevisions {
    fn lease(&self) -> Result<StoreLease<'_>, Error> {
        let mut leased = self
            .leased
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *leased {
            leased = self
                .freed
                .wait(leased)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *leased = true;
        Ok(StoreLease::holding(self, MemoryLease(self)))
    }

    fn history(&self) -> Result<Vec<Revision>, Error> {
        Ok(self.state().log.clone())
    }

    fn latest(&self, count: usize) -> Result<Vec<Revision>, Error> {
        Ok(self.state().log.iter().rev().take(count).cloned().collect())
    }

    fn has_blob(&self, hash: &str) -> Result<bool, Error> {
        Ok(self.state().blobs.contains_key(hash))
    }

    fn put_blob(&self, hash: &str, contents: &[u8]) -> Result<(), Error> {
        checked_blob(hash, contents)?;
        self.state()
            .blobs
            .entry(hash.to_owned())
            .or_insert_with(|| contents.to_vec());
        Ok(())
    }

    fn sync_blobs(&self) -> Result<(), Error> {
        Ok(())
    }

    fn blob(&self, hash: &str) -> Result<Vec<u8>, Error> {
        let contents = self
            .state()
            .blobs
            .get(hash)
            .cloned()
            .ok_or_else(|| Error::Io {
                operation: "read",
                path: PathBuf::from(format!("blob {hash}")),
                source: std::io::ErrorKind::NotFound.into(),
            })?;
        checked_blob(hash, &contents)?;
        Ok(contents)
    }

    fn append(&self, lease: &StoreLease<'_>, revision: &Revision) -> Result<(), Error> {
        lease.check_owner(self)?;
        let mut state = self.state();
        if state.log.last().map(|last| &last.id) != revision.parent.as_ref() {
            return Err(Error::NotHead {
                id: revision.id.to_string(),
            });
        }
        state.log.push(revision.clone());
        Ok(())
    }

    fn stored_bytes(&self) -> Result<u64, Error> {
        let state = self.state();
        let log: u64 = state
            .log
            .iter()
            .map(|revision| serde_json::to_vec(revision).map_or(0, |line| line.len() as u64 + 1))
            .sum();
        Ok(charged_bytes(log)
            + state
                .blobs
                .values()
                .map(|contents| charged_bytes(contents.len() as u64))
                .sum::<u64>())
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
