//! A test's `gN_` prefix means guarantee N (issue 37): every file holding a `gN_` test is
//! named in the "tested in" column of ARCHITECTURE.md's row GN, every path a row names is a
//! file of its crate, and no test names a guarantee that does not exist. The column groups
//! paths by crate: a crate's name followed by a backticked path opens its group; paths are
//! relative to the crate's `tests/` (`it/net/dns.rs`) or `src/` (`net/ruleset_tests.rs`) and
//! may hold `{a,b}` alternatives and `*`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use tidy::repo_root;

/// The number of guarantees of `docs/guarantees.md`.
const GUARANTEES: u32 = 27;

/// `it/{a,b}.rs` as `it/a.rs` and `it/b.rs`, braces expanded left to right.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_owned()];
    };
    let Some(close) = path[open..].find('}').map(|at| open + at) else {
        return vec![path.to_owned()];
    };
    path[open + 1..close]
        .split(',')
        .flat_map(|choice| {
            expand(&format!(
                "{}{}{}",
                &path[..open],
                choice.trim(),
                &path[close + 1..]
            ))
        })
        .collect()
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters.
fn matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .filter(|at| rest.is_char_boundary(*at))
                .any(|at| matches(tail, &rest[at..]))
        }
    }
}

/// The "tested in" cell of each row GN of the guarantee table.
fn table_rows(architecture: &str) -> BTreeMap<u32, String> {
    let mut rows = BTreeMap::new();
    let mut lines = architecture
        .lines()
        .skip_while(|line| !line.starts_with("| G | enforced in | tested in |"));
    lines.next();
    lines.next();
    for line in lines {
        let Some(rest) = line.strip_prefix("| G") else {
            break;
        };
        let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(number) = number.parse() else {
            continue;
        };
        let cell = line.rsplit(" | ").next().unwrap_or_default();
        rows.insert(number, cell.trim_end_matches(['|', ' ']).to_owned());
    }
    rows
}

/// `{crate: path patterns}` of one cell: a crate's name directly before a backticked path
/// opens its group.
fn mentions(cell: &str, crates: &BTreeSet<String>) -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut parts = cell.split('`');
    let mut before = parts.next().unwrap_or_default().to_owned();
    while let Some(path) = parts.next() {
        // The last word before this backtick, when it is a crate's name, opens its group.
        let word: String = before
            .trim_end()
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
            .next()
            .unwrap_or_default()
            .to_owned();
        if before.ends_with(' ') && crates.contains(&word) {
            current = Some(word);
        }
        if let Some(name) = &current {
            found.entry(name.clone()).or_default().extend(expand(path));
        }
        before = parts.next().unwrap_or_default().to_owned();
    }
    found
}

/// The guarantee a line declares a test of: `fn gN_...`, or `gN_name:` in a test-making macro.
fn guarantee_of(line: &str) -> Option<u32> {
    let trimmed = line.trim_start();
    let rest = match trimmed.find("fn g") {
        Some(at) => &trimmed[at + "fn g".len()..],
        None if trimmed.starts_with('g') && line.starts_with(' ') => &trimmed[1..],
        None => return None,
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[digits.len()..];
    let named = after.strip_prefix('_')?;
    let name: String = named
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    let declared = trimmed.contains("fn g") || named[name.len()..].trim_start().starts_with(':');
    (!digits.is_empty() && !name.is_empty() && declared).then(|| digits.parse().ok())?
}

/// Every file below `base`, relative to it.
fn files_below(base: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![base.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(base) {
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_file_of_gn_tests_is_in_the_guarantee_table_under_gn() {
    let root = repo_root();
    let architecture = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    let rows = table_rows(&architecture);
    assert_eq!(
        rows.len(),
        GUARANTEES as usize,
        "the table's rows: {:?}",
        rows.keys()
    );
    let crates: BTreeSet<String> = fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut gaps = Vec::new();
    let mut pairs = 0;
    // This crate's checks quote test names; they are not tests of a guarantee.
    for name in crates.iter().filter(|name| *name != "tidy") {
        for kind in ["tests", "src"] {
            let base = root.join("crates").join(name).join(kind);
            for relative in files_below(&base)
                .iter()
                .filter(|file| file.ends_with(".rs"))
            {
                let text = fs::read_to_string(base.join(relative)).unwrap_or_default();
                let numbers: BTreeSet<u32> = text.lines().filter_map(guarantee_of).collect();
                for number in numbers {
                    pairs += 1;
                    let named = rows.get(&number).map(|cell| mentions(cell, &crates));
                    let listed = named
                        .as_ref()
                        .and_then(|named| named.get(name))
                        .is_some_and(|patterns| {
                            patterns.iter().any(|pattern| matches(pattern, relative))
                        });
                    if !(1..=GUARANTEES).contains(&number) {
                        gaps.push(format!(
                            "crates/{name}/{kind}/{relative}: g{number}_ names no guarantee"
                        ));
                    } else if !listed {
                        gaps.push(format!(
                            "crates/{name}/{kind}/{relative} holds g{number}_ tests: name `{relative}` under {name} in row G{number}"
                        ));
                    }
                }
            }
        }
    }
    for (number, cell) in &rows {
        for (name, patterns) in mentions(cell, &crates) {
            let mut files = files_below(&root.join("crates").join(&name).join("tests"));
            files.extend(files_below(&root.join("crates").join(&name).join("src")));
            for pattern in patterns.iter().filter(|pattern| pattern.ends_with(".rs")) {
                if !files.iter().any(|file| matches(pattern, file)) {
                    gaps.push(format!(
                        "row G{number} names {name} `{pattern}`, which is no file"
                    ));
                }
            }
        }
    }
    assert!(
        pairs > 100,
        "only {pairs} files of gN_ tests were found: is the search right?"
    );
    assert!(
        gaps.is_empty(),
        "ARCHITECTURE.md's guarantee table and the tests disagree:\n{}",
        gaps.join("\n")
    );
}

#[test]
fn the_table_reader_expands_groups_braces_and_stars() {
    let crates: BTreeSet<String> = ["sandbox", "server"].map(str::to_owned).into();
    let cell =
        "sandbox `net/ruleset_tests.rs`, `it/net/{dns,reach}.rs`; server `it/*.rs` (`Engine::x`)";
    let found = mentions(cell, &crates);
    assert_eq!(
        found["sandbox"],
        ["net/ruleset_tests.rs", "it/net/dns.rs", "it/net/reach.rs"]
    );
    assert!(
        found["server"]
            .iter()
            .any(|pattern| matches(pattern, "it/audit_pages.rs"))
    );
    assert!(!matches("it/net/dns.rs", "it/net/dns.rs.bak"));
    assert_eq!(
        guarantee_of("    fn g11_a_step_has_no_network() {"),
        Some(11)
    );
    assert_eq!(guarantee_of("    g26_owner_only: Route,"), Some(26));
    assert_eq!(guarantee_of("fn not_a_guarantee_g11_() {}"), None);
    assert_eq!(guarantee_of("fn g11() {}"), None);
}
