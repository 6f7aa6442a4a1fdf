//! Review: a secret value in what the revision store writes besides a file's contents: the
//! path (a step that names a file after its key) and the message (G19: secrets are never
//! written into a workspace or its history).

use std::fs;
use std::path::Path;

use workspace::{Author, Change, Error, FolderRevisions, RelPath, RevisionStore, SecretScreen};

const VALUE: &[u8] = b"sk-live-7Hq2Wm9Lr4";

struct KnowsValue;

impl SecretScreen for KnowsValue {
    fn holds_secret(&self, content: &[u8]) -> bool {
        content.windows(VALUE.len()).any(|window| window == VALUE)
    }
}

fn folder_holds_value(folder: &Path) -> bool {
    let mut pending = vec![folder.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = fs::read_dir(&current).unwrap_or_else(|error| panic!("{error}"));
        for entry in entries {
            let path = entry.unwrap_or_else(|error| panic!("{error}")).path();
            if KnowsValue.holds_secret(path.as_os_str().as_encoded_bytes()) {
                return true;
            }
            if path.is_dir() {
                pending.push(path);
            } else if KnowsValue
                .holds_secret(&fs::read(&path).unwrap_or_else(|error| panic!("{error}")))
            {
                return true;
            }
        }
    }
    false
}

#[test]
fn g19_a_path_or_message_holding_a_secret_is_refused_and_nothing_is_written() {
    let value = std::str::from_utf8(VALUE).unwrap();
    let author = Author::RunStep {
        run_id: ids::RunId::parse("r-1").unwrap(),
        step: "cache".into(),
        attempt: 1,
    };
    let cases = [
        (format!("cache/{value}.json"), "copy-back".to_owned()),
        ("cache/plain.json".to_owned(), format!("saved with {value}")),
    ];
    for (path, message) in cases {
        let folder = tempfile::tempdir().unwrap();
        let store = FolderRevisions::open(folder.path()).unwrap();
        let result = store.write(
            &author,
            &message,
            vec![(
                RelPath::parse(&path).unwrap(),
                Change::Write(b"{}".to_vec()),
            )],
            &KnowsValue,
        );
        assert!(
            matches!(
                result,
                Err(Error::PathHoldsSecret { .. } | Error::MessageHoldsSecret)
            ),
            "{path} / {message}: {result:?}"
        );
        let shown = result
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(!shown.contains(value), "the error shows the value: {shown}");
        assert!(
            !folder_holds_value(folder.path()),
            "the value reached the revision store ({path} / {message})"
        );
    }
}
