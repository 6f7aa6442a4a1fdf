//! Versions of a file (the revision log filtered to it) and pins of folders for a run (issue
//! 16 §1, issue 17 §3).

use workspace::{Author, Change, RelPath, Workspaces};

fn path(text: &str) -> RelPath {
    RelPath::parse(text).unwrap()
}

fn write(text: &str, bytes: &[u8]) -> Vec<(RelPath, Change)> {
    vec![(path(text), Change::Write(bytes.to_vec()))]
}

struct NoSecrets;

impl workspace::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

const NO_SECRETS: NoSecrets = NoSecrets;

#[test]
fn g25_every_write_of_a_file_is_its_next_version_with_author_and_time() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&ids::AccountId::parse("alpha").unwrap())
        .unwrap();
    let person = Author::Person { id: "p-1".into() };
    let assistant = Author::Assistant {
        accepted_by: "p-2".into(),
    };
    let file = "workflows/refund.yaml";
    workspace
        .commit(&person, "first", write(file, b"one"), &NO_SECRETS)
        .unwrap();
    // Another file's revision is no version of this one.
    workspace
        .commit(&person, "other", write("notes.md", b"n"), &NO_SECRETS)
        .unwrap();
    workspace
        .commit(&assistant, "repair", write(file, b"two"), &NO_SECRETS)
        .unwrap();
    workspace
        .commit(
            &person,
            "gone",
            vec![(path(file), Change::Delete)],
            &NO_SECRETS,
        )
        .unwrap();
    workspace
        .commit(&person, "back", write(file, b"three"), &NO_SECRETS)
        .unwrap();
    let versions = workspace.file_versions(&path(file)).unwrap();
    let numbers: Vec<u32> = versions.iter().map(|version| version.number).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    assert_eq!(versions[1].author, assistant);
    assert_eq!(
        versions[1].author.describe(),
        "the assistant, accepted by person p-2"
    );
    assert_eq!(versions[2].message, "back");
    let (second, bytes) = workspace.file_version(&path(file), 2).unwrap().unwrap();
    assert_eq!((second.number, bytes.as_slice()), (2, b"two".as_slice()));
    assert!(workspace.file_version(&path(file), 4).unwrap().is_none());
    // The author round-trips through the log.
    assert_eq!(workspace.history().unwrap()[2].author, assistant);
}

#[test]
fn g25_a_pinned_folder_reads_back_its_bytes_after_the_folder_changed() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&ids::AccountId::parse("alpha").unwrap())
        .unwrap();
    let person = Author::Person { id: "p-1".into() };
    workspace
        .commit(
            &person,
            "agent",
            [
                write("agents/digest/AGENT.md", b"pinned agent"),
                write("agents/digest/tools/notes.py", b"pinned script"),
                write("agents/other/AGENT.md", b"not reached"),
            ]
            .concat(),
            &NO_SECRETS,
        )
        .unwrap();
    // A link in the folder is never followed nor pinned.
    std::os::unix::fs::symlink(
        "/etc/passwd",
        root.path().join("alpha/workspace/agents/digest/link"),
    )
    .unwrap();
    let pinned = {
        let session = workspace.pin_session().unwrap();
        assert!(session.head().unwrap().is_some());
        session.pin_folder(&path("agents/digest")).unwrap()
    };
    assert_eq!(
        pinned.keys().collect::<Vec<_>>(),
        vec!["agents/digest/AGENT.md", "agents/digest/tools/notes.py"]
    );
    workspace
        .commit(
            &person,
            "edit",
            [
                write("agents/digest/AGENT.md", b"edited agent"),
                write("agents/digest/tools/notes.py", b"edited script"),
            ]
            .concat(),
            &NO_SECRETS,
        )
        .unwrap();
    assert_eq!(
        workspace
            .pinned_bytes(&pinned["agents/digest/AGENT.md"])
            .unwrap(),
        b"pinned agent"
    );
    assert_eq!(
        workspace
            .pinned_bytes(&pinned["agents/digest/tools/notes.py"])
            .unwrap(),
        b"pinned script"
    );
    // A hash that is not one is refused before it becomes a path.
    assert!(workspace.pinned_bytes("../../etc/passwd").is_err());
    // An absent folder pins as nothing.
    let session = workspace.pin_session().unwrap();
    assert!(session.pin_folder(&path("agents/none")).unwrap().is_empty());
}

#[test]
fn g25_pins_beside_each_other_store_the_same_content_whole() {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path())
        .for_account(&ids::AccountId::parse("alpha").unwrap())
        .unwrap();
    let big = vec![b'x'; 256 * 1024];
    workspace
        .commit(
            &Author::Person { id: "p".into() },
            "agent",
            write("agents/digest/AGENT.md", &big),
            &NO_SECRETS,
        )
        .unwrap();
    // The blob is stored again by every pin (its history copy removed first).
    let blobs = root.path().join("alpha/revisions/blobs");
    for entry in std::fs::read_dir(&blobs).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let hashes: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let session = workspace.pin_session().unwrap();
                    session.pin_folder(&path("agents/digest")).unwrap()["agents/digest/AGENT.md"]
                        .clone()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    for hash in hashes {
        assert_eq!(workspace.pinned_bytes(&hash).unwrap(), big);
    }
}
