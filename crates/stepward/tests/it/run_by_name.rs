//! newcomer 3, frictions 9 to 11: `stepward run NAME` runs the workspace's current version of
//! a saved workflow (an argument with a `/` or ending `.yaml`/`.yml` is a file; both at once
//! are refused, naming both); a repair that could never be accepted is refused before the
//! assistant is asked; a text whose `name:` differs from the name it is saved under is refused.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::json;

use crate::support::{Home, TINY_WORKFLOW, run_id, stderr, stdout};

/// `files put` of `text` as `path`, whatever it answers (a refusal is what is tested).
fn save(home: &Home, path: &str, text: &str) -> std::process::Output {
    let file = home.dir.path().join("saved.yaml");
    std::fs::write(&file, text).unwrap();
    home.stepward(&["files", "put", path, "--from", file.to_str().unwrap()])
}

#[test]
fn a_saved_workflow_runs_by_its_name_and_an_ambiguous_argument_is_refused_needs_root() {
    let home = Home::new();
    home.put("workflows/tiny.yaml", TINY_WORKFLOW);
    let ran = home.stepward(&["run", "tiny"]);
    assert!(ran.status.success(), "{}{}", stdout(&ran), stderr(&ran));
    assert!(stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
    let nothing = home.stepward(&["run", "nothing_saved"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        stderr(&nothing).contains("there is no saved workflow `nothing_saved`"),
        "{}",
        stderr(&nothing)
    );
    // A file named like the saved workflow, in the folder it is run from: refused, both named.
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("tiny"), TINY_WORKFLOW).unwrap();
    let both = home
        .command(std::path::Path::new(env!("CARGO_BIN_EXE_stepward")))
        .current_dir(folder.path())
        .args(["run", "tiny", "--data-dir"])
        .arg(home.data_dir())
        .arg("--sandbox-state-dir")
        .arg(home.dir.path().join("sandbox"))
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "{}", stdout(&both));
    assert!(
        stderr(&both).contains("names both the saved workflow") && stderr(&both).contains("./tiny"),
        "{}",
        stderr(&both)
    );
}

#[test]
fn a_text_saved_under_another_name_is_refused() {
    let home = Home::new();
    let refused = save(&home, "workflows/other_name.yaml", TINY_WORKFLOW);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("name-differs-from-file")
            && stderr(&refused).contains("write `name: other_name`"),
        "{}",
        stderr(&refused)
    );
}

const NEEDS_REPAIR: &str = r#"name: quote
python: "3.11"
steps:
  - id: quote
    explain: Quotes a word for a URL.
    code: |
      import requests
      def main():
          return requests.utils.quote("a b")
"#;

#[test]
fn a_repair_that_could_not_be_accepted_is_refused_before_the_assistant_is_asked_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "propose",
        json!({"code": "import urllib.parse\ndef main():\n    return urllib.parse.quote('a b')\n", "note": "urllib"}),
    )]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-run-by-name-model-key-2718");
    // A file from elsewhere, never saved: its repair could not be accepted.
    let file = home.dir.path().join("quote.yaml");
    std::fs::write(&file, NEEDS_REPAIR).unwrap();
    let ran = home.stepward(&[
        "run",
        file.to_str().unwrap(),
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        stdout(&ran).contains("needs_repair"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let asked = home.stepward(&[
        "repair",
        &run_id(&ran),
        "quote",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(!asked.status.success(), "{}", stdout(&asked));
    assert!(
        stderr(&asked).contains("the assistant was not asked")
            && stderr(&asked).contains("stepward run quote"),
        "{}",
        stderr(&asked)
    );
    assert!(fake.requests().is_empty(), "no model call was spent");
    // Saved and run by name, the same repair is asked for and accepted from the CLI.
    home.put("workflows/quote.yaml", NEEDS_REPAIR);
    let ran = home.stepward(&["run", "quote", "--allow-model-endpoint", &exempt]);
    assert!(stdout(&ran).contains("needs_repair"), "{}", stdout(&ran));
    let run = run_id(&ran);
    let asked = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert!(asked.status.success(), "{}", stderr(&asked));
    let accepted = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        accepted.status.success(),
        "{}{}",
        stdout(&accepted),
        stderr(&accepted)
    );
    assert!(
        stdout(&accepted).contains("succeeded"),
        "{}",
        stdout(&accepted)
    );
}

/// newcomer 3, friction 8: an agent step whose provider endpoint this process may not reach
/// (plain http on loopback, not exempted) made a run that then failed "after it may have done
/// part of its work". It is refused before the run exists, as a missing egress network is.
#[test]
fn an_agent_whose_endpoint_this_process_may_not_reach_is_refused_before_the_run_exists() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("done")])).unwrap();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-refused-at-start-model-key-1414");
    home.put(
        "agents/summarise/AGENT.md",
        "---\nname: summarise\ndescription: Summarises.\nmodel: fake/fake-large\ntools: [Read]\n---\nSummarise.\n",
    );
    let file = home.dir.path().join("summary.yaml");
    std::fs::write(
        &file,
        "name: summary\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: summarise\n    task: Summarise the notes.\n",
    )
    .unwrap();
    let refused = home.stepward(&["run", file.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("which this process may not reach")
            && stderr(&refused).contains("--allow-model-endpoint")
            && stderr(&refused).contains("no run was started"),
        "{}",
        stderr(&refused)
    );
    let listed = home.stepward(&["runs", "list", "--json"]);
    assert_eq!(stdout(&listed).trim(), "[]", "{}", stderr(&listed));
    assert!(fake.requests().is_empty());
}

/// newcomer 3, friction 17: a workflow pinned to a Python this server lacks was refused with
/// the same sentence once per step. One sentence per cause, naming every step.
#[test]
fn a_refusal_says_each_cause_once_naming_every_step() {
    let home = Home::new();
    let file = home.dir.path().join("pinned.yaml");
    std::fs::write(
        &file,
        "name: pinned\npython: \"3.99\"\nsteps:\n  - id: one\n    explain: One.\n    code: |\n      def main():\n          return 1\n  - id: two\n    explain: Two.\n    code: |\n      def main():\n          return 2\n  - id: three\n    explain: Three.\n    code: |\n      def main():\n          return 3\n",
    )
    .unwrap();
    let refused = home.stepward(&["run", file.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let said = stderr(&refused);
    assert_eq!(said.matches("needs Python 3.99").count(), 1, "{said}");
    assert!(
        said.contains("steps one, two, three: each needs Python 3.99"),
        "{said}"
    );
}
