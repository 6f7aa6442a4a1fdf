//! One workspace per account: its working folder (what a step sees at `/work`) and its revision
//! store (every write a revision with an author, G25), side by side under the account's own
//! folder, so no account's step or person ever reads or writes another account's files.
//!
//! Every writer (the engine's copy-back, a person or key through the server, an agent) goes
//! through [`Workspace::commit`], which records the revision and then brings the working folder
//! up to date while holding the workspace's lock: two writers can never leave the folder in an
//! order the history does not show.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ids::AccountId;

use crate::Error;
use crate::folder::stage;
use crate::path::RelPath;
use crate::protected::is_protected;
use std::sync::Arc;

use crate::revision::{
    Author, Change, FolderRevisions, MemoryRevisions, Revision, RevisionStore, SecretScreen,
    charged_bytes, check, content_hashes, io_error,
};

/// The folder holding every account's workspace: `<root>/<account>/workspace/` is the working
/// folder, and its history is in the account's [`RevisionStore`] (by default the host folder
/// `<root>/<account>/revisions/`).
#[derive(Clone)]
pub struct Workspaces {
    root: PathBuf,
    quota_bytes: u64,
    stores: Arc<dyn RevisionStores>,
}

impl std::fmt::Debug for Workspaces {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Workspaces")
            .field("quota_bytes", &self.quota_bytes)
            .field("stores", &self.stores.kind())
            .finish_non_exhaustive()
    }
}

/// Where each account's revisions live: the port's factory (issue 39). Opening is cheap and
/// done on each use, so a step that writes nothing pays nothing for it.
pub trait RevisionStores: Send + Sync {
    /// The revision store of `account`, created on first use.
    fn open(&self, account: &AccountId) -> Result<Arc<dyn RevisionStore>, Error>;
    /// What kind of store, in a word, for logs: `folder`, `memory`.
    fn kind(&self) -> &'static str;
}

/// Each account's revisions in the host folder `<root>/<account>/revisions/`: today's store.
pub struct FolderRevisionStores {
    root: PathBuf,
}

impl FolderRevisionStores {
    /// The stores under `root`, the same folder [`Workspaces::new`] is given.
    pub fn new(root: impl Into<PathBuf>) -> FolderRevisionStores {
        FolderRevisionStores { root: root.into() }
    }
}

impl RevisionStores for FolderRevisionStores {
    fn open(&self, account: &AccountId) -> Result<Arc<dyn RevisionStore>, Error> {
        let folder = self.root.join(account.as_str()).join("revisions");
        Ok(Arc::new(FolderRevisions::open(&folder)?))
    }

    fn kind(&self) -> &'static str {
        "folder"
    }
}

/// Each account's revisions in memory, for as long as this value lives.
#[derive(Default)]
pub struct MemoryRevisionStores {
    accounts: std::sync::Mutex<std::collections::HashMap<AccountId, Arc<MemoryRevisions>>>,
}

impl RevisionStores for MemoryRevisionStores {
    fn open(&self, account: &AccountId) -> Result<Arc<dyn RevisionStore>, Error> {
        let mut accounts = self
            .accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let store = accounts.entry(account.clone()).or_default().clone();
        Ok(store)
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}

/// What a step's revision carries (issue 39): the token of the attempt that made it, and how
/// to ask whether that attempt is still current (its worker still holds the run queue's lease
/// on it, and its record still says it runs). Asked under the workspace's write lease, just
/// before the revision is recorded.
pub trait CommitFence {
    /// The attempt's number: its fencing token.
    fn token(&self) -> u32;
    /// Whether the attempt is still current; `false` lands nothing.
    fn is_current(&self) -> bool;
}

/// How many bytes an account's history (contents and log) may hold unless the operator says
/// otherwise: 1 GiB.
pub const DEFAULT_QUOTA_BYTES: u64 = 1024 * 1024 * 1024;

/// The most entries [`Workspace::list_files`] walks; beyond it, the listing says it is a part.
pub const MAX_LISTED_ENTRIES: usize = 10_000;

/// One file of a working folder, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    pub path: String,
    pub bytes: u64,
}

/// The files of a working folder, as far as a listing walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub files: Vec<ListedFile>,
    /// `true` when the folder holds more than [`MAX_LISTED_ENTRIES`] entries and `files` is a
    /// part of it.
    pub truncated: bool,
}

