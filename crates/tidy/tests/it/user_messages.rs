//! Messages are for people (issue 12, 4): no Rust formatting (`Some("x")`, `"quoted"` by
//! `{:?}`) in an error message, no guarantee code (`(G19)`) in any text a person reads. Read
//! from the libraries' and the binary's own code (`crates/*/src`, test modules left out).

use std::fs;
use std::path::Path;

use tidy::{repo_root, rust_files};

/// The code of `path` a person may read the strings of: everything before its first
/// `#[cfg(test)]`, without comments; `None` for test-only files.
fn shipped_lines(root: &Path, path: &Path) -> Option<Vec<(usize, String)>> {
    let relative = path.strip_prefix(root).ok()?.display().to_string();
    let shipped = relative.contains("/src/")
        && !relative.contains("/tests/")
        && !relative.ends_with("tests.rs")
        && !relative.contains("/benches/")
        && !relative.contains("/bin/");
    if !shipped {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .enumerate()
            .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .map(|(index, line)| {
                let code = line.split(" // ").next().unwrap_or(line);
                (index + 1, code.to_owned())
            })
            .collect(),
    )
}

/// `(G` digits `)` anywhere in `line`.
fn has_guarantee_code(line: &str) -> bool {
    line.match_indices("(G").any(|(at, _)| {
        let rest = &line[at + 2..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(')')
    })
}

fn offenders(check: impl Fn(&str) -> bool) -> Vec<String> {
    let root = repo_root();
    let mut found = Vec::new();
    for path in rust_files(&root) {
        let Some(lines) = shipped_lines(&root, &path) else {
            continue;
        };
        for (number, line) in lines {
            if check(&line) {
                let relative = path.strip_prefix(&root).unwrap_or(&path).display();
                found.push(format!("{relative}:{number}: {}", line.trim()));
            }
        }
    }
    found
}

/// The header comment of the generated nftables file, which `nft` drops when it loads it.
const NOT_READ_BY_PEOPLE: &[&str] = &["crates/sandbox/src/net/ruleset.rs:48:"];

#[test]
fn no_message_names_a_guarantee_code() {
    let found: Vec<String> = offenders(has_guarantee_code)
        .into_iter()
        .filter(|found| {
            !NOT_READ_BY_PEOPLE
                .iter()
                .any(|left| found.starts_with(left))
        })
        .collect();
    assert!(
        found.is_empty(),
        "say what the rule is instead of its code: {found:#?}"
    );
}

#[test]
fn no_error_message_uses_rust_debug_formatting() {
    let found = offenders(|line| {
        let message = line.trim_start();
        (message.starts_with("#[error(\"") || message.starts_with("bail!(\""))
            && message.contains(":?}")
    });
    assert!(
        found.is_empty(),
        "format values for people (`{{name}}` in backticks, an Option said in words): {found:#?}"
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    assert!(has_guarantee_code("\"a secret value (G19)\""));
    assert!(!has_guarantee_code("\"(Go) G19\""));
}
