//! The revision store port's conformance suite (issue 39), written once and run against every
//! store: the host folder ([`FolderRevisions`]) and memory ([`MemoryRevisions`]) today; a
//! Postgres or object store adds one line to `each_store!` (G25: every write is a revision
//! with an author, in one history that no writer can fork).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use workspace::{
    Author, Change, Error, FolderRevisions, MemoryRevisions, RelPath, Revision, RevisionStore,
};

/// One store under test, and how to damage its bytes as a failing disk would.
trait Subject: Send + Sync {
    fn store(&self) -> &dyn RevisionStore;
    fn damage(&self, hash: &str, contents: &[u8]);
}

struct Folder {
    dir: tempfile::TempDir,
    store: FolderRevisions,
}

impl Subject for Folder {
    fn store(&self) -> &dyn RevisionStore {
        &self.store
    }
    fn damage(&self, hash: &str, contents: &[u8]) {
        std::fs::write(self.dir.path().join("blobs").join(hash), contents).unwrap();
    }
}

impl Subject for MemoryRevisions {
    fn store(&self) -> &dyn RevisionStore {
        self
    }
    fn damage(&self, hash: &str, contents: &[u8]) {
        self.damage_blob(hash, contents);
    }
}

fn folder() -> Arc<dyn Subject> {
    let dir = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(dir.path()).unwrap();
    Arc::new(Folder { dir, store })
}

fn memory() -> Arc<dyn Subject> {
    Arc::new(MemoryRevisions::default())
}

/// Runs each case against each store, as its own test named `case::store`.
macro_rules! each_store {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[test]
                fn folder() {
                    super::$case(super::folder());
                }
                #[test]
                fn memory() {
                    super::$case(super::memory());
                }
            }
        )*
    };
}

each_store!(
    g25_revisions_read_back_in_order_with_their_authors,
    g25_a_revision_that_does_not_follow_the_head_is_refused,
    g25_blobs_are_addressed_by_content_and_checked_on_read,
    g25_the_lease_admits_one_writer_at_a_time,
    g25_writers_at_once_make_one_unbroken_history,
    g25_a_path_reads_as_of_any_revision,
    g25_the_history_is_charged_for_new_content_only,
    g25_a_refused_revision_writes_nothing,
    g25_a_blob_is_stored_only_under_its_own_hash,
    g25_an_append_takes_only_the_stores_own_lease,
);

struct NoSecrets;

impl workspace::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

fn path(text: &str) -> RelPath {
    RelPath::parse(text).unwrap()
}

fn person(id: &str) -> Author {
    Author::Person { id: id.into() }
}

fn write(store: &dyn RevisionStore, who: &str, file: &str, contents: &[u8]) -> Revision {
    let id = store
        .write(
            &person(who),
            &format!("{who} writes {file}"),
            vec![(path(file), Change::Write(contents.to_vec()))],
            &NoSecrets,
        )
        .unwrap();
    store
        .history()
        .unwrap()
        .into_iter()
        .find(|revision| revision.id == id)
        .unwrap()
}

fn hash(contents: &[u8]) -> String {
    hex::encode(Sha256::digest(contents))
}

fn g25_revisions_read_back_in_order_with_their_authors(subject: Arc<dyn Subject>) {
    let store = subject.store();
    assert!(store.history().unwrap().is_empty());
    assert_eq!(store.head().unwrap(), None);
    let first = write(store, "ada", "notes.md", b"one");
    let second = write(store, "grace", "plan.md", b"two");
    let third = write(store, "ada", "notes.md", b"three");
    let history = store.history().unwrap();
    assert_eq!(history, vec![first.clone(), second.clone(), third.clone()]);
    assert_eq!(history[0].parent, None);
    assert_eq!(history[1].parent.as_ref(), Some(&first.id));
    assert_eq!(history[2].parent.as_ref(), Some(&second.id));
    assert_eq!(history[1].author, person("grace"));
    assert_eq!(history[2].message, "ada writes notes.md");
    assert_eq!(store.latest(2).unwrap(), vec![third.clone(), second]);
    assert_eq!(store.latest(10).unwrap().len(), 3);
    assert_eq!(store.head().unwrap(), Some(third.id));
}

fn g25_a_revision_that_does_not_follow_the_head_is_refused(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let first = write(store, "ada", "notes.md", b"one");
    let second = write(store, "ada", "notes.md", b"two");
    // A writer that read the history before `second` and appends on top of `first`.
    let forked = Revision {
        parent: Some(first.id.clone()),
        ..second.clone()
    };
    let lease = store.lease().unwrap();
    let refused = store.append(&lease, &forked);
    assert!(matches!(refused, Err(Error::NotHead { .. })), "{refused:?}");
    let rootless = Revision {
        parent: None,
        ..second.clone()
    };
    assert!(matches!(
        store.append(&lease, &rootless),
        Err(Error::NotHead { .. })
    ));
    drop(lease);
    assert_eq!(store.history().unwrap(), vec![first, second]);
}

