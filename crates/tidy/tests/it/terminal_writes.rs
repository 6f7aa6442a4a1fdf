//! The stepward binary writes to its terminal only through `terminal.rs` (sandbox review 3,
//! finding 4): its `outln!`/`out!`/`errln!`/`err!` show every control and bidirectional
//! character as `?`, so text a step, a model or a file chose never drives the terminal. A
//! `println!` or a raw `stdout()` elsewhere would be a way around it. The step runtime
//! (`crates/worker`, issue 37) is a library: it writes to no terminal at all.

use std::fs;

use tidy::{repo_root, rust_files};

/// What writes to a terminal without the sanitiser. Built from pieces so this file does not
/// flag itself.
fn raw_writers() -> Vec<String> {
    vec![
        ["print", "ln!("].concat(),
        ["print", "!("].concat(),
        ["eprint", "ln!("].concat(),
        ["eprint", "!("].concat(),
        ["io::std", "out()"].concat(),
        ["io::std", "err()"].concat(),
    ]
}

#[test]
fn the_binary_writes_to_its_terminal_only_through_the_sanitising_writer() {
    for (crate_dir, least) in [("crates/stepward/src", 20), ("crates/worker/src", 10)] {
        check_terminal_writes(crate_dir, least);
    }
}

fn check_terminal_writes(crate_dir: &str, least: usize) {
    let root = repo_root();
    let source = root.join(crate_dir);
    let mut offenders = Vec::new();
    let mut seen = 0;
    for path in rust_files(&root) {
        let Ok(relative) = path.strip_prefix(&source) else {
            continue;
        };
        seen += 1;
        if relative.ends_with("terminal.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text
            .lines()
            .enumerate()
            .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        {
            let code = line.split("//").next().unwrap_or(line);
            // The file tool helper's protocol on its own stdout is not a terminal.
            if code.contains("helper::serve") {
                continue;
            }
            for writer in raw_writers() {
                // `outln!(` contains `tln!(`, never `println!(`; `eprint` is checked apart.
                let found = code.match_indices(&writer).any(|(at, _)| {
                    let before = code[..at].chars().next_back();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if found {
                    offenders.push(format!(
                        "{crate_dir}/{}:{}: {}",
                        relative.display(),
                        index + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        seen > least,
        "found too few files under {}",
        source.display()
    );
    assert!(
        offenders.is_empty(),
        "write with `outln!`, `out!`, `errln!` or `err!` (terminal.rs), which keep text a step \
         or a model chose from driving the terminal:\n{}",
        offenders.join("\n")
    );
}
