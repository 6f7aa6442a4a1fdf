//! The credentials review's reproductions run end to end with real sandboxes (these tests need
//! root, as CI has): each writes a value of the account through one of the platform's own
//! writers and searches the data directory and what the CLI shows for it.

use crate::support::{Home, stderr, stdout};
use test_support::bytes::contains;

/// A numeric credential of 23 digits: as a JSON float only 16 of them would survive.
const ACCOUNT_NUMBER: &str = "98765432109876543210987";

/// G17 (review "credentials" A9): a long numeric credential returned as a JSON number is
/// scrubbed by the digits the step wrote, not by the float it would become.
#[test]
fn g17_a_numeric_credential_returned_as_a_number_is_scrubbed_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "bank", "--field", "account_number"],
        &format!("{ACCOUNT_NUMBER}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let workflow = home.dir.path().join("w_num.yaml");
    std::fs::write(
        &workflow,
        r#"name: leak_number
python: "3.11"
steps:
  - id: num
    explain: Returns the numeric credential as a number.
    connections: [bank]
    code: |
      import os
      def main():
          n = int(os.environ["CONN_BANK_ACCOUNT_NUMBER"])
          print(n * 1)
          return {"as_int": n, "as_float": float(n), "as_str": str(n), "list": [n, 1]}
"#,
    )
    .unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap(), "--json"]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let shown = stdout(&ran);
    // 16 significant digits: what survives of the value as a float.
    let float_digits = &ACCOUNT_NUMBER[..16];
    assert!(!shown.contains(float_digits), "{shown}");
    assert!(!contains(&home.data_bytes(), float_digits), "stored");
    let summary: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let output = &summary["steps"][0]["output"];
    assert_eq!(output["as_int"], "[REDACTED]", "{output}");
    assert_eq!(output["list"][1], 1, "other numbers stay numbers: {output}");
}

/// Runs `stepward ARGS --data-dir DATA` with `XDG_CONFIG_HOME` set to `config`.
fn stepward_with_config(
    data: &std::path::Path,
    config: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stepward"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("XDG_CONFIG_HOME", config)
        .output()
        .unwrap()
}

fn files_under(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// G20 (review "credentials" A6): the root key never lands inside the data directory, whatever
/// names it: the default file under a configuration directory inside it, a key file that is a
/// link to a file inside it, or a rotation's new key file inside it. Each is refused before a
/// key is generated or anything is rotated.
#[test]
fn g20_the_root_key_is_refused_inside_the_data_directory_from_every_source() {
    let home = Home::new();
    let data = home.dir.path().join("data");
    // A service user whose configuration directory is inside the data directory.
    let refused = stepward_with_config(&data, &data.join("cfg"), &["secrets", "set", "TOKEN"]);
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("inside the data directory"),
        "{}",
        stderr(&refused)
    );
    let keys: Vec<_> = files_under(&data)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|extension| extension == "key"))
        .collect();
    assert!(keys.is_empty(), "a key was generated inside: {keys:?}");

    // A proper start, then a rotation whose new key file is inside the data directory.
    let config = home.dir.path().join("config");
    let started = stepward_with_config(&data, &config, &["connections", "list"]);
    assert_eq!(started.status.code(), Some(0), "{}", stderr(&started));
    let inside = data.join("newroot.key");
    std::fs::write(&inside, format!("{}\n", "ab".repeat(32))).unwrap();
    let rotated = stepward_with_config(
        &data,
        &config,
        &[
            "keys",
            "rotate-root",
            "--new-root-key-file",
            inside.to_str().unwrap(),
        ],
    );
    assert_ne!(rotated.status.code(), Some(0), "{}", stderr(&rotated));
    assert!(
        stderr(&rotated).contains("inside the data directory"),
        "{}",
        stderr(&rotated)
    );
    // Nothing was rotated: the old key still opens the vault.
    let again = stepward_with_config(&data, &config, &["connections", "list"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));

    // A key file outside that is a link to one inside.
    let link = home.dir.path().join("link.key");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    let linked = stepward_with_config(
        &data,
        &config,
        &[
            "--root-key-file",
            link.to_str().unwrap(),
            "connections",
            "list",
        ],
    );
    assert_ne!(linked.status.code(), Some(0), "{}", stderr(&linked));
    assert!(
        stderr(&linked).contains("inside the data directory"),
        "{}",
        stderr(&linked)
    );
}

/// G20 (review "credentials" A11): the data directory, the database and the workspaces are
/// private (0700 and 0600, whatever the umask), and a data directory others can write is
/// refused, not used.
#[test]
fn g20_the_data_directory_is_private_and_one_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let written = home.stepward_with_stdin(&["files", "put", "notes/a.txt"], "hello");
    assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
    let mode = |path: std::path::PathBuf| {
        std::fs::metadata(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let data = home.data_dir();
    assert_eq!(mode(data.clone()), 0o700, "the data directory");
    assert_eq!(mode(data.join("stepward.db")), 0o600, "the database");
    for folder in [
        "accounts",
        "accounts/local/workspace",
        "accounts/local/revisions",
    ] {
        assert_eq!(mode(data.join(folder)) & 0o077, 0, "{folder}");
    }
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let refused = home.stepward(&["files", "list"]);
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("others can write"),
        "{}",
        stderr(&refused)
    );
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
}