fn g25_blobs_are_addressed_by_content_and_checked_on_read(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let contents = b"the pinned agent file";
    let key = hash(contents);
    assert!(!store.has_blob(&key).unwrap());
    assert!(store.blob(&key).is_err(), "an absent blob is an error");
    store.put_blob(&key, contents).unwrap();
    store.put_blob(&key, contents).unwrap();
    store.sync_blobs().unwrap();
    assert!(store.has_blob(&key).unwrap());
    assert_eq!(store.blob(&key).unwrap(), contents);
    // A name that is not a hash names no blob.
    assert!(store.blob("../revisions.log").is_err());
    subject.damage(&key, b"something else");
    let damaged = store.blob(&key);
    assert!(
        matches!(damaged, Err(Error::BlobMismatch { .. })),
        "{damaged:?}"
    );
}

fn g25_the_lease_admits_one_writer_at_a_time(subject: Arc<dyn Subject>) {
    let held = subject.store().lease().unwrap();
    let taken = Arc::new(AtomicBool::new(false));
    let waiter = {
        let subject = Arc::clone(&subject);
        let taken = Arc::clone(&taken);
        std::thread::spawn(move || {
            let lease = subject.store().lease().unwrap();
            taken.store(true, Ordering::SeqCst);
            drop(lease);
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !taken.load(Ordering::SeqCst),
        "a second writer took the lease while the first held it"
    );
    drop(held);
    waiter.join().unwrap();
    assert!(taken.load(Ordering::SeqCst));
}

fn g25_writers_at_once_make_one_unbroken_history(subject: Arc<dyn Subject>) {
    const WRITERS: usize = 6;
    const EACH: usize = 5;
    let threads: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let subject = Arc::clone(&subject);
            std::thread::spawn(move || {
                for write_number in 0..EACH {
                    let file = format!("w{writer}/{write_number}.txt");
                    write(
                        subject.store(),
                        &format!("p-{writer}"),
                        &file,
                        file.as_bytes(),
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let history = subject.store().history().unwrap();
    assert_eq!(history.len(), WRITERS * EACH);
    let mut parent = None;
    for revision in &history {
        assert_eq!(revision.parent, parent, "the history forked");
        parent = Some(revision.id.clone());
    }
}

fn g25_a_path_reads_as_of_any_revision(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let first = write(store, "ada", "a.txt", b"a1");
    let second = write(store, "ada", "b.txt", b"b1");
    let third = store
        .write(
            &person("ada"),
            "remove a",
            vec![(path("a.txt"), Change::Delete)],
            &NoSecrets,
        )
        .unwrap();
    assert_eq!(
        store.read(&first.id, &path("a.txt")).unwrap(),
        Some(b"a1".to_vec())
    );
    assert_eq!(store.read(&third, &path("a.txt")).unwrap(), None);
    assert_eq!(store.read(&first.id, &path("b.txt")).unwrap(), None);
    let tree = store.tree(&second.id).unwrap();
    assert_eq!(
        tree.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a.txt", "b.txt"]
    );
    assert_eq!(tree["b.txt"], hash(b"b1"));
    assert_eq!(store.tree(&third).unwrap().len(), 1);
}

fn g25_the_history_is_charged_for_new_content_only(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let contents = vec![7_u8; 10_000];
    let change = |file: &str| vec![(path(file), Change::Write(contents.clone()))];
    let hashes = vec![Some(hash(&contents))];
    let new = store
        .bytes_to_store("m", &change("a.bin"), &hashes)
        .unwrap();
    assert!(new >= 10_000, "{new}");
    let before = store.stored_bytes().unwrap();
    write(store, "ada", "a.bin", &contents);
    let after = store.stored_bytes().unwrap();
    assert!(after >= before + 10_000, "{before} -> {after}");
    // The same bytes again are stored once.
    let again = store
        .bytes_to_store("m", &change("b.bin"), &hashes)
        .unwrap();
    assert!(again < 1_000, "{again}");
}

fn g25_a_refused_revision_writes_nothing(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let refused = store.write(
        &person("ada"),
        "touch the secrets file",
        vec![
            (path("fine.txt"), Change::Write(b"fine".to_vec())),
            (path(".secrets"), Change::Write(b"x".to_vec())),
        ],
        &NoSecrets,
    );
    assert!(
        matches!(refused, Err(Error::Protected { .. })),
        "{refused:?}"
    );
    assert!(store.history().unwrap().is_empty());
    assert!(!store.has_blob(&hash(b"fine")).unwrap());
}

fn g25_a_blob_is_stored_only_under_its_own_hash(subject: Arc<dyn Subject>) {
    let store = subject.store();
    for name in ["../outside", "/etc/passwd", &hash(b"other bytes")] {
        let refused = store.put_blob(name, b"these bytes");
        assert!(
            matches!(refused, Err(Error::BlobMismatch { .. })),
            "{name}: {refused:?}"
        );
        assert!(!store.has_blob(name).unwrap());
    }
}

fn g25_an_append_takes_only_the_stores_own_lease(subject: Arc<dyn Subject>) {
    let store = subject.store();
    let first = write(store, "ada", "notes.md", b"one");
    let next = Revision {
        parent: Some(first.id.clone()),
        ..first.clone()
    };
    let other = MemoryRevisions::default();
    let foreign = other.lease().unwrap();
    let refused = store.append(&foreign, &next);
    assert!(matches!(refused, Err(Error::ForeignLease)), "{refused:?}");
    assert_eq!(store.history().unwrap(), vec![first]);
}
