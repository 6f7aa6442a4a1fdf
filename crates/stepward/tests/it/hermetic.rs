//! newcomer 3, friction 1: `check` and `reach` read what their account checks need without
//! the vault's root key. With an existing data directory and no way to find the key (no
//! `HOME`, no `XDG_CONFIG_HOME`, as the tests run the binary), they still check against the
//! account's names and say that its values were not checked, instead of stopping.

use crate::support::{Home, repo_root, stderr, stdout};

fn without_a_key(home: &Home, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stepward"))
        .args(args)
        .arg("--data-dir")
        .arg(home.data_dir())
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("the stepward binary runs")
}

#[test]
fn g5_check_and_reach_work_beside_a_data_directory_whose_root_key_cannot_be_found() {
    let home = Home::new();
    // An installation with a vault, as `scripts/demo` leaves one.
    let added = home.stepward_with_stdin(
        &["secrets", "set", "TOKEN"],
        "a-value-of-the-account-0001\n",
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let example = "examples/workflows/word_count.yaml";
    let checked = without_a_key(&home, &["check", example]);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}{}",
        stdout(&checked),
        stderr(&checked)
    );
    assert!(
        stdout(&checked).contains("word_count.yaml: valid"),
        "{}",
        stdout(&checked)
    );
    assert!(
        stderr(&checked).contains("not against its values"),
        "it says what it could not check: {}",
        stderr(&checked)
    );
    let reached = without_a_key(&home, &["reach", example]);
    assert_eq!(
        reached.status.code(),
        Some(0),
        "{}{}",
        stdout(&reached),
        stderr(&reached)
    );
    assert!(
        stdout(&reached).contains(spec::REACH_CAPTION),
        "{}",
        stdout(&reached)
    );
}
