//! Data-driven tests: every file under `test_data/ok` parses and its value matches its
//! snapshot; every file under `test_data/err` fails with the rule its first line names
//! (a `# expect: code` comment line) and its diagnostics match the snapshot.

use std::path::{Path, PathBuf};

use crate::render;

fn fixture_files(kind: &str) -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", directory.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", directory.display());
    files
}

enum Expect {
    Ok,
    Err,
}

/// The one helper: parses every fixture of `kind` with the parser its extension names and
/// compares the outcome with the snapshot beside the fixtures.
fn check(kind: &str) {
    let expect = match kind {
        "ok" => Expect::Ok,
        _ => Expect::Err,
    };
    for path in fixture_files(kind) {
        let text = std::fs::read_to_string(&path).unwrap();
        let file_name = path.file_name().unwrap().to_string_lossy().to_string();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let is_agent = file_name.ends_with(".md");
        let outcome = if is_agent {
            spec::parse_agent(&file_name, &text).map(|agent| render::agent(&agent))
        } else {
            spec::parse_workflow(&file_name, &text).map(|workflow| render::workflow(&workflow))
        };
        let rendered = match (&expect, outcome) {
            (Expect::Ok, Ok(rendered)) => rendered,
            (Expect::Ok, Err(diagnostics)) => panic!(
                "{file_name} should parse:\n{}",
                render::diagnostics(&diagnostics, &text)
            ),
            (Expect::Err, Ok(_)) => panic!("{file_name} should be rejected"),
            (Expect::Err, Err(diagnostics)) => {
                let expected_code = text
                    .lines()
                    .find_map(|line| line.strip_prefix("# expect: "))
                    .map(str::trim)
                    .unwrap_or_else(|| panic!("{file_name} does not say `# expect: code`"));
                assert!(
                    diagnostics
                        .iter()
                        .any(|diagnostic| diagnostic.code == expected_code),
                    "{file_name} should report {expected_code}:\n{}",
                    render::diagnostics(&diagnostics, &text)
                );
                render::diagnostics(&diagnostics, &text)
            }
        };
        insta::with_settings!({
            snapshot_path => Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data").join("snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("{kind}__{stem}"), rendered);
        });
    }
}

#[test]
fn g1_every_ok_fixture_parses_into_the_value_in_its_snapshot() {
    check("ok");
}

#[test]
fn g5_every_err_fixture_reports_its_rule_with_a_location() {
    check("err");
}
