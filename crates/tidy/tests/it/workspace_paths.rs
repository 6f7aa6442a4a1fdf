//! Files and the workspace as ports (issue 39): no `&Path` or `PathBuf` of a workspace or of
//! a step's files crosses a crate boundary above `workspace` and `sandbox`. A step gets a
//! [`workspace::StepFiles`] handle, a revision goes through the workspace's `RevisionStore`
//! port, and the working folder's host path never leaves the `workspace` crate, so a store
//! with no shared folder (Postgres, an object store) and a backend with no host folder (a pod)
//! change no caller.

use std::fs;
use std::path::Path;

use tidy::{code_of, repo_root, rust_files};

/// The crates above `workspace` and `sandbox` that run or show a step: none of them may name a
/// workspace's host folder.
const ABOVE: &[&str] = &[
    "engine", "worker", "server", "stepward", "platform", "agent", "llm",
];

/// The names a host path of the working folder went by, before the ports.
const FORBIDDEN: &[&str] = &["work_dir", "files_dir", "workspace_dir"];

/// Whether `code` uses `name` as a name of its own (not the tail of a longer one).
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Whether `code` names the type `Path` or `PathBuf` (not `RelPath`).
fn names_a_path_type(code: &str) -> bool {
    names(code, "Path") || names(code, "PathBuf")
}

/// Public items of `workspace` that return a path which is no host path of a workspace.
const RELATIVE: &[&str] = &[
    // A workspace-relative path, as the host's path type.
    "pub fn as_path(&self) -> &Path {",
];

/// Every `crate/<name>/…` file of `crates`, shipped or test, with its crate's name.
fn files_of(root: &Path, crates: &[&str]) -> Vec<(String, std::path::PathBuf)> {
    let base = root.join("crates");
    rust_files(root)
        .into_iter()
        .filter_map(|path| {
            let name = path
                .strip_prefix(&base)
                .ok()?
                .components()
                .next()?
                .as_os_str()
                .to_str()?
                .to_owned();
            crates.contains(&name.as_str()).then_some((name, path))
        })
        .collect()
}

#[test]
fn no_crate_above_the_workspace_and_the_sandbox_names_a_workspace_folder() {
    let root = repo_root();
    let mut offenders = Vec::new();
    let mut seen = 0;
    for (_, path) in files_of(&root, ABOVE) {
        // Shipped code only: a test may read a working folder it made, as an operator would.
        if !path.components().any(|part| part.as_os_str() == "src") {
            continue;
        }
        seen += 1;
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text.lines().enumerate() {
            let code = code_of(line);
            for name in FORBIDDEN {
                if names(&code, name) {
                    offenders.push(format!(
                        "{}:{}: {name}",
                        path.strip_prefix(&root).unwrap_or(&path).display(),
                        index + 1
                    ));
                }
            }
        }
    }
    assert!(
        seen > 50,
        "too few shipped files of the crates above were read"
    );
    assert!(
        offenders.is_empty(),
        "hand a step `workspace::StepFiles` (Workspace::step_files) and read it with \
         StepFiles::reader; never a host path of the workspace:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_workspace_hands_out_no_host_path() {
    let root = repo_root();
    let mut offenders = Vec::new();
    let mut signatures = 0;
    for (_, path) in files_of(&root, &["workspace"]) {
        if !path.components().any(|part| part.as_os_str() == "src") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        let mut in_tests = false;
        for (index, line) in text.lines().enumerate() {
            let code = code_of(line);
            if code.trim_start().starts_with("mod tests") {
                in_tests = true;
            }
            let trimmed = code.trim_start();
            if in_tests || !(trimmed.starts_with("pub fn ") || trimmed.starts_with("pub ")) {
                continue;
            }
            signatures += 1;
            // A public function returning a path, or a public field holding one.
            let returns_path = trimmed.starts_with("pub fn ")
                && !RELATIVE.contains(&trimmed.trim_end())
                && code.split("->").nth(1).is_some_and(names_a_path_type);
            let field_is_path = !trimmed.starts_with("pub fn ")
                && !trimmed.starts_with("pub use")
                && !trimmed.starts_with("pub mod")
                && trimmed.contains(':')
                && names_a_path_type(trimmed);
            if returns_path || field_is_path {
                offenders.push(format!(
                    "{}:{}: {}",
                    path.strip_prefix(&root).unwrap_or(&path).display(),
                    index + 1,
                    trimmed.trim()
                ));
            }
        }
    }
    assert!(
        signatures > 50,
        "too few public items of the workspace were read"
    );
    assert!(
        offenders.is_empty(),
        "the workspace's host folders stay inside the crate (issue 39):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_step_gets_its_files_as_a_handle_at_every_seam() {
    let root = repo_root();
    let seams = [
        (
            "crates/engine/src/executor.rs",
            "pub files: &'a workspace::StepFiles,",
        ),
        (
            "crates/sandbox/src/lib.rs",
            "pub files: workspace::StepFiles,",
        ),
    ];
    for (file, field) in seams {
        let text = fs::read_to_string(root.join(file)).unwrap();
        assert!(
            text.matches(field).count() >= 1,
            "{file} no longer hands a step its files as `{field}`"
        );
    }
    let executor = fs::read_to_string(root.join("crates/engine/src/executor.rs")).unwrap();
    assert_eq!(
        executor
            .matches("pub files: &'a workspace::StepFiles,")
            .count(),
        3,
        "ExecutionRequest, NetworkQuery and ToolTestRun all carry the handle"
    );
}