/// The contents of one file, up to the reader's limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContents {
    pub bytes: Vec<u8>,
    /// The file's whole size; more than `bytes.len()` when the read stopped at the limit.
    pub total_bytes: u64,
}

impl Workspaces {
    /// Every account's workspace under `root`, each holding at most [`DEFAULT_QUOTA_BYTES`].
    pub fn new(root: impl Into<PathBuf>) -> Workspaces {
        let root = root.into();
        Workspaces {
            stores: Arc::new(FolderRevisionStores::new(root.clone())),
            root,
            quota_bytes: DEFAULT_QUOTA_BYTES,
        }
    }

    /// The same workspaces, their revisions kept by `stores` instead of the host folder.
    pub fn with_revision_stores(self, stores: Arc<dyn RevisionStores>) -> Workspaces {
        Workspaces { stores, ..self }
    }

    /// The same workspaces, each account's history holding at most `quota_bytes` (the stored
    /// contents and the log: the history keeps every revision, so deleting a file frees
    /// nothing). A commit beyond it is refused whole.
    pub fn with_quota(self, quota_bytes: u64) -> Workspaces {
        Workspaces {
            quota_bytes,
            ..self
        }
    }

    /// `text` with the host folder every workspace lives under named `<workspaces>`: a record
    /// an account reads never shows the host's layout.
    pub fn without_host_paths(&self, text: &str) -> String {
        text.replace(&*self.root.to_string_lossy(), "<workspaces>")
    }

    /// The workspace of `account`, its folders created on first use. The id becomes a folder
    /// name: its grammar (`ids::AccountId`) has no `.`, `/` or empty id, so it cannot reach
    /// another account's files; the server's own chain has none.
    pub fn for_account(&self, account: &AccountId) -> Result<Workspace, Error> {
        if account.is_server_chain() {
            return Err(Error::ServerChain);
        }
        let folder = self.root.join(account.as_str());
        let files = folder.join("workspace");
        // Private whatever the umask: an account's files are its own (G20).
        private_dirs(&files).map_err(io_error("create", &files))?;
        Ok(Workspace {
            revisions: folder.join("revisions"),
            files,
            quota_bytes: self.quota_bytes,
            account: account.clone(),
            stores: self.stores.clone(),
        })
    }
}

/// Creates `folder` and every missing folder above it 0700, whatever the umask (an existing
/// folder is left as it is).
pub(crate) fn private_dirs(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
}

/// A lock on a workspace's writes ([`Workspace::writing`], [`Workspace::settling`]), let go
/// when dropped.
pub struct WriteInFlight {
    _file: File,
}

/// One account's working folder and revision store.
pub struct Workspace {
    /// The working folder: the head revision's files on this host, what a step's `/work` is
    /// staged from ([`Workspace::step_files`]). Never handed above this crate (issue 39).
    pub(crate) files: PathBuf,
    /// This host's folder of the account's write intents (`writes.lock`), beside the revision
    /// store's own folder when that is the host folder.
    pub(crate) revisions: PathBuf,
    quota_bytes: u64,
    account: AccountId,
    stores: Arc<dyn RevisionStores>,
}

impl Workspace {
    /// What a step of this account may see: the working folder, staged by the backend under
    /// its shared lock ([`StepFiles::open`]).
    pub fn step_files(&self) -> crate::StepFiles {
        crate::StepFiles::folder(self.files.clone())
    }

    /// The account's revision store, opened now.
    pub fn revisions(&self) -> Result<Arc<dyn RevisionStore>, Error> {
        self.stores.open(&self.account)
    }

    /// Marks a write of this workspace as in flight, from the audit entry that announces it
    /// to the one that records its outcome: a shared lock, which any number of writers hold
    /// at once and which [`Workspace::settling`] waits for none of (issue 37: the recovery of
    /// interrupted writes must never settle an intent whose writer is still at work).
    pub fn writing(&self) -> Result<WriteInFlight, Error> {
        let file = self.writes_lock()?;
        file.lock_shared()
            .map_err(io_error("lock", &self.writes_lock_path()))?;
        Ok(WriteInFlight { _file: file })
    }

