//! G9 end to end with the fake model: `import requests` sends the step to repair; the
//! assistant's proposals that still import a third-party module or add network are refused
//! before anything is shown; the `urllib` one is shown, and accepting it makes the workflow's
//! next version (authored by the assistant, accepted by this user) and the run goes on from
//! that step, the outputs before it standing.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{
    Home, fail_every_audit_append, let_audit_appends_through, run_id, stderr, stdout,
};

pub(crate) const WORKFLOW: &str = r#"name: quote
python: "3.11"
inputs: { word: string }
steps:
  - id: first
    explain: Passes the word on.
    inputs: { word: { from: input.word } }
    code: |
      def main(word):
          return word.strip()
  - id: quote
    explain: Quotes the word for a URL.
    inputs: { word: { from: first } }
    code: |
      import requests
      def main(word):
          return requests.utils.quote(word)
"#;

#[test]
fn g9_a_third_party_import_gets_a_stdlib_repair_that_a_person_accepts_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![
        ScriptTurn::call(
            "propose",
            json!({"code": "import requests\ndef main(word):\n    return requests.utils.quote(word)\n", "note": "same"}),
        ),
        ScriptTurn::call(
            "propose",
            json!({"code": "import urllib.request\ndef main(word):\n    return word\n", "note": "x", "network": "public_egress"}),
        ),
        ScriptTurn::call(
            "propose",
            json!({"code": "import urllib.parse\nimport urllib.request\n\ndef main(word):\n    return urllib.parse.quote(word)\n", "note": "urllib.parse instead of requests"}),
        ),
    ]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-repair-test-model-key-5566");
    let file = home.dir.path().join("quote.yaml");
    std::fs::write(&file, WORKFLOW).unwrap();
    let saved = home.stepward(&[
        "files",
        "put",
        "workflows/quote.yaml",
        "--from",
        file.to_str().unwrap(),
    ]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    let ran = home.stepward(&[
        "run",
        file.to_str().unwrap(),
        "--input",
        "word= a b ",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        stdout(&ran).contains("needs_repair"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = run_id(&ran);

    let proposed = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert!(
        proposed.status.success(),
        "{}{}",
        stdout(&proposed),
        stderr(&proposed)
    );
    let shown = stdout(&proposed);
    assert!(shown.contains("urllib.parse.quote(word)"), "{shown}");
    // Shown as a diff of the step's code: the code the run has is the only `requests` in it.
    assert!(
        shown.contains("-    return requests.utils.quote(word)")
            && !shown
                .lines()
                .any(|line| line.starts_with('+') && line.contains("requests")),
        "a refused proposal is never shown: {shown}"
    );
    assert!(
        shown.contains("outside Python 3.11's standard library"),
        "{shown}"
    );
    assert!(
        shown.contains("`network` stays as the workflow has it"),
        "{shown}"
    );
    // Each refusal went back to the assistant, which tried again.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]
            .as_text()
            .contains("refused: the proposed code imports `requests`")
    );

    // A version saved since the run started is never overwritten by a repair of the run's
    // older text: the accept is refused and nothing is saved.
    let changed = home.dir.path().join("changed.yaml");
    std::fs::write(
        &changed,
        WORKFLOW.replace("Passes the word on.", "Passes the word on, changed since."),
    )
    .unwrap();
    let put = |from: &std::path::Path| {
        let put = home.stepward(&[
            "files",
            "put",
            "workflows/quote.yaml",
            "--from",
            from.to_str().unwrap(),
        ]);
        assert!(put.status.success(), "{}", stderr(&put));
    };
    put(&changed);
    let refused = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(!refused.status.success(), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("is not the text this run runs"),
        "{}",
        stderr(&refused)
    );
    put(&file);

    let accepted = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--note",
        "urllib does it",
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
        stdout(&accepted).contains("workflow quote version 4"),
        "{}",
        stdout(&accepted)
    );
    assert!(
        stdout(&accepted).contains("succeeded"),
        "{}",
        stdout(&accepted)
    );
    let events = home.stepward(&["runs", "events", &run, "--json"]);
    let events: Value = serde_json::from_str(&stdout(&events)).unwrap();
    let events = events.as_array().unwrap();
    let repair = events
        .iter()
        .find(|event| event["kind"] == "repair.accepted")
        .unwrap();
    // Versions 2 and 3 are the change and its undoing above.
    assert_eq!(repair["payload"]["version"], 4);
    assert_eq!(repair["payload"]["provider"], "fake");
    assert_eq!(repair["payload"]["model"], "fake-assistant");
    assert_eq!(repair["payload"]["accepted_by"]["kind"], "cli");
    assert_eq!(repair["payload"]["note"], "urllib does it");
    let firsts = events
        .iter()
        .filter(|event| event["kind"] == "attempt.started" && event["payload"]["step"] == "first")
        .count();
    assert_eq!(firsts, 1, "the outputs before the repaired step stand");
    let finished: Vec<&Value> = events
        .iter()
        .filter(|event| event["kind"] == "attempt.finished")
        .collect();
    assert_eq!(finished.last().unwrap()["payload"]["output"], "a%20b");
    // The new version is in the workspace, authored as the assistant's, accepted by the user.
    let history = home.stepward(&["files", "history"]);
    assert!(
        stdout(&history).contains(
            "a repair written by the assistant (fake, model fake-assistant), accepted by"
        ),
        "{}",
        stdout(&history)
    );
    assert!(
        stdout(&history).contains("the assistant, accepted by person "),
        "the version's author is the assistant with the person who accepted it: {}",
        stdout(&history)
    );
    // Accepting twice is refused: the run no longer needs repair.
    let again = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(!again.status.success());
}

/// Issue 35 (server review 3, finding 1, at the CLI's door): `stepward repair` appends its
/// audit entry before it asks the assistant, and `repair --accept` its intent before it saves
/// a version. With every audit append failing, neither asks, records or saves anything.
#[test]
fn g25_a_cli_repair_whose_audit_entry_cannot_be_written_asks_and_saves_nothing_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "propose",
        json!({"code": "import urllib.parse\n\ndef main(word):\n    return urllib.parse.quote(word)\n", "note": "urllib"}),
    )]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-repair-audit-model-key-7788");
    let file = home.put("workflows/quote.yaml", WORKFLOW);
    let ran = home.stepward(&[
        "run",
        file.to_str().unwrap(),
        "--input",
        "word=a b",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(
        stdout(&ran).contains("needs_repair"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = run_id(&ran);
    let events = |home: &Home| stdout(&home.stepward(&["runs", "events", &run]));

    fail_every_audit_append(&home);
    let asked = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert!(!asked.status.success(), "{}", stdout(&asked));
    assert!(fake.requests().is_empty(), "no model was asked");
    assert!(
        !events(&home).contains("repair.proposed"),
        "nothing recorded"
    );

    let_audit_appends_through(&home);
    let asked = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert!(asked.status.success(), "{}", stderr(&asked));
    let versions_before = stdout(&home.stepward(&["workflows", "show", "quote"]));

    fail_every_audit_append(&home);
    let accepted = home.stepward(&[
        "repair",
        &run,
        "quote",
        "--accept",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(!accepted.status.success(), "{}", stdout(&accepted));
    assert_eq!(
        stdout(&home.stepward(&["workflows", "show", "quote"])),
        versions_before,
        "no version was saved"
    );
    assert!(stdout(&home.stepward(&["runs", "show", &run])).contains("needs_repair"));
}
