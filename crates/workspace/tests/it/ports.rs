//! The workspace over its ports (issue 39): a workspace whose revisions live elsewhere than
//! the host folder, a step's fenced commit, and [`StepFiles`], what a step may see.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use workspace::{
    Author, Change, CommitFence, Error, MemoryRevisionStores, RelPath, Snapshot, StepFiles,
    Workspaces,
};

struct NoSecrets;

impl workspace::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

fn path(text: &str) -> RelPath {
    RelPath::parse(text).unwrap()
}

fn account() -> ids::AccountId {
    ids::AccountId::parse("alpha").unwrap()
}

fn step(attempt: u32) -> Author {
    Author::RunStep {
        run_id: ids::RunId::parse("r-1").unwrap(),
        step: "build".into(),
        attempt,
    }
}

struct Fence {
    attempt: u32,
    current: bool,
    asked: AtomicBool,
}

impl CommitFence for Fence {
    fn token(&self) -> u32 {
        self.attempt
    }
    fn is_current(&self) -> bool {
        self.asked.store(true, Ordering::SeqCst);
        self.current
    }
}

#[test]
fn g25_a_workspace_keeps_its_history_in_the_store_it_is_given() {
    let root = tempfile::tempdir().unwrap();
    let stores = Arc::new(MemoryRevisionStores::default());
    let workspaces = Workspaces::new(root.path()).with_revision_stores(stores.clone());
    let workspace = workspaces.for_account(&account()).unwrap();
    let revision = workspace
        .commit(
            &Author::Person { id: "p-1".into() },
            "add the agent",
            vec![
                (
                    path("agents/digest/AGENT.md"),
                    Change::Write(b"agent".to_vec()),
                ),
                (path("notes.md"), Change::Write(b"notes".to_vec())),
            ],
            &NoSecrets,
        )
        .unwrap();
    // The working folder follows the revision; the history is the memory store's, and the
    // host folder holds none of it.
    let read = workspace
        .read_file(&path("notes.md"), 100)
        .unwrap()
        .unwrap();
    assert_eq!(read.bytes, b"notes");
    assert_eq!(workspace.history().unwrap(), vec![revision.clone()]);
    use workspace::RevisionStores as _;
    assert_eq!(
        stores.open(&account()).unwrap().history().unwrap(),
        vec![revision.clone()]
    );
    assert!(!root.path().join("alpha/revisions/revisions.log").exists());
    // A pin's bytes go to the same store and read back after the folder changed.
    let pinned = {
        let session = workspace.pin_session().unwrap();
        assert_eq!(session.head().unwrap(), Some(revision.id));
        session.pin_folder(&path("agents/digest")).unwrap()
    };
    workspace
        .commit(
            &Author::Person { id: "p-1".into() },
            "edit the agent",
            vec![(
                path("agents/digest/AGENT.md"),
                Change::Write(b"edited".to_vec()),
            )],
            &NoSecrets,
        )
        .unwrap();
    let hash = &pinned["agents/digest/AGENT.md"];
    assert_eq!(workspace.pinned_bytes(hash).unwrap(), b"agent");
    // Another account's store is its own.
    let other = workspaces
        .for_account(&ids::AccountId::parse("beta").unwrap())
        .unwrap();
    assert!(other.history().unwrap().is_empty());
}

