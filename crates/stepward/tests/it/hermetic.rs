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

/// newcomer 3, friction 2: a read command run in the wrong folder made a second, empty
/// installation and a new root key, and "no run with id X" did not say where it looked. Read
/// commands refuse a data directory that does not exist, naming it, and create nothing; a
/// command that makes an installation says where first; a missing run names the installation.
#[test]
fn read_commands_never_create_an_installation_and_a_missing_run_names_where_it_was_sought() {
    let home = Home::new();
    for args in [
        vec!["runs", "list"],
        vec!["runs", "show", "run_0123456789abcdef0123456789abcdef"],
        vec!["runs", "events", "run_0123456789abcdef0123456789abcdef"],
        vec!["files", "list"],
        vec!["files", "history"],
        vec!["workflows", "list"],
        vec!["secrets", "list"],
        vec!["connections", "list"],
        vec!["models", "list"],
        vec!["audit", "verify"],
    ] {
        let output = home.stepward(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stdout(&output)
        );
        let said = stderr(&output);
        assert!(
            said.contains("there is no stepward installation in")
                && said.contains(&home.data_dir().display().to_string())
                && said.contains("--data-dir"),
            "{args:?}: {said}"
        );
        assert!(!home.data_dir().exists(), "{args:?} made a data directory");
        assert!(
            !home.dir.path().join("config/stepward").exists(),
            "{args:?} made a root key"
        );
    }
    let made = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-value-0000000001\n");
    assert!(made.status.success(), "{}", stderr(&made));
    let said = stderr(&made);
    let making = said
        .find("No stepward installation in")
        .unwrap_or_else(|| panic!("{said}"));
    let key = said.find("root key").unwrap_or_else(|| panic!("{said}"));
    assert!(making < key, "where it is made is said first: {said}");
    let missing = home.stepward(&["runs", "show", "run_0123456789abcdef0123456789abcdef"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains(&format!(
            "in the installation {}",
            home.data_dir().display()
        )),
        "{}",
        stderr(&missing)
    );
}
