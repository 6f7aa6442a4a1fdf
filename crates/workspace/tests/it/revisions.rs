//! The revision store: authors, history, reads, refusals (G25, G19).

use std::fs;

use workspace::{Author, Change, Error, FolderRevisions, RelPath, RevisionStore, SecretScreen};

struct KnowsSecret(&'static [u8]);

impl SecretScreen for KnowsSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        content.windows(self.0.len()).any(|window| window == self.0)
    }
}

const SCREEN: KnowsSecret = KnowsSecret(b"sk-live-123456");

fn path(text: &str) -> RelPath {
    RelPath::parse(text).unwrap_or_else(|refusal| panic!("{refusal}"))
}

#[test]
fn g25_every_write_is_a_revision_with_an_author() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    let person = Author::Person { id: "p-1".into() };
    let step = Author::RunStep {
        run_id: ids::RunId::parse("r-1").unwrap(),
        step: "build".into(),
        attempt: 2,
    };
    let first = store
        .write(
            &person,
            "add notes",
            vec![(path("notes.md"), Change::Write(b"one".to_vec()))],
            &SCREEN,
        )
        .unwrap();
    let second = store
        .write(
            &step,
            "step output",
            vec![
                (path("notes.md"), Change::Write(b"two".to_vec())),
                (path("out/data.json"), Change::Write(b"{}".to_vec())),
            ],
            &SCREEN,
        )
        .unwrap();
    let third = store
        .write(
            &Author::Cli {
                os_user: "ada".into(),
            },
            "tidy",
            vec![(path("notes.md"), Change::Delete)],
            &SCREEN,
        )
        .unwrap();

    let history = store.history().unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].author, person);
    assert_eq!(history[0].parent, None);
    assert_eq!(history[1].author, step);
    assert_eq!(history[1].parent.as_ref(), Some(&first));
    assert_eq!(history[2].parent.as_ref(), Some(&second));
    assert_eq!(history[1].changes.len(), 2);

    assert_eq!(
        store.read(&first, &path("notes.md")).unwrap(),
        Some(b"one".to_vec())
    );
    assert_eq!(
        store.read(&second, &path("notes.md")).unwrap(),
        Some(b"two".to_vec())
    );
    assert_eq!(store.read(&third, &path("notes.md")).unwrap(), None);
    assert_eq!(store.read(&first, &path("out/data.json")).unwrap(), None);
    let tree = store.tree(&third).unwrap();
    assert_eq!(tree.keys().collect::<Vec<_>>(), vec!["out/data.json"]);

    // Reopening reads the same history.
    let reopened = FolderRevisions::open(folder.path()).unwrap();
    assert_eq!(reopened.history().unwrap(), history);
}

#[test]
fn g25_protected_paths_are_refused_and_nothing_is_written() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    for protected in [".secrets", ".journal/a", "knowledge/k/index/i", ".Secrets"] {
        let error = store
            .write(
                &Author::Agent { name: "x".into() },
                "sneaky",
                vec![
                    (path("fine.md"), Change::Write(b"fine".to_vec())),
                    (path(protected), Change::Write(b"x".to_vec())),
                ],
                &SCREEN,
            )
            .unwrap_err();
        assert!(
            matches!(error, Error::Protected { .. }),
            "{protected}: {error}"
        );
    }
    assert!(store.history().unwrap().is_empty());
    assert_eq!(
        fs::read_dir(folder.path().join("blobs")).unwrap().count(),
        0
    );
}

#[test]
fn g19_content_holding_a_secret_is_refused_and_nothing_is_written() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    let error = store
        .write(
            &Author::ApiKey { id: "k-1".into() },
            "leak",
            vec![
                (path("fine.md"), Change::Write(b"fine".to_vec())),
                (
                    path("env.txt"),
                    Change::Write(b"KEY=sk-live-123456\n".to_vec()),
                ),
            ],
            &SCREEN,
        )
        .unwrap_err();
    assert!(matches!(error, Error::HoldsSecret { ref path } if path == "env.txt"));
    assert!(store.history().unwrap().is_empty());
    assert_eq!(
        fs::read_dir(folder.path().join("blobs")).unwrap().count(),
        0
    );
}

#[test]
fn g25_a_torn_last_line_is_cut_off_on_open() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    store
        .write(
            &Author::Agent { name: "x".into() },
            "one",
            vec![(path("a"), Change::Write(b"a".to_vec()))],
            &SCREEN,
        )
        .unwrap();
    drop(store);
    let log = folder.path().join("revisions.log");
    let mut contents = fs::read(&log).unwrap();
    contents.extend_from_slice(b"{\"id\":\"torn");
    fs::write(&log, &contents).unwrap();

    let store = FolderRevisions::open(folder.path()).unwrap();
    assert_eq!(store.history().unwrap().len(), 1);
    store
        .write(
            &Author::Agent { name: "x".into() },
            "two",
            vec![(path("b"), Change::Write(b"b".to_vec()))],
            &SCREEN,
        )
        .unwrap();
    assert_eq!(store.history().unwrap().len(), 2);
}

#[test]
fn g25_empty_and_duplicate_revisions_are_refused() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    let author = Author::Agent { name: "x".into() };
    assert!(matches!(
        store.write(&author, "nothing", vec![], &SCREEN),
        Err(Error::EmptyRevision)
    ));
    assert!(matches!(
        store.write(
            &author,
            "twice",
            vec![
                (path("a"), Change::Write(b"1".to_vec())),
                (path("a"), Change::Delete),
            ],
            &SCREEN,
        ),
        Err(Error::DuplicatePath { .. })
    ));
}

#[test]
fn g25_a_damaged_blob_is_detected() {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    let id = store
        .write(
            &Author::Agent { name: "x".into() },
            "one",
            vec![(path("a"), Change::Write(b"original".to_vec()))],
            &SCREEN,
        )
        .unwrap();
    let blob = &store.history().unwrap()[0].changes[0].blob.clone().unwrap();
    fs::write(folder.path().join("blobs").join(blob), b"tampered").unwrap();
    assert!(matches!(
        store.read(&id, &path("a")),
        Err(Error::BlobMismatch { .. })
    ));
}