#[test]
fn a_step_revision_whose_attempt_is_no_longer_current_lands_nothing() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&account())
        .unwrap();
    let stale = Fence {
        attempt: 1,
        current: false,
        asked: AtomicBool::new(false),
    };
    let refused = workspace.commit_fenced(
        &step(1),
        "copy-back of step build, attempt 1",
        vec![(path("out.txt"), Change::Write(b"late".to_vec()))],
        &NoSecrets,
        &stale,
    );
    assert!(stale.asked.load(Ordering::SeqCst));
    assert!(
        matches!(refused, Err(Error::Fenced { attempt: 1 })),
        "{refused:?}"
    );
    assert!(workspace.history().unwrap().is_empty());
    assert!(
        workspace
            .read_file(&path("out.txt"), 100)
            .unwrap()
            .is_none()
    );
    // Nothing was left beside the target either.
    assert!(workspace.list_files().unwrap().files.is_empty());

    let current = Fence {
        attempt: 2,
        current: true,
        asked: AtomicBool::new(false),
    };
    let landed = workspace
        .commit_fenced(
            &step(2),
            "copy-back of step build, attempt 2",
            vec![(path("out.txt"), Change::Write(b"on time".to_vec()))],
            &NoSecrets,
            &current,
        )
        .unwrap();
    assert_eq!(landed.author, step(2));
    let read = workspace.read_file(&path("out.txt"), 100).unwrap().unwrap();
    assert_eq!(read.bytes, b"on time");
}

#[test]
fn step_files_read_the_working_folder_and_files_in_memory_alike() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&account())
        .unwrap();
    let files = [
        ("data/in.csv", b"a,b\n".to_vec()),
        ("data/deep/x.txt", b"x".to_vec()),
        ("top.md", b"top".to_vec()),
    ];
    workspace
        .commit(
            &Author::Person { id: "p-1".into() },
            "add",
            files
                .iter()
                .map(|(file, contents)| (path(file), Change::Write(contents.clone())))
                .collect(),
            &NoSecrets,
        )
        .unwrap();
    let memory = StepFiles::in_memory(
        files
            .iter()
            .map(|(file, contents)| (path(file), contents.clone()))
            .chain([(path(".secrets"), b"never".to_vec())]),
    )
    .unwrap();
    for files in [workspace.step_files(), memory] {
        let reader = files.reader().unwrap();
        assert_eq!(reader.kind(&path("data")).unwrap(), "folder");
        assert_eq!(reader.kind(&path("top.md")).unwrap(), "file");
        assert!(reader.kind(&path("absent")).is_err());
        assert!(reader.kind(&path(".secrets")).is_err(), "{files:?}");
        assert_eq!(
            reader.read(&path("data/in.csv"), 2, 100).unwrap(),
            (b"b\n".to_vec(), 4)
        );
        let (entries, cut) = reader.walk(Some(&path("data")), 100).unwrap();
        assert!(!cut);
        let listed: Vec<(&str, &str)> = entries
            .iter()
            .map(|entry| (entry.path.as_str(), entry.kind))
            .collect();
        assert_eq!(
            listed,
            [
                ("data/deep", "folder"),
                ("data/deep/x.txt", "file"),
                ("data/in.csv", "file")
            ],
            "{files:?}"
        );
        let (_, cut) = reader.walk(None, 2).unwrap();
        assert!(cut, "{files:?}");
    }
}

