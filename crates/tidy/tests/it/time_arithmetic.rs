//! No `Instant + Duration` or `SystemTime + Duration` in shipped code: `+` panics when the sum
//! does not fit, and a duration a tenant or a model declares must never take the platform down
//! (agents review, finding 2: `tool_timeout_s: 18446744073709551615` panicked in
//! `Instant::now() + timeout`). Shipped code writes `checked_add` and says what an overflow
//! means. Read from `crates/*/src` (test modules and binaries left out, as `user_messages`).

use std::fs;

use tidy::{repo_root, rust_files};

/// The expressions that are an `Instant` or a `SystemTime` wherever the code base writes them.
const TIME_VALUES: &[&str] = &["Instant::now()", "SystemTime::now()", "UNIX_EPOCH"];

/// The column of an `Instant + …` or `SystemTime + …` in `line`, if any: one of
/// [`TIME_VALUES`], or a local named `now`, then `+` (not `+=`, not `++`).
fn time_plus(line: &str) -> Option<usize> {
    let plus_after = |end: usize| {
        let rest = line[end..].trim_start();
        rest.starts_with('+') && !rest.starts_with("+=") && !rest.starts_with("++")
    };
    for value in TIME_VALUES {
        for (at, _) in line.match_indices(value) {
            if plus_after(at + value.len()) {
                return Some(at);
            }
        }
    }
    for (at, _) in line.match_indices("now") {
        let before = line[..at].chars().next_back();
        let whole_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if whole_word && plus_after(at + 3) {
            return Some(at);
        }
    }
    None
}

#[test]
fn time_plus_is_found_and_checked_add_is_not() {
    assert_eq!(time_plus("let d = Instant::now() + timeout;"), Some(8));
    assert_eq!(time_plus("kill = Some(now + KILL_GRACE);"), Some(12));
    assert_eq!(time_plus("let t = SystemTime::now()+ d;"), Some(8));
    assert_eq!(time_plus("let d = Instant::now().checked_add(t);"), None);
    assert_eq!(time_plus("known + 1"), None);
    assert_eq!(time_plus("now += 1"), None);
}

#[test]
fn no_instant_or_system_time_plus_a_duration_in_shipped_code() {
    let root = repo_root();
    let mut offenders = Vec::new();
    for path in rust_files(&root) {
        let relative = path
            .strip_prefix(&root)
            .map(|relative| relative.display().to_string())
            .unwrap_or_default();
        let shipped = relative.contains("/src/")
            && !relative.ends_with("tests.rs")
            && !relative.contains("/bin/");
        if !shipped {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text
            .lines()
            .enumerate()
            .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let code = line.split(" // ").next().unwrap_or(line);
            if let Some(column) = time_plus(code) {
                offenders.push(format!(
                    "{relative}:{}:{}: {}",
                    index + 1,
                    column + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "write `checked_add` (and say what an overflow means) instead of `+` on a time:\n{}",
        offenders.join("\n")
    );
}
