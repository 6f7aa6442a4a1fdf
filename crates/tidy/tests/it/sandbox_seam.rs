//! A backend is built from its options (issue 37): no crate but `sandbox` reaches into its
//! network set-up, its mount table reader or a backend's own module (`local`, `gvisor`), so a
//! third backend (a pod) changes `sandbox::backends` and none of its callers.

use std::fs;

use tidy::{code_of, path_starts, repo_root, rust_files};

/// The modules of `sandbox` that only `sandbox` may name.
const INSIDE: &[&str] = &["net", "mountinfo", "local", "gvisor"];

/// Where `text` names one of [`INSIDE`] through `sandbox::`, comments and strings left out.
fn reaches_inside(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let code = code_of(line);
        for module in INSIDE {
            let path = format!("sandbox::{module}::");
            for _ in path_starts(&code, &path) {
                found.push((index + 1, path.clone()));
            }
        }
    }
    found
}

#[test]
fn no_crate_but_the_sandbox_reaches_into_its_network_mounts_or_backends() {
    let root = repo_root();
    let crates = root.join("crates");
    let sandbox = crates.join("sandbox");
    let mut offenders = Vec::new();
    let mut seen = 0;
    for path in rust_files(&root) {
        let Ok(relative) = path.strip_prefix(&crates) else {
            continue;
        };
        // Shipped code only: tests and benches may drive a backend directly.
        let shipped = relative
            .components()
            .nth(1)
            .is_some_and(|part| part.as_os_str() == "src");
        if path.starts_with(&sandbox) || !shipped {
            continue;
        }
        seen += 1;
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (line, reached) in reaches_inside(&text) {
            offenders.push(format!("crates/{}:{line}: {reached}", relative.display()));
        }
    }
    assert!(seen > 0, "no source outside the sandbox was read");
    assert!(
        offenders.is_empty(),
        "build a backend with sandbox::Backends from sandbox::BackendOptions instead:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_reach_inside_is_found_and_a_comment_or_a_longer_name_is_not() {
    let text = "let a = sandbox::net::install_policy(x);\n// sandbox::local::EarlyHelper\n\
                let b = my_sandbox::gvisor::x; let c = sandbox::Backends::prepare(o);\n";
    let found: Vec<usize> = reaches_inside(text)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(found, [1]);
}
