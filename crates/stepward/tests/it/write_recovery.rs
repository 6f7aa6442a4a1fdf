//! Issue 37 (structure review 3, §1.2): a workspace write announces itself in the audit log
//! (`workspace.write_intent`), commits, then records its outcome. A process stopped between
//! the commit and the outcome leaves an intent open, which only `serve` used to recover. The
//! recovery now runs wherever a process opens the data: the next CLI command records what the
//! revision log shows happened.

use crate::support::{Home, TINY_WORKFLOW, stderr};

/// The actions of the audit log, in order, straight from the database.
fn actions(home: &Home) -> Vec<(String, String)> {
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    let mut statement = connection
        .prepare("SELECT action, detail FROM audit_log ORDER BY rowid")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

#[test]
fn an_intent_left_open_by_a_cli_write_is_recovered_by_the_next_command_that_opens_the_data() {
    let home = Home::new();
    home.put("workflows/tiny.yaml", TINY_WORKFLOW);
    // The outcome entry of the next write fails, as if the process stopped right after its
    // commit: the intent stays open.
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .execute_batch(
            "CREATE TRIGGER test_outcome_fails BEFORE INSERT ON audit_log
             WHEN NEW.action = 'workspace.write'
             BEGIN SELECT RAISE(ABORT, 'the process stopped here'); END;",
        )
        .unwrap();
    let file = home.dir.path().join("notes.txt");
    std::fs::write(&file, "notes\n").unwrap();
    let interrupted = home.stepward(&[
        "files",
        "put",
        "notes.txt",
        "--from",
        file.to_str().unwrap(),
    ]);
    assert!(!interrupted.status.success(), "{}", stderr(&interrupted));
    connection
        .execute_batch("DROP TRIGGER test_outcome_fails;")
        .unwrap();
    drop(connection);
    let before = actions(&home);
    let intent = before
        .iter()
        .rev()
        .find(|(action, _)| action == "workspace.write_intent")
        .map(|(_, detail)| serde_json::from_str::<serde_json::Value>(detail).unwrap())
        .expect("the interrupted write announced itself");
    assert!(
        !before
            .iter()
            .any(|(action, _)| action == "workspace.write_recovered"),
        "{before:?}"
    );

    // Any command that opens the data, here one that only reads.
    let listed = home.stepward(&["files", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let after = actions(&home);
    let recovered: Vec<serde_json::Value> = after
        .iter()
        .filter(|(action, _)| action == "workspace.write_recovered")
        .map(|(_, detail)| serde_json::from_str(detail).unwrap())
        .collect();
    assert_eq!(recovered.len(), 1, "{after:?}");
    assert_eq!(recovered[0]["intent"], intent["intent"]);
    assert_eq!(
        recovered[0]["outcome"], "committed",
        "the file was committed"
    );

    // Recovered once: the next command finds nothing open.
    let again = home.stepward(&["files", "list"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let count = actions(&home)
        .iter()
        .filter(|(action, _)| action == "workspace.write_recovered")
        .count();
    assert_eq!(count, 1);
}

/// Every workspace write of the CLI (a file put and removed, a workflow saved) announces
/// itself and records its outcome with the intent's id, so none is left open for a recovery
/// to guess about (review of issue 37: `workflows save` wrote without an intent).
#[test]
fn g25_every_cli_workspace_write_announces_itself_and_closes_its_intent() {
    let home = Home::new();
    home.put("workflows/tiny.yaml", TINY_WORKFLOW);
    let file = home.dir.path().join("tiny.yaml");
    std::fs::write(
        &file,
        TINY_WORKFLOW.replace("Returns one.", "Returns one, again."),
    )
    .unwrap();
    let saved = home.stepward(&["workflows", "save", "tiny", file.to_str().unwrap()]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    let removed = home.stepward(&["files", "rm", "workflows/tiny.yaml"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    let entries = actions(&home);
    let detail = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    let intents: Vec<String> = entries
        .iter()
        .filter(|(action, _)| action == "workspace.write_intent")
        .map(|(_, text)| detail(text)["intent"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(intents.len(), 3, "{entries:?}");
    for intent in &intents {
        let outcomes: Vec<&String> = entries
            .iter()
            .filter(|(action, text)| {
                action != "workspace.write_intent" && detail(text)["intent"] == intent.as_str()
            })
            .map(|(action, _)| action)
            .collect();
        assert_eq!(outcomes.len(), 1, "intent {intent}: {entries:?}");
        assert_ne!(outcomes[0], "workspace.write_recovered", "{entries:?}");
    }
}
