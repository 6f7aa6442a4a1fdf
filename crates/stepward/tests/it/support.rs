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

/// Runs `stepward ARGS` from the repository root with an empty environment apart from PATH.
pub fn stepward(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stepward"))
        .args(args)
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
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
