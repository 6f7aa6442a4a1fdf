//! Running the real binary and reading what it printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives two levels below the repository root")
        .to_path_buf()
}

/// Makes the fake model the local account's default provider (`fake`, Anthropic's format),
/// with `fake-assistant` as its assistant model and `key` as its model key, its endpoint
/// allowed: the assistant of the supervisor, repair and interview tests.
pub fn add_fake_assistant(home: &Home, fake: &fake_model::BlockingFakeModel, key: &str) {
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.url(),
            "--assistant-model",
            "fake-assistant",
            "--allow-model-endpoint",
            &fake.endpoint(),
        ],
        key,
    );
    assert!(added.status.success(), "{}", stderr(&added));
}

/// Runs `stepward ARGS` from the repository root with an empty environment apart from PATH.
/// A one-step workflow whose code step returns 1.
pub const TINY_WORKFLOW: &str = r#"name: tiny
python: "3.11"
steps:
  - id: one
    explain: Returns one.
    code: |
      def main():
          return 1
"#;

/// Runs `stepward ARGS` from the repository (paths of the examples are relative to it), with
/// a data directory and a configuration folder of its own that do not exist yet, removed after:
/// never the repository's `./stepward-data` (which `scripts/demo` leaves there), the user's
/// `HOME` or configuration (newcomer 3, friction 1).
pub fn stepward(args: &[&str]) -> Output {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    Command::new(env!("CARGO_BIN_EXE_stepward"))
        .args(args)
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("STEPWARD_DATA_DIR", scratch.path().join("data"))
        .env("XDG_CONFIG_HOME", scratch.path().join("config"))
        .output()
        .expect("the stepward binary runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every bundled example workflow, as paths relative to the repository root.
pub fn example_workflows() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(repo_root().join("examples/workflows"))
        .expect("examples/workflows exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .map(|path| {
            path.strip_prefix(repo_root())
                .expect("inside the repository")
                .display()
                .to_string()
        })
        .collect();
    found.sort();
    assert!(
        found.len() >= 3,
        "expected at least three example workflows"
    );
    found
}

/// Makes every audit append of `home`'s database fail (a trigger, as the reviews did), to
/// test that a write whose audit entry cannot be written does not happen.
pub fn fail_every_audit_append(home: &Home) {
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .execute_batch(
            "CREATE TRIGGER test_audit_fails BEFORE INSERT ON audit_log
             BEGIN SELECT RAISE(ABORT, 'simulated audit failure'); END;",
        )
        .unwrap();
}

/// Undoes [`fail_every_audit_append`].
pub fn let_audit_appends_through(home: &Home) {
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .execute_batch("DROP TRIGGER test_audit_fails;")
        .unwrap();
}

/// A data directory and a configuration directory of its own, removed when dropped, so a test
/// never touches the person's real vault key or data.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temporary folder");
        // The sandbox state inside must be searchable by the sandboxes' unprivileged host ids.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
            .expect("the temporary folder's mode can be set");
        Home { dir }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs `stepward ARGS --data-dir <this home>` with stdin fed from `input`.
    pub fn stepward_with_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_stepward"))
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--sandbox-state-dir")
            .arg(self.dir.path().join("sandbox"))
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the stepward binary runs");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(input.as_bytes())
            .expect("stdin takes the input");
        child.wait_with_output().expect("stepward finishes")
    }

    pub fn stepward(&self, args: &[&str]) -> Output {
        self.stepward_with_stdin(args, "")
    }

    /// Writes `text` to a file of this home named after `path`'s last part and saves it as
    /// `path` of the workspace (`files put`), which must succeed; gives the file written.
    pub fn put(&self, path: &str, text: &str) -> PathBuf {
        let name = path.rsplit('/').next().unwrap_or(path);
        let file = self.dir.path().join(name);
        std::fs::write(&file, text).expect("the file to put is written");
        let saved = self.stepward(&["files", "put", path, "--from", file.to_str().unwrap()]);
        assert!(
            saved.status.success(),
            "files put {path}: {}",
            stderr(&saved)
        );
        file
    }

    /// `program` (a `stepward` binary) set up as this home runs it: the repository as its
    /// folder, an empty environment but `PATH`, and this home's configuration folder. No data
    /// directory argument: the caller adds what it tests.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(repo_root())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"));
        command
    }

    /// Every byte of the data directory's files, to search for what must never be stored.
    pub fn data_bytes(&self) -> Vec<u8> {
        test_support::bytes::bytes_under(&self.data_dir())
    }
}

impl Home {
    /// The cgroup parents the platform made for this data directory that exist now.
    pub fn cgroup_parents(&self) -> Vec<PathBuf> {
        let Ok(data_dir) = std::fs::canonicalize(self.data_dir()) else {
            return Vec::new();
        };
        use sha2::Digest;
        let digest = sha2::Sha256::digest(data_dir.as_os_str().as_encoded_bytes());
        let instance = hex::encode(&digest[..6]);
        let names = [
            format!("stepward-{instance}"),
            format!("stepward-gvisor-{instance}"),
        ];
        // The platform makes its parents where it may: at the top of a hierarchy, or under the
        // process's own group where only that is delegated (this host's memory hierarchy puts
        // them under `process_api/<id>/`). So look a few levels down, never following a link.
        let mut found = Vec::new();
        let mut folders = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
        while let Some((folder, depth)) = folders.pop() {
            for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                if !is_dir {
                    continue;
                }
                let name = entry.file_name();
                if names.iter().any(|wanted| name.to_str() == Some(wanted)) {
                    found.push(entry.path());
                } else if depth < 4 {
                    folders.push((entry.path(), depth + 1));
                }
            }
        }
        found
    }
}

impl Drop for Home {
    /// Removes the (empty) cgroup parents the platform made for this data directory, should a
    /// failed test leave any, and unmounts the sandbox scratch tmpfs a killed `stepward` left
    /// in it (a process that exits normally unmounts it itself); the temporary folder removes
    /// itself. `rmdir` only ever removes an empty cgroup.
    fn drop(&mut self) {
        for parent in self.cgroup_parents() {
            let _ = std::fs::remove_dir(&parent);
        }
        for point in scratch_mounts_below(self.dir.path()) {
            let _ = rustix::mount::unmount(&point, rustix::mount::UnmountFlags::DETACH);
        }
    }
}

/// The local backend's scratch tmpfs mounts (source `stepward-scratch`) at or below `dir`.
pub fn scratch_mounts_below(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(sandbox::mountinfo::point_type_and_source)
        .filter(|(point, fstype, source)| {
            *fstype == "tmpfs"
                && *source == sandbox::local::SCRATCH_TMPFS_SOURCE
                && point.starts_with(dir)
        })
        .map(|(point, _, _)| point)
        .collect()
}

/// The run id a `stepward run` printed.
pub fn run_id(output: &Output) -> String {
    let printed = stdout(output);
    let start = printed.find("run_").expect("a run id was printed");
    printed[start..]
        .chars()
        .take_while(|character| character.is_ascii_alphanumeric() || *character == '_')
        .collect()
}
