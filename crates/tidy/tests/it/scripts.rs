//! The scripts a newcomer runs first say what takes time (issue 12, 11): `scripts/demo`
//! warns that the first build takes minutes and lets cargo show its progress.

use std::fs;

use tidy::repo_root;

#[test]
fn the_demo_says_the_first_build_takes_minutes_and_shows_cargos_progress() {
    let demo = fs::read_to_string(repo_root().join("scripts/demo")).unwrap_or_default();
    let build = demo
        .lines()
        .find(|line| line.trim_start().starts_with("cargo build"))
        .unwrap_or_default();
    assert!(!build.is_empty(), "scripts/demo builds stepward with cargo");
    assert!(
        !build.contains("--quiet") && !build.contains(" -q"),
        "cargo's progress is hidden: {build}"
    );
    let before: String = demo
        .lines()
        .take_while(|line| !line.trim_start().starts_with("cargo build"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        before.contains("minutes"),
        "scripts/demo says nothing before a build that takes minutes"
    );
}