    /// The lock that no writer holds, taken now for settling what stopped writers left, or
    /// `None` when a writer (or another process settling) holds it.
    pub fn settling(&self) -> Result<Option<WriteInFlight>, Error> {
        let file = self.writes_lock()?;
        match file.try_lock() {
            Ok(()) => Ok(Some(WriteInFlight { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(source)) => Err(Error::Io {
                operation: "lock",
                path: self.writes_lock_path(),
                source,
            }),
        }
    }

    fn writes_lock_path(&self) -> PathBuf {
        self.revisions.join("writes.lock")
    }

    fn writes_lock(&self) -> Result<File, Error> {
        private_dirs(&self.revisions).map_err(io_error("create", &self.revisions))?;
        let path = self.writes_lock_path();
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error("open", &path))
    }

    /// Records `changes` as one revision by `author` and applies them to the working folder,
    /// under the workspace's lock (the working folder's own `flock`, held against other
    /// processes and against staging too), all or nothing:
    /// every change is checked (protected, repeated, a secret in a path, the message or a
    /// content, G19) and fitted to the folder, and every new content written beside its
    /// target, before the revision is appended; only renames and removals come after it.
    pub fn commit(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
    ) -> Result<Revision, Error> {
        self.commit_expecting(author, message, changes, screen, &[])
    }

    /// [`Workspace::commit`], only when each of `expected` is, under the lock, as the writer
    /// last saw it: the SHA-256 (hex) of the file's bytes, or `None` for no file. Otherwise
    /// nothing is written and the answer is [`Error::Changed`] naming the path: a writer that
    /// read a file, then proposed a change of it, never overwrites a newer write it did not see.
    pub fn commit_expecting(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
        expected: &[(RelPath, Option<String>)],
    ) -> Result<Revision, Error> {
        self.commit_checked(author, message, changes, screen, expected, None)
    }

    /// [`Workspace::commit`] of a step's changes, fenced (issue 39): it lands only if
    /// `fence` says, under the write lease, that the attempt which made them is still
    /// current; otherwise nothing is written and the answer is [`Error::Fenced`].
    pub fn commit_fenced(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
        fence: &dyn CommitFence,
    ) -> Result<Revision, Error> {
        self.commit_checked(author, message, changes, screen, &[], Some(fence))
    }

    fn commit_checked(
        &self,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        screen: &dyn SecretScreen,
        expected: &[(RelPath, Option<String>)],
        fence: Option<&dyn CommitFence>,
    ) -> Result<Revision, Error> {
        check(message, &changes, screen)?;
        let revisions = self.revisions()?;
        // One writer at a time, and one order of locks for every writer and reader: the
        // working folder's own lock first (writers hold it exclusively; staging a step's
        // `/work` and pinning hold it shared while they copy, so a step never starts from half
        // of a revision), then the store's lease. A pin reads the store while it holds the
        // folder shared, and nothing that holds the lease waits for the folder.
        let lock = File::open(&self.files).map_err(io_error("open", &self.files))?;
        lock.lock().map_err(io_error("lock", &self.files))?;
        let lease = revisions.lease()?;
        // Asked first, under both: a change of an attempt that is no longer current writes
        // nothing at all, not even a folder on the way to its files.
        if let Some(fence) = fence
            && !fence.is_current()
        {
            return Err(Error::Fenced {
                attempt: fence.token(),
            });
        }
        for (path, hash) in expected {
            if self.file_hash(path)? != *hash {
                return Err(Error::Changed {
                    path: path.to_string(),
                });
            }
        }
        // The quota covers the history and the working folder: every written content lands in
        // both (the folder's copy is charged whole even when the history already holds it).
        let used = revisions
            .stored_bytes()?
            .saturating_add(self.folder_bytes()?);
        let hashes = content_hashes(&changes);
        let adding = revisions
            .bytes_to_store(message, &changes, &hashes)?
            .saturating_add(
                changes
                    .iter()
                    .map(|(_, change)| match change {
                        Change::Write(contents) => charged_bytes(contents.len() as u64),
                        Change::Delete => 0,
                    })
                    .sum(),
            );
        if used.saturating_add(adding) > self.quota_bytes {
            return Err(Error::QuotaExceeded {
                used,
                adding,
                quota: self.quota_bytes,
            });
        }
        let staged = stage(&self.files, &changes)?;
        let revision = revisions.record(&lease, author, message, &changes, &hashes)?;
        staged.finish()?;
        Ok(revision)
    }

    /// What the working folder holds, charged as `charged_bytes`: every regular file (links
    /// are not followed) and every folder.
    fn folder_bytes(&self) -> Result<u64, Error> {
        let mut total = 0_u64;
        let mut pending = vec![self.files.clone()];
        while let Some(folder) = pending.pop() {
            for entry in fs::read_dir(&folder).map_err(io_error("list", &folder))? {
                let entry = entry.map_err(io_error("list", &folder))?;
                let meta = entry
                    .metadata()
                    .map_err(io_error("inspect", &entry.path()))?;
                if meta.is_dir() {
                    pending.push(entry.path());
                }
                total = total.saturating_add(charged_bytes(meta.len()));
            }
        }
        Ok(total)
    }

    /// The last `count` revisions, newest first; reads only the end of the history.
    pub fn latest(&self, count: usize) -> Result<Vec<Revision>, Error> {
        self.revisions()?.latest(count)
    }

    /// Every revision, oldest first.
    pub fn history(&self) -> Result<Vec<Revision>, Error> {
        self.revisions()?.history()
    }

    /// The regular files of the working folder, sorted by path, and whether the walk stopped
    /// at [`MAX_LISTED_ENTRIES`] entries (then the list is a part of the folder). Links are
    /// never followed and protected entries are left out.
    pub fn list_files(&self) -> Result<Listing, Error> {
        let mut files = Vec::new();
        let mut pending = vec![(self.files.clone(), String::new(), 0_usize)];
        let mut walked = 0_usize;
        'walk: while let Some((folder, prefix, depth)) = pending.pop() {
            for entry in fs::read_dir(&folder).map_err(io_error("list", &folder))? {
                let entry = entry.map_err(io_error("list", &folder))?;
                walked += 1;
                if walked > MAX_LISTED_ENTRIES {
                    break 'walk;
                }
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    continue;
                };
                let relative = format!("{prefix}{name}");
                let Ok(path) = RelPath::parse(&relative) else {
                    continue;
                };
                if is_protected(&path).is_some() {
                    continue;
                }
                // `DirEntry::metadata` does not follow a link.
                let meta = entry
                    .metadata()
                    .map_err(io_error("inspect", &entry.path()))?;
                if meta.is_dir() && depth + 1 < crate::MAX_DEPTH {
                    pending.push((entry.path(), format!("{relative}/"), depth + 1));
                } else if meta.is_file() {
                    files.push(ListedFile {
                        path: relative,
                        bytes: meta.len(),
                    });
                }
            }
        }
        files.sort_by(|left, right| left.path.cmp(&right.path));
        Ok(Listing {
            files,
            truncated: walked > MAX_LISTED_ENTRIES,
        })
    }

    /// Reads `path` of the working folder, at most `max_bytes` of it; `None` when it is not
    /// there, is not a regular file, or is protected. No component of the way may be a link.
    pub fn read_file(&self, path: &RelPath, max_bytes: u64) -> Result<Option<FileContents>, Error> {
        let Some((file, meta, at)) = self.open_regular(path)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(io_error("read", &at))?;
        Ok(Some(FileContents {
            bytes,
            total_bytes: meta.len(),
        }))
    }

    /// The SHA-256 (hex) of the whole of the regular file at `path`, or `None` where
    /// [`Workspace::read_file`] finds none: what a writer records when it reads a file, and
    /// what [`Workspace::commit_expecting`] compares. The file is read in pieces of 64 KiB,
    /// never whole into memory (the account's quota bounds it, 1 GiB unless the operator says
    /// otherwise).
    pub fn file_hash(&self, path: &RelPath) -> Result<Option<String>, Error> {
        use sha2::Digest;
        let Some((mut file, _, at)) = self.open_regular(path)? else {
            return Ok(None);
        };
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => hasher.update(buffer.get(..read).unwrap_or_default()),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => return Err(io_error("read", &at)(source)),
            }
        }
        Ok(Some(hex::encode(hasher.finalize())))
    }

    /// The regular file at `path`, opened for reading without following a link at any
    /// component, with its metadata and its place on disk; `None` for a protected path, a
    /// missing file, a link or anything but a regular file.
    fn open_regular(&self, path: &RelPath) -> Result<Option<(File, fs::Metadata, PathBuf)>, Error> {
        if is_protected(path).is_some() {
            return Ok(None);
        }
        let mut current = self.files.clone();
        let depth = path.depth();
        for (index, component) in path.components().enumerate() {
            current.push(component);
            let is_last = index + 1 == depth;
            match fs::symlink_metadata(&current) {
                Ok(meta) if meta.file_type().is_symlink() => return Ok(None),
                Ok(meta) if is_last && !meta.is_file() => return Ok(None),
                Ok(meta) if !is_last && !meta.is_dir() => return Ok(None),
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(source) => return Err(io_error("inspect", &current)(source)),
            }
        }
        let file = match File::options()
            .read(true)
            .custom_flags(O_NOFOLLOW | O_NONBLOCK)
            .open(&current)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io_error("open", &current)(source)),
        };
        let meta = file.metadata().map_err(io_error("inspect", &current))?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some((file, meta, current)))
    }
}