#[test]
fn g25_a_snapshot_being_staged_never_sees_half_a_revision() {
    let root = tempfile::tempdir().unwrap();
    let workspaces = Workspaces::new(root.path());
    let workspace = workspaces.for_account(&account()).unwrap();
    let files = workspace.step_files();
    let snapshot = files.open().unwrap();
    assert!(matches!(snapshot, Snapshot::Folder(_)));
    let landed = Arc::new(AtomicBool::new(false));
    let writer = {
        let landed = Arc::clone(&landed);
        let workspace = workspaces.for_account(&account()).unwrap();
        std::thread::spawn(move || {
            workspace
                .commit(
                    &Author::Person { id: "p-1".into() },
                    "write while staging",
                    vec![(path("a.txt"), Change::Write(b"a".to_vec()))],
                    &NoSecrets,
                )
                .unwrap();
            landed.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !landed.load(Ordering::SeqCst),
        "a revision was applied while a snapshot was being staged"
    );
    drop(snapshot);
    writer.join().unwrap();
    assert!(landed.load(Ordering::SeqCst));
}

#[test]
fn files_in_memory_that_no_folder_could_hold_are_refused_and_walk_as_a_folder_does() {
    let refused = StepFiles::in_memory([
        (path("a"), b"a file".to_vec()),
        (path("a/b"), b"beneath the file".to_vec()),
    ]);
    assert!(
        matches!(refused, Err(Error::PathConflict { .. })),
        "{refused:?}"
    );
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&account())
        .unwrap();
    workspace
        .commit(
            &Author::Person { id: "p-1".into() },
            "add",
            vec![(path("top.md"), Change::Write(b"top".to_vec()))],
            &NoSecrets,
        )
        .unwrap();
    let memory = StepFiles::in_memory([(path("top.md"), b"top".to_vec())]).unwrap();
    for files in [workspace.step_files(), memory] {
        let reader = files.reader().unwrap();
        assert!(reader.walk(Some(&path("absent")), 10).is_err(), "{files:?}");
        assert!(reader.walk(Some(&path("top.md")), 10).is_err(), "{files:?}");
    }
}

#[test]
fn a_stale_step_revision_makes_no_folder_on_the_way_to_its_files() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&account())
        .unwrap();
    let stale = Fence {
        attempt: 3,
        current: false,
        asked: AtomicBool::new(false),
    };
    let refused = workspace.commit_fenced(
        &step(3),
        "copy-back of step build, attempt 3",
        vec![(path("new/deep/x.txt"), Change::Write(b"late".to_vec()))],
        &NoSecrets,
        &stale,
    );
    assert!(
        matches!(refused, Err(Error::Fenced { attempt: 3 })),
        "{refused:?}"
    );
    assert!(!root.path().join("alpha/workspace/new").exists());
}

/// The review of issue 39: a run's pin holds the working folder shared and reads the store;
/// a writer waits for the folder before it takes the store's lease, so neither waits for the
/// other forever.
#[test]
fn g25_a_pin_and_a_commit_at_once_both_finish() {
    let root = tempfile::tempdir().unwrap();
    let workspaces = Workspaces::new(root.path());
    let workspace = workspaces.for_account(&account()).unwrap();
    let first = workspace
        .commit(
            &Author::Person { id: "p-1".into() },
            "add the agent",
            vec![(
                path("agents/digest/AGENT.md"),
                Change::Write(b"agent".to_vec()),
            )],
            &NoSecrets,
        )
        .unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let pinner = {
        let workspace = workspaces.for_account(&account()).unwrap();
        let done = done.clone();
        std::thread::spawn(move || {
            let session = workspace.pin_session().unwrap();
            // A writer starts now and waits for the folder this session holds.
            std::thread::sleep(Duration::from_millis(300));
            let pinned = session.pin_folder(&path("agents/digest")).unwrap();
            let hash = &pinned["agents/digest/AGENT.md"];
            assert_eq!(session.pinned_bytes(hash).unwrap(), b"agent");
            assert_eq!(session.head().unwrap(), Some(first.id.clone()));
            assert_eq!(workspace.history().unwrap().len(), 1);
            done.send("pin").unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let writer = {
        let workspace = workspaces.for_account(&account()).unwrap();
        std::thread::spawn(move || {
            workspace
                .commit(
                    &Author::Person { id: "p-2".into() },
                    "edit while pinning",
                    vec![(
                        path("agents/digest/AGENT.md"),
                        Change::Write(b"edited".to_vec()),
                    )],
                    &NoSecrets,
                )
                .unwrap();
            done.send("commit").unwrap();
        })
    };
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(
            finished
                .recv_timeout(Duration::from_secs(10))
                .expect("a pin and a commit at once waited for each other"),
        );
    }
    pinner.join().unwrap();
    writer.join().unwrap();
    assert_eq!(seen, ["pin", "commit"]);
    assert_eq!(workspace.history().unwrap().len(), 2);
}
