//! G16 for what the CLI itself prints (security review N3, N4): an error, a refusal, a
//! diagnostic or a listing never shows a current value of the account, whichever command
//! printed it and whether or not the command still holds the account open when it does.

use crate::support::{Home, stderr, stdout};

/// A current connection value of the account, typed where the CLI then quotes it.
const SECRET: &str = "tok-typed-into-the-command-line-Zq81Lw";
/// A model key given on stdin and repeated in the base URL beside it.
const MODEL_KEY: &str = "mk-given-on-stdin-and-in-the-url-P3vT9c";

/// A valid workflow with one string input; nothing in it runs before the input is checked.
const ONE_INPUT: &str = r#"name: one_input
python: "3.11"
inputs: { note: string }
steps:
  - id: echo
    explain: Returns the note.
    inputs: { note: { from: input.note } }
    code: |
      def main(note):
          return {"note": note}
"#;

fn home_with_secret() -> Home {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "TYPED"], SECRET);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    home
}

fn assert_not_shown(output: &std::process::Output, value: &str, what: &str) {
    let shown = format!("{}{}", stdout(output), stderr(output));
    assert!(!shown.contains(value), "{what} showed the value: {shown}");
}

#[test]
fn g16_cli_errors_never_show_a_current_value_of_the_account() {
    let home = home_with_secret();
    let workflow = home.dir.path().join("one_input.yaml");
    std::fs::write(&workflow, ONE_INPUT).unwrap();
    let workflow = workflow.to_str().unwrap();

    let input = home.stepward(&["run", workflow, "--input", SECRET]);
    assert_ne!(input.status.code(), Some(0), "{}", stderr(&input));
    assert_not_shown(&input, SECRET, "run --input VALUE");

    let unknown_input = home.stepward(&["run", workflow, "--input", &format!("{SECRET}=1")]);
    assert_ne!(unknown_input.status.code(), Some(0));
    assert_not_shown(&unknown_input, SECRET, "run --input VALUE=1");

    let show = home.stepward(&["runs", "show", SECRET]);
    assert_ne!(show.status.code(), Some(0), "{}", stderr(&show));
    assert_not_shown(&show, SECRET, "runs show VALUE");

    let put = home.stepward_with_stdin(&["files", "put", &format!("notes/{SECRET}.txt")], "x");
    assert_ne!(put.status.code(), Some(0), "{}", stderr(&put));
    assert_not_shown(&put, SECRET, "files put notes/VALUE.txt");

    let put = home.stepward_with_stdin(&["files", "put", &format!("../{SECRET}")], "x");
    assert_ne!(put.status.code(), Some(0), "{}", stderr(&put));
    assert_not_shown(&put, SECRET, "files put ../VALUE");
}

#[test]
fn g16_models_add_never_quotes_the_key_it_was_just_given() {
    let home = Home::new();
    for base_url in [
        format!("https://models.example.test/v1?key={MODEL_KEY}"),
        format!("https://models.example.test/{MODEL_KEY}/v1"),
    ] {
        let added = home.stepward_with_stdin(
            &[
                "models",
                "add",
                "leaky",
                "--provider",
                "openai",
                "--base-url",
                &base_url,
            ],
            MODEL_KEY,
        );
        assert_ne!(added.status.code(), Some(0), "{}", stderr(&added));
        assert_not_shown(&added, MODEL_KEY, "models add --base-url URL-WITH-KEY");
    }
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "leaky",
            "--provider",
            "openai",
            "--assistant-model",
            MODEL_KEY,
        ],
        MODEL_KEY,
    );
    assert_ne!(added.status.code(), Some(0), "{}", stderr(&added));
    assert_not_shown(&added, MODEL_KEY, "models add --assistant-model KEY");
    let listed = home.stepward(&["models", "list"]);
    assert_not_shown(&listed, MODEL_KEY, "models list");
}

/// A workflow whose `python:` holds the value: invalid, and its diagnostic quotes the line.
const VALUE_AS_PYTHON: &str = r#"name: value_as_python
python: "tok-typed-into-the-command-line-Zq81Lw"
steps:
  - id: one
    explain: Returns nothing.
    code: |
      def main():
          return {}
"#;

/// A valid workflow holding the value in a literal: `run` refuses it, so `check` must too.
const VALUE_IN_EXPLAIN: &str = r#"name: value_in_explain
python: "3.11"
steps:
  - id: one
    explain: "Uses tok-typed-into-the-command-line-Zq81Lw directly."
    code: |
      def main():
          return {}
"#;

/// G16 (review N4): diagnostics of `check` and `run` quote the source line scrubbed, and
/// `check --data-dir` refuses, with the line, a definition holding a value that `run` refuses.
#[test]
fn g16_check_and_run_never_quote_a_value_and_check_refuses_what_run_refuses() {
    let home = home_with_secret();
    let invalid = home.dir.path().join("value_as_python.yaml");
    std::fs::write(&invalid, VALUE_AS_PYTHON).unwrap();
    let holding = home.dir.path().join("value_in_explain.yaml");
    std::fs::write(&holding, VALUE_IN_EXPLAIN).unwrap();
    for command in ["check", "run"] {
        let checked = home.stepward(&[command, invalid.to_str().unwrap()]);
        assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
        assert_not_shown(&checked, SECRET, command);
        let checked = home.stepward(&[command, "--json", invalid.to_str().unwrap()]);
        assert_not_shown(&checked, SECRET, command);
    }
    let checked = home.stepward(&["check", holding.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    assert_not_shown(&checked, SECRET, "check of a definition holding the value");
    assert!(
        stderr(&checked).contains("value_in_explain.yaml:5:"),
        "{}",
        stderr(&checked)
    );
    let checked = home.stepward(&["check", "--json", holding.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    assert!(
        stdout(&checked).contains("definition-holds-value"),
        "{}",
        stdout(&checked)
    );
}

/// G16 (review N4): a base URL or assistant model stored before a value entered the vault is
/// masked in `models list`.
#[test]
fn g16_models_list_masks_settings_that_became_values() {
    let home = Home::new();
    const LATER: &str = "assistant-model-that-became-a-secret-Jw5q";
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "mine",
            "--provider",
            "openai",
            "--base-url",
            &format!("https://models.example.test/{LATER}/v1"),
            "--assistant-model",
            LATER,
        ],
        MODEL_KEY,
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let set = home.stepward_with_stdin(&["secrets", "set", "LATER"], LATER);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    for args in [vec!["models", "list"], vec!["models", "list", "--json"]] {
        let listed = home.stepward(&args);
        assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
        assert!(stdout(&listed).contains("mine"), "{}", stdout(&listed));
        assert_not_shown(&listed, LATER, "models list");
    }
}
