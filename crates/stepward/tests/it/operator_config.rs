//! Newcomer 3, item 8: the operator's exemptions of model endpoints may live in an operator
//! configuration file outside every account's workspace (`operator.toml` in stepward's
//! configuration folder, or `--operator-config FILE`), which nothing of an account can write:
//! the API, the console and steps reach the data directory, never this folder. A file others
//! may change, one inside the data directory, or one with a key stepward does not know is
//! refused, naming the file and what would be right.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};

use crate::support::{Home, stderr};

const KEY: &str = "sk-operator-file-model-key-5150";

fn operator_file(home: &Home, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let folder = home.dir.path().join("config/stepward");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("operator.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

fn add_model(home: &Home, fake: &BlockingFakeModel, extra: &[&str]) -> std::process::Output {
    let url = fake.url();
    let mut args = vec![
        "models",
        "add",
        "fake",
        "--provider",
        "anthropic",
        "--base-url",
        &url,
        "--assistant-model",
        "fake-assistant",
    ];
    args.extend_from_slice(extra);
    home.stepward_with_stdin(&args, KEY)
}

#[test]
fn g11_an_endpoint_the_operators_file_exempts_is_reached_as_one_the_flag_exempts() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("ok")])).unwrap();
    let home = Home::new();
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    operator_file(
        &home,
        &format!(
            "# the fake model of this test\nallow_model_endpoints = [\"{}\"]\n",
            fake.endpoint()
        ),
    );
    let added = add_model(&home, &fake, &[]);
    assert!(added.status.success(), "{}", stderr(&added));
}

#[test]
fn an_operator_file_that_others_may_change_or_that_lives_in_the_data_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("ok")])).unwrap();
    let home = Home::new();
    let text = format!("allow_model_endpoints = [\"{}\"]\n", fake.endpoint());
    let file = operator_file(&home, &text);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.starts_with("error:")
            && said.contains(file.to_str().unwrap())
            && said.contains("chmod 600"),
        "{said}"
    );

    // Inside the data directory, where an account's files live, even with a private mode.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir_all(home.data_dir()).unwrap();
    let inside = home.data_dir().join("operator.toml");
    std::fs::write(&inside, &text).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
    let refused = add_model(
        &home,
        &fake,
        &["--operator-config", inside.to_str().unwrap()],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("inside the data directory"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn an_operator_file_with_a_key_stepward_does_not_know_is_refused_at_its_line() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("ok")])).unwrap();
    let home = Home::new();
    let file = operator_file(
        &home,
        "allow_model_endpoints = []\nallow_model_endpoint = [\"127.0.0.1:1\"]\n",
    );
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains(&format!("{}:2:1", file.display()))
            && said.contains("allow_model_endpoint")
            && said.contains("allow_model_endpoints"),
        "{said}"
    );
    let wrong = operator_file(&home, "allow_model_endpoints = [\"not an endpoint\"]\n");
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("{}:1:", wrong.display())),
        "{}",
        stderr(&refused)
    );
}

/// Review of this change: a folder above the operator file that others may change would let
/// them put another file in its place between the checks and the read; it is refused, as a
/// link to a file in such a folder is.
#[test]
fn an_operator_file_in_a_folder_others_may_change_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("ok")])).unwrap();
    let home = Home::new();
    let file = operator_file(
        &home,
        &format!("allow_model_endpoints = [\"{}\"]\n", fake.endpoint()),
    );
    let folder = file.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("the folder {}", folder.display())),
        "{}",
        stderr(&refused)
    );
    // The same file reached through a link from a private folder is still refused.
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = home.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let moved = shared.join("operator.toml");
    std::fs::rename(&file, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &file).unwrap();
    let refused = add_model(&home, &fake, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("the folder {}", shared.display())),
        "{}",
        stderr(&refused)
    );
}
