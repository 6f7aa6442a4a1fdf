//! Issue 12, item 13: the default sandbox state folder of a data directory
//! (`/run/stepward/<id>/`) is removed when the process that drove its runs exits; a folder the
//! operator named (`--sandbox-state-dir`) is theirs and stays.

use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

use crate::support::{Home, TINY_WORKFLOW, stderr, stdout};

/// `/run/stepward/<id of the data directory>`, as the binary computes it.
fn default_state_dir(data_dir: &Path) -> PathBuf {
    let path = std::fs::canonicalize(data_dir).unwrap();
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    PathBuf::from("/run/stepward").join(hex::encode(&digest[..6]))
}

/// Removes the folder if the test fails before the binary does.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `stepward ARGS --data-dir DATA` with no `--sandbox-state-dir`: the default folder.
fn stepward_default_state(home: &Home, args: &[&str]) -> Output {
    home.command(Path::new(env!("CARGO_BIN_EXE_stepward")))
        .args(args)
        .arg("--data-dir")
        .arg(home.data_dir())
        .output()
        .unwrap()
}

#[test]
fn the_default_state_folder_goes_when_its_last_process_exits_needs_root() {
    let home = Home::new();
    std::fs::create_dir_all(home.data_dir()).unwrap();
    let state = default_state_dir(&home.data_dir());
    let _cleanup = RemoveOnDrop(state.clone());
    let workflow = home.dir.path().join("tiny.yaml");
    std::fs::write(&workflow, TINY_WORKFLOW).unwrap();
    let ran = stepward_default_state(&home, &["run", workflow.to_str().unwrap()]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    assert!(stdout(&ran).contains(": succeeded"), "{}", stdout(&ran));
    assert!(
        !state.exists(),
        "{} is left behind after the run's process exited",
        state.display()
    );
}

#[test]
fn a_state_folder_the_operator_named_stays_needs_root() {
    let home = Home::new();
    let workflow = home.dir.path().join("tiny.yaml");
    std::fs::write(&workflow, TINY_WORKFLOW).unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap()]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert!(
        home.dir.path().join("sandbox").is_dir(),
        "the named folder is kept"
    );
    // ... without the scratch tmpfs the backend mounted in it.
    let mounted = crate::support::scratch_mounts_below(home.dir.path());
    assert!(mounted.is_empty(), "still mounted: {mounted:?}");
}

#[test]
fn the_default_state_folder_lives_as_long_as_the_server_needs_root() {
    let home = Home::new();
    std::fs::create_dir_all(home.data_dir()).unwrap();
    let state = default_state_dir(&home.data_dir());
    let _cleanup = RemoveOnDrop(state.clone());
    let mut server = crate::http::Server::start_with_default_state_dir(&home);
    let _address = server.address();
    assert!(
        state.is_dir(),
        "the serving process uses {}",
        state.display()
    );
    let status = server.terminate();
    assert!(status.success(), "{}", server.stderr());
    assert!(
        !state.exists(),
        "{} is left behind after the server exited",
        state.display()
    );
}
