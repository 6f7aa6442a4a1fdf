//! The authoring lints of `stepward check` (issue 17, section 4): each fixture in
//! `tests/fixtures/lints/` says on its first line what fires where (`# fires: CODE at L:C`) or
//! that it is a close miss that must not fire (`# close miss: ...`). Warnings, never errors:
//! the check still passes.

use crate::support::{repo_root, stdout};

const LINTS: &[&str] = &["networked-write-ungated", "offline-work-in-networked-step"];

#[test]
fn lints_fire_on_their_fixtures_at_file_line_column_and_not_on_the_close_misses() {
    let folder = repo_root().join("crates/stepward/tests/fixtures/lints");
    let mut fixtures: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    fixtures.sort();
    let (mut fired, mut missed) = (0, 0);
    for path in fixtures {
        let text = std::fs::read_to_string(&path).unwrap();
        let header = text.lines().next().unwrap();
        let checked = crate::support::stepward(&["check", "--json", path.to_str().unwrap()]);
        assert_eq!(
            checked.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            stdout(&checked)
        );
        let reports: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
        let found: Vec<(String, u64, u64)> = reports[0]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|warning| LINTS.contains(&warning["code"].as_str().unwrap()))
            .map(|warning| {
                (
                    warning["code"].as_str().unwrap().to_owned(),
                    warning["line"].as_u64().unwrap(),
                    warning["column"].as_u64().unwrap(),
                )
            })
            .collect();
        if let Some(expected) = header.strip_prefix("# fires: ") {
            let (code, place) = expected.split_once(" at ").unwrap();
            let place = place.split_whitespace().next().unwrap();
            let (line, column) = place.split_once(':').unwrap();
            assert_eq!(
                found,
                vec![(
                    code.to_owned(),
                    line.parse().unwrap(),
                    column.parse().unwrap()
                )],
                "{}",
                path.display()
            );
            fired += 1;
        } else {
            assert!(header.starts_with("# close miss"), "{}", path.display());
            assert!(found.is_empty(), "{}: {found:?}", path.display());
            missed += 1;
        }
    }
    assert!(
        fired >= 2 && missed >= 2,
        "each lint has a fixture and a close miss"
    );
}

#[test]
fn a_lint_is_printed_as_a_warning_with_file_line_and_column() {
    let path = repo_root().join("crates/stepward/tests/fixtures/lints/offline_work_validates.yaml");
    let checked = crate::support::stepward(&["check", path.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(0));
    let printed = format!(
        "{}{}",
        stdout(&checked),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(
        printed.contains("warning[offline-work-in-networked-step]"),
        "{printed}"
    );
    assert!(
        printed.contains("offline_work_validates.yaml:14:11"),
        "{printed}"
    );
}