// Linux's values (asm-generic), spelled here so this crate needs no libc for two flags.
const O_NOFOLLOW: i32 = 0o400_000;
const O_NONBLOCK: i32 = 0o4_000;

#[cfg(test)]
mod tests {
    use super::*;

    struct NoSecrets;

    impl SecretScreen for NoSecrets {
        fn holds_secret(&self, _content: &[u8]) -> bool {
            false
        }
    }

    struct Holds(&'static [u8]);

    impl SecretScreen for Holds {
        fn holds_secret(&self, content: &[u8]) -> bool {
            content.windows(self.0.len()).any(|window| window == self.0)
        }
    }

    fn write(path: &str, bytes: &[u8]) -> Vec<(RelPath, Change)> {
        vec![(RelPath::parse(path).unwrap(), Change::Write(bytes.to_vec()))]
    }

    fn person() -> Author {
        Author::Person {
            id: "p-1".to_owned(),
        }
    }

    #[test]
    fn g25_accounts_have_separate_folders_and_histories() {
        let root = tempfile::tempdir().unwrap();
        let workspaces = Workspaces::new(root.path());
        let alpha = workspaces
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        let beta = workspaces
            .for_account(&AccountId::parse("beta").unwrap())
            .unwrap();
        alpha
            .commit(&person(), "add", write("a.txt", b"alpha's"), &NoSecrets)
            .unwrap();
        assert_ne!(alpha.files.as_path(), beta.files.as_path());
        assert_eq!(alpha.list_files().unwrap().files.len(), 1);
        assert!(beta.list_files().unwrap().files.is_empty());
        assert!(beta.history().unwrap().is_empty());
        let read = alpha
            .read_file(&RelPath::parse("a.txt").unwrap(), 1024)
            .unwrap()
            .unwrap();
        assert_eq!(read.bytes, b"alpha's");
        assert!(
            beta.read_file(&RelPath::parse("a.txt").unwrap(), 1024)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn g25_an_account_id_that_is_not_a_plain_name_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let workspaces = Workspaces::new(root.path().join("accounts"));
        for account in [
            "",
            "..",
            "a/b",
            "../beta",
            "Alpha",
            ".hidden",
            &"a".repeat(65),
        ] {
            assert!(
                AccountId::parse(account).is_err(),
                "{account:?} was accepted"
            );
        }
        assert!(matches!(
            workspaces.for_account(&AccountId::server_chain()),
            Err(Error::ServerChain)
        ));
        assert!(
            !root
                .path()
                .join("accounts")
                .join(ids::SERVER_CHAIN)
                .exists()
        );
    }

    #[test]
    fn g19_a_commit_holding_a_secret_writes_neither_history_nor_folder() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        let refused = workspace.commit(
            &person(),
            "add",
            write("a.txt", b"token=hunter2-value"),
            &Holds(b"hunter2-value"),
        );
        assert!(matches!(refused, Err(Error::HoldsSecret { .. })));
        assert!(workspace.history().unwrap().is_empty());
        assert!(workspace.list_files().unwrap().files.is_empty());
    }

    #[test]
    fn g22_listing_and_reading_never_follow_links_nor_show_protected_entries() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("host.txt"), b"host file").unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), workspace.files.as_path().join("linked"))
            .unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("host.txt"),
            workspace.files.as_path().join("file-link"),
        )
        .unwrap();
        fs::write(workspace.files.as_path().join(".secrets"), b"KEY=1").unwrap();
        fs::write(workspace.files.as_path().join("plain.txt"), b"plain").unwrap();
        let listed = workspace.list_files().unwrap().files;
        assert_eq!(
            listed,
            vec![ListedFile {
                path: "plain.txt".to_owned(),
                bytes: 5
            }]
        );
        for path in [
            "linked/host.txt",
            "file-link",
            ".secrets",
            "plain.txt/inside",
        ] {
            assert!(
                workspace
                    .read_file(&RelPath::parse(path).unwrap(), 1024)
                    .unwrap()
                    .is_none(),
                "{path} was read"
            );
        }
    }

    #[test]
    fn reads_stop_at_the_limit_and_say_the_whole_size() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        workspace
            .commit(&person(), "add", write("big.txt", &[b'x'; 100]), &NoSecrets)
            .unwrap();
        let read = workspace
            .read_file(&RelPath::parse("big.txt").unwrap(), 10)
            .unwrap()
            .unwrap();
        assert_eq!(read.bytes.len(), 10);
        assert_eq!(read.total_bytes, 100);
    }

    fn folder_entries(workspace: &Workspace) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(workspace.files.as_path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn g25_a_commit_that_does_not_fit_the_folder_writes_neither_history_nor_folder() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        workspace
            .commit(&person(), "a file", write("data", b"file"), &NoSecrets)
            .unwrap();
        let attempts: Vec<Vec<(RelPath, Change)>> = vec![
            // A file where a folder is needed, beside a change that would fit.
            [write("good.txt", b"good"), write("data/x", b"x")].concat(),
            // A folder where the file goes.
            [write("dir/inner.txt", b"i"), write("dir", b"d")].concat(),
            // A path inside another path of the same revision.
            [write("a", b"a"), write("a/b", b"b")].concat(),
            // A new folder would fit, but a later change does not: no folder is made.
            [write("new/deep/x.txt", b"n"), write("data/y", b"y")].concat(),
        ];
        for changes in attempts {
            let refused = workspace.commit(&person(), "conflict", changes, &NoSecrets);
            assert!(
                matches!(refused, Err(Error::PathConflict { .. })),
                "{refused:?}"
            );
        }
        // Deleting what is not a file, beside a write that would fit: nothing is written.
        for missing in ["gone.txt", "data/inner.txt"] {
            let refused = workspace.commit(
                &person(),
                "delete",
                [
                    write("new.txt", b"n"),
                    vec![(RelPath::parse(missing).unwrap(), Change::Delete)],
                ]
                .concat(),
                &NoSecrets,
            );
            assert!(
                matches!(
                    refused,
                    Err(Error::NoSuchFile { .. }) | Err(Error::PathConflict { .. })
                ),
                "{missing}: {refused:?}"
            );
        }
        assert_eq!(workspace.history().unwrap().len(), 1);
        assert_eq!(folder_entries(&workspace), vec!["data"]);
    }

    #[test]
    fn g25_the_longest_file_name_is_written_and_no_temporary_file_is_left() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        let long = "n".repeat(250);
        // A file named like an earlier temporary one changes nothing.
        fs::write(
            workspace
                .files
                .as_path()
                .join(format!(".report.txt.{}.tmp", std::process::id())),
            b"planted",
        )
        .unwrap();
        for name in [long.as_str(), "report.txt"] {
            workspace
                .commit(&person(), "write", write(name, b"ok"), &NoSecrets)
                .unwrap();
            assert_eq!(
                fs::read(workspace.files.as_path().join(name)).unwrap(),
                b"ok"
            );
        }
        assert!(
            folder_entries(&workspace)
                .iter()
                .all(|name| !name.starts_with(".sw-")),
            "{:?}",
            folder_entries(&workspace)
        );
    }

    #[test]
    fn g25_the_latest_revisions_are_read_from_the_end_of_a_long_history() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        // About 300 KiB of log: several of the chunks the tail is read in.
        let padding = "p".repeat(1000);
        for index in 0..300 {
            workspace
                .commit(
                    &person(),
                    &format!("{index} {padding}"),
                    write(&format!("f{index}"), b"x"),
                    &NoSecrets,
                )
                .unwrap();
        }
        let history = workspace.history().unwrap();
        let latest = workspace.latest(5).unwrap();
        let expected: Vec<_> = history.iter().rev().take(5).cloned().collect();
        assert_eq!(latest, expected);
        assert_eq!(latest[0].parent.as_ref(), Some(&history[298].id));
        let all = workspace.latest(1000).unwrap();
        assert_eq!(all.len(), 300);
        assert_eq!(all.last().unwrap().id, history[0].id);
        assert!(workspace.latest(0).unwrap().is_empty());
    }

    #[test]
    fn g25_a_commit_beyond_the_quota_writes_nothing_and_the_folders_copy_counts_too() {
        let root = tempfile::tempdir().unwrap();
        // Each 40 KiB content costs 80 KiB: its copy in the history and in the folder.
        let content = |byte: u8| vec![byte; 40 * 1024];
        let workspace = Workspaces::new(root.path())
            .with_quota(240 * 1024)
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        workspace
            .commit(&person(), "a", write("a.bin", &content(b'a')), &NoSecrets)
            .unwrap();
        workspace
            .commit(&person(), "b", write("b.bin", &content(b'b')), &NoSecrets)
            .unwrap();
        // A copy of a stored content still costs its place in the folder: it fits once more.
        workspace
            .commit(
                &person(),
                "copy",
                write("a-copy.bin", &content(b'a')),
                &NoSecrets,
            )
            .unwrap();
        for (path, contents) in [("c.bin", content(b'c')), ("a-again.bin", content(b'a'))] {
            let refused = workspace.commit(&person(), "over", write(path, &contents), &NoSecrets);
            assert!(
                matches!(refused, Err(Error::QuotaExceeded { .. })),
                "{path}: {refused:?}"
            );
            assert!(!workspace.files.as_path().join(path).exists());
        }
        assert_eq!(workspace.history().unwrap().len(), 3);
    }

    #[test]
    fn g25_many_tiny_files_are_charged_their_disk_blocks() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .with_quota(64 * 1024)
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        let changes: Vec<(RelPath, Change)> = (0..20)
            .map(|index| {
                (
                    RelPath::parse(&format!("tiny/{index}")).unwrap(),
                    Change::Write(vec![u8::try_from(index).unwrap()]),
                )
            })
            .collect();
        let refused = workspace.commit(&person(), "tiny", changes, &NoSecrets);
        assert!(
            matches!(refused, Err(Error::QuotaExceeded { .. })),
            "20 one-byte files take 40 blocks: {refused:?}"
        );
    }

    /// Review finding (minor): the hash a writer expects is the SHA-256 of the whole file, so a
    /// change anywhere in it, also beyond the first 4 MiB, is a change.
    #[test]
    fn g25_an_expected_file_is_compared_whole_also_beyond_four_mib() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        let hash = |bytes: &[u8]| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        let big = vec![b'a'; 4 * 1024 * 1024 + 100];
        workspace
            .commit(&person(), "big", write("big.bin", &big), &NoSecrets)
            .unwrap();
        let path = RelPath::parse("big.bin").unwrap();
        let seen = [(path.clone(), Some(hash(&big)))];
        // Unchanged since the writer read it: the commit goes through.
        workspace
            .commit_expecting(&person(), "n1", write("note.txt", b"1"), &NoSecrets, &seen)
            .unwrap();
        // Someone changes its last byte, past the first 4 MiB.
        let mut changed = big.clone();
        *changed.last_mut().unwrap() = b'b';
        workspace
            .commit(&person(), "tail", write("big.bin", &changed), &NoSecrets)
            .unwrap();
        let refused =
            workspace.commit_expecting(&person(), "n2", write("note.txt", b"2"), &NoSecrets, &seen);
        assert!(
            matches!(&refused, Err(Error::Changed { path }) if path == "big.bin"),
            "{refused:?}"
        );
        assert_eq!(
            fs::read(workspace.files.as_path().join("note.txt")).unwrap(),
            b"1"
        );
        assert_eq!(workspace.history().unwrap().len(), 3);
    }

    #[test]
    fn g25_a_commit_waits_while_a_step_is_being_staged() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path())
            .for_account(&AccountId::parse("alpha").unwrap())
            .unwrap();
        // What staging holds while it copies the folder.
        let staging = File::open(workspace.files.as_path()).unwrap();
        staging.lock_shared().unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                workspace
                    .commit(&person(), "w", write("w.txt", b"w"), &NoSecrets)
                    .unwrap();
                done.send(()).unwrap();
            });
            assert!(
                finished
                    .recv_timeout(std::time::Duration::from_millis(300))
                    .is_err(),
                "the commit went ahead while the folder was being staged"
            );
            staging.unlock().unwrap();
            finished
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap();
        });
        assert!(workspace.files.as_path().join("w.txt").exists());
    }
}
