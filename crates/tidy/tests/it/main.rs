//! The tidy checks: house rules that hold for every file in the workspace.

mod binary_ports;
mod error_chains;
mod guarantee_table;
mod module_loops;
mod sandbox_seam;
mod scripts;
mod terminal_writes;
mod time_arithmetic;
mod user_messages;
mod workspace_paths;

use std::fs;

use tidy::{crate_roots, repo_root, rust_files};

/// The only crate allowed to contain `unsafe` code (STYLE 9).
const UNSAFE_CRATE: &str = "sandbox";
const MAX_LINES: usize = 1_000;

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = repo_root();
    let files = rust_files(&root);
    assert!(
        files.len() > 10,
        "tidy found too few files under {}",
        root.display()
    );
    let offenders: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "files without a leading `//!` doc: {offenders:#?}"
    );
}

#[test]
fn no_file_is_over_a_thousand_lines() {
    let offenders: Vec<String> = rust_files(&repo_root())
        .iter()
        .filter_map(|path| {
            let lines = fs::read_to_string(path).unwrap_or_default().lines().count();
            (lines > MAX_LINES).then(|| format!("{} has {lines} lines", path.display()))
        })
        .collect();
    assert!(offenders.is_empty(), "split these files: {offenders:#?}");
}

#[test]
fn no_debugging_or_placeholder_macros() {
    // Built from pieces so this file does not flag itself.
    let banned = [
        ["dbg", "!("].concat(),
        ["todo", "!("].concat(),
        ["unimplemented", "!("].concat(),
    ];
    let mut offenders = Vec::new();
    for path in rust_files(&repo_root()) {
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if banned
                .iter()
                .any(|macro_call| line.contains(macro_call.as_str()))
            {
                offenders.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(offenders.is_empty(), "remove these: {offenders:#?}");
}

#[test]
fn unsafe_code_is_forbidden_outside_the_sandbox_crate() {
    let roots = crate_roots(&repo_root());
    assert!(
        roots.iter().any(|(name, _)| name == "spec"),
        "no crate roots found"
    );
    let offenders: Vec<String> = roots
        .iter()
        .filter(|(name, _)| name != UNSAFE_CRATE)
        .filter(|(_, path)| {
            !fs::read_to_string(path)
                .unwrap_or_default()
                .contains("#![forbid(unsafe_code)]")
        })
        .map(|(_, path)| path.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "add `#![forbid(unsafe_code)]` to: {offenders:#?}"
    );
}

#[test]
fn ci_runs_exactly_the_readme_test_command() {
    let root = repo_root();
    let readme = fs::read_to_string(root.join("README.md")).unwrap_or_default();
    let ci = fs::read_to_string(root.join(".ci/run")).unwrap_or_default();
    // The README marks its test command with a `# run every test` comment on the line before it.
    let command = readme
        .lines()
        .skip_while(|line| line.trim() != "# run every test")
        .nth(1)
        .map(str::trim)
        .unwrap_or_default();
    assert!(
        !command.is_empty(),
        "README.md has no line after `# run every test`"
    );
    assert!(
        ci.lines().any(|line| line.trim() == command),
        ".ci/run does not run the README's test command `{command}`"
    );
}
