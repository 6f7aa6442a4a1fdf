//! House checks run by `cargo test`: doc headers, file sizes, forbidden macros, unsafe
//! confinement, and that CI runs exactly the README's test command.
//!
//! The checks live in `tests/it/`; this library only finds the files they read.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The repository root (two levels above this crate's manifest).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Every `.rs` file under `crates/`, skipping build output.
pub fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.join("crates")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if entry.file_name() != "target" {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The crate roots (`src/lib.rs` or `src/main.rs`) of every workspace member.
pub fn crate_roots(root: &Path) -> Vec<(String, PathBuf)> {
    let mut roots = Vec::new();
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return roots;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        for candidate in ["src/lib.rs", "src/main.rs"] {
            let path = entry.path().join(candidate);
            if path.is_file() {
                roots.push((name.clone(), path));
            }
        }
    }
    roots.sort();
    roots
}

/// A line's code: what stands before its `//` comment, with the text between double quotes
/// taken out (the quotes and escapes kept), so a path named in a comment, a log filter or a
/// message is not taken for one the code uses.
pub fn code_of(line: &str) -> String {
    let line = line.split("//").next().unwrap_or(line);
    let mut kept = String::new();
    let mut inside = false;
    let mut escaped = false;
    for c in line.chars() {
        if inside {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                inside = false;
                kept.push(c);
            }
        } else {
            if c == '"' {
                inside = true;
            }
            kept.push(c);
        }
    }
    kept
}

/// Where in `code` the path `prefix` (such as `server::`) begins a path of its own: not the
/// tail of a longer name (`my_server::`) or of another path (`platform::server::`).
pub fn path_starts(code: &str, prefix: &str) -> Vec<usize> {
    code.match_indices(prefix)
        .map(|(at, _)| at)
        .filter(|at| {
            !code[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .collect()
}
