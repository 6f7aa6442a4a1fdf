//! The binary wires and prints (issue 37): it implements no port of `engine`, `agent`,
//! `sandbox`, `storage`, `platform` or `server`, whose implementations live in libraries that
//! are tested in-process (the step runtime in `crates/worker`); it names nothing of the server
//! but what serves it; and the step runtime names no storage backend, so a second store needs
//! no change there.

use std::fs;
use std::path::Path;

use tidy::{code_of, path_starts, repo_root, rust_files};

/// The traits every `pub trait NAME` of the crates under `crates/<name>/src` declares.
fn traits_of(root: &Path, crates: &[&str]) -> Vec<(String, String)> {
    let sources: Vec<(&str, std::path::PathBuf)> = crates
        .iter()
        .map(|name| (*name, root.join("crates").join(name).join("src")))
        .collect();
    let mut found = Vec::new();
    for path in rust_files(root) {
        let Some((name, _)) = sources.iter().find(|(_, source)| path.starts_with(source)) else {
            continue;
        };
        for line in fs::read_to_string(&path).unwrap_or_default().lines() {
            let Some(rest) = line.trim_start().strip_prefix("pub trait ") else {
                continue;
            };
            let trait_name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !trait_name.is_empty() {
                found.push(((*name).to_owned(), trait_name));
            }
        }
    }
    found
}

#[test]
fn the_binary_implements_no_port_of_the_engine_the_agent_the_sandbox_or_the_store() {
    let root = repo_root();
    let ports = traits_of(
        &root,
        &[
            "engine",
            "agent",
            "sandbox",
            "storage",
            "platform",
            "server",
            "workspace",
        ],
    );
    assert!(
        ports.iter().any(|(_, name)| name == "StepExecutor")
            && ports.iter().any(|(_, name)| name == "Isolation"),
        "the ports were not found: {ports:?}"
    );
    let binary = root.join("crates/stepward/src");
    let mut offenders = Vec::new();
    for path in rust_files(&root) {
        if !path.starts_with(&binary) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or(line).trim_start();
            if !code.starts_with("impl") || !code.contains(" for ") {
                continue;
            }
            let implemented = code.split(" for ").next().unwrap_or_default();
            let last = implemented
                .rsplit("::")
                .next()
                .unwrap_or(implemented)
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .split('<')
                .next()
                .unwrap_or_default();
            if let Some((owner, name)) = ports.iter().find(|(_, name)| name == last) {
                offenders.push(format!(
                    "{}:{}: implements {owner}::{name}",
                    path.strip_prefix(&root).unwrap_or(&path).display(),
                    index + 1
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the binary wires and prints; a port's implementation belongs in a library (the step \
         runtime is crates/worker):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_step_runtime_and_the_doors_library_name_no_storage_backend() {
    for crate_name in ["worker", "platform"] {
        names_no_storage_backend(crate_name);
    }
}

fn names_no_storage_backend(crate_name: &str) {
    let root = repo_root();
    let manifest_path = root.join("crates").join(crate_name).join("Cargo.toml");
    let Ok(manifest) = fs::read_to_string(&manifest_path) else {
        panic!("{} cannot be read", manifest_path.display());
    };
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or_default();
    assert!(
        !dependencies.contains("storage-sqlite"),
        "crates/{crate_name} depends on a storage backend:\n{dependencies}"
    );
    let source = root.join("crates").join(crate_name).join("src");
    let mut offenders = Vec::new();
    let mut seen = 0;
    for path in rust_files(&root) {
        if !path.starts_with(&source) {
            continue;
        }
        seen += 1;
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text
            .lines()
            .enumerate()
            .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        {
            if line.contains("storage_sqlite") || line.contains("SqliteStore") {
                offenders.push(format!(
                    "{}:{}: {}",
                    path.strip_prefix(&root).unwrap_or(&path).display(),
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(seen > 0, "no source of crates/{crate_name} was found");
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

/// What the binary may name in `server`: the router and what serves it (its settings, its
/// state, its keys, the listener). Everything else both doors do is in `platform` or
/// `worker`, so the CLI never calls the server's handlers' code.
const SERVING: &[&str] = &[
    "AppOptions",
    "AppState",
    "Backends",
    "ListenerLimits",
    "ServerKeys",
    "StepIsolation",
    // The approve-link mail a serving process drains (issue 41): serving, never a door.
    "mail",
    "raise_open_file_limit",
    "router",
    "serve",
    "serve_tls",
    "tls_server_config",
];

/// Every name the text takes from `server::` (`server::a`, `server::{a, b::c as d}`), with the
/// line it starts on. Comments and the text of string literals (a log filter names a module)
/// are left out.
fn names_from_server(text: &str) -> Vec<(usize, String)> {
    let code: String = text.lines().map(code_of).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    for at in path_starts(&code, "server::") {
        let line = code[..at].matches('\n').count() + 1;
        let after = &code[at + "server::".len()..];
        let group = if let Some(inner) = after.strip_prefix('{') {
            inner.split('}').next().unwrap_or_default()
        } else {
            after
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default()
        };
        for item in group.split(',') {
            let name: String = item
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((line, name));
            }
        }
    }
    found
}

#[test]
fn the_cli_reaches_the_server_only_to_serve_it() {
    let root = repo_root();
    let binary = root.join("crates/stepward/src");
    let mut offenders = Vec::new();
    let mut seen = 0;
    for path in rust_files(&root) {
        if !path.starts_with(&binary) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (line, name) in names_from_server(&text) {
            seen += 1;
            if !SERVING.contains(&name.as_str()) {
                offenders.push(format!(
                    "{}:{line}: server::{name}",
                    path.strip_prefix(&root).unwrap_or(&path).display()
                ));
            }
        }
    }
    assert!(
        seen > 0,
        "the binary names nothing of the server: is it still the one that serves?"
    );
    assert!(
        offenders.is_empty(),
        "the CLI calls the server only to serve it; what both doors do belongs in `platform` \
         (or `worker`), called by both:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn names_from_the_server_are_read_from_paths_and_groups() {
    let text = "use server::{AppState, Backends as B};\n// server::hidden\nlet x = \
                server::router(y); platform::server::no; my_server::no;\n\
                let f = \"warn,server::layers=info\"; server::serve(\"a\\\"b\");\n";
    let names: Vec<String> = names_from_server(text)
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    assert_eq!(names, ["AppState", "Backends", "router", "serve"]);
}
