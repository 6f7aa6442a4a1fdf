//! The binary has no import loop among its modules (issue 37): each module of
//! `crates/stepward/src` stands above what it uses, so its wiring reads from the commands down
//! to the configuration. A reference `crate::NAME` (or `use crate::{NAME, ...}`) outside the
//! module's tests is an arrow to module `NAME`; the crate root (`main.rs`), which declares
//! every module, is not one of them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use tidy::{repo_root, rust_files};

/// The identifiers `text` names right after `crate::`, a braced group's first names included.
fn crate_references(text: &str) -> BTreeSet<String> {
    let identifier = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut segment_start = true;
            for (index, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => segment_start = true,
                    c if segment_start && depth == 1 && !c.is_whitespace() => {
                        found.insert(identifier(&group[index..]));
                        segment_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(identifier(rest));
        }
    }
    found
}

/// A loop of `graph`, if it has one, as the modules on it.
fn a_loop(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|on| on == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(found) = visit(node, graph, &mut Vec::new(), &mut done) {
            return Some(found);
        }
    }
    None
}

#[test]
fn the_binarys_modules_import_each_other_in_no_loop() {
    let root = repo_root();
    let source = root.join("crates/stepward/src");
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files(&root) {
        let Ok(relative) = path.strip_prefix(&source) else {
            continue;
        };
        let first = relative
            .components()
            .next()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if first == "main.rs" || first == "bin" {
            continue;
        }
        let module = first.trim_end_matches(".rs").to_owned();
        let text = fs::read_to_string(&path).unwrap_or_default();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        uses.entry(module)
            .or_default()
            .extend(crate_references(code));
    }
    assert!(
        uses.len() > 10,
        "found too few modules under {}",
        source.display()
    );
    let modules: BTreeSet<String> = uses.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = uses
        .into_iter()
        .map(|(module, names)| {
            let arrows = names
                .into_iter()
                .filter(|name| modules.contains(name) && *name != module)
                .collect();
            (module, arrows)
        })
        .collect();
    if let Some(found) = a_loop(&graph) {
        panic!(
            "the binary's modules import each other in a loop: {}; move what both need below \
             both",
            found.join(" -> ")
        );
    }
}

#[test]
fn a_loop_is_found_and_a_braced_use_counts() {
    let references =
        crate_references("use crate::{app::{App, X}, config::Config};\ncrate::terminal::x");
    assert_eq!(
        references,
        ["app", "config", "terminal"].map(str::to_owned).into()
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), ["b".to_owned()].into()),
        ("b".to_owned(), ["a".to_owned()].into()),
    ]
    .into();
    assert!(a_loop(&graph).is_some());
    let line: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), ["b".to_owned()].into()),
        ("b".to_owned(), BTreeSet::new()),
    ]
    .into();
    assert!(a_loop(&line).is_none());
}
