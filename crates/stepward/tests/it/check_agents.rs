//! `stepward check` on agent steps (issue 16, G5, G21): an applying agent (or one whose
//! colleague applies) outside a gate is `apply-before-gate` at the step's `agent:`; a cycle of
//! colleagues, a chain deeper than three and a colleague that does not exist are errors at the
//! `colleagues:` entry; an agent folder holding `shared` or `library` is an error.

use crate::first_use::{check_json, places};
use crate::support::stdout;

fn agent_file(dir: &std::path::Path, name: &str, front: &str) -> std::path::PathBuf {
    let folder = dir.join("agents").join(name);
    std::fs::create_dir_all(folder.join("tools")).unwrap();
    std::fs::write(folder.join("tools/file.py"), "def main():\n    return 1\n").unwrap();
    let path = folder.join("AGENT.md");
    std::fs::write(
        &path,
        format!("---\nname: {name}\ndescription: An agent.\n{front}---\nYou work.\n"),
    )
    .unwrap();
    path
}

const FILER: &str = "tools: [file]\nnetwork: public_egress\ncustom_tools:\n  file:\n    explain: Files a ticket.\n    script: tools/file.py\n";

fn workflow(step: &str, agent: &str) -> String {
    format!(
        "name: w\npython: \"3.11\"\nsteps:\n  - id: {step}\n    agent: {agent}\n    task: Do it.\n"
    )
}

fn check_agent(path: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let checked = crate::support::stepward(&["check", "--json", path.to_str().unwrap()]);
    let reports: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
    (checked.status.code(), reports[0].clone())
}

#[test]
fn g21_check_reports_apply_before_gate_at_the_steps_agent_also_through_a_colleague() {
    let dir = tempfile::tempdir().unwrap();
    agent_file(dir.path(), "filer", FILER);
    agent_file(dir.path(), "lead", "tools: [Read]\ncolleagues: [filer]\n");
    for agent in ["filer", "lead"] {
        let (code, report) = check_json(dir.path(), "w.yaml", &workflow("apply", agent));
        assert_eq!(code, Some(1), "{report}");
        assert_eq!(
            places(&report, "diagnostics"),
            vec![("apply-before-gate".to_owned(), 5, 12)],
            "{report}"
        );
        let diagnostic = &report["diagnostics"][0];
        let message = diagnostic["message"].as_str().unwrap();
        assert!(message.contains("filer: file"), "{message}");
        assert!(
            diagnostic["help"].as_str().unwrap().contains("id: apply!"),
            "{diagnostic}"
        );
        // The same step as a gate is what the pattern wants.
        let (code, report) = check_json(dir.path(), "w.yaml", &workflow("apply!", agent));
        assert_eq!(code, Some(0), "{report}");
    }
    // A networked agent whose tool declares `applies: false` proposes: no gate needed.
    agent_file(
        dir.path(),
        "filer",
        &FILER.replace("    script:", "    applies: false\n    script:"),
    );
    let (code, report) = check_json(dir.path(), "w.yaml", &workflow("propose", "lead"));
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn g21_check_reports_a_cycle_a_chain_too_deep_and_a_missing_colleague_at_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent_file(dir.path(), "a", "colleagues: [b]\n");
    agent_file(dir.path(), "b", "colleagues: [a]\n");
    let (code, report) = check_agent(&a);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("colleague-cycle".to_owned(), 4, 14)],
        "{report}"
    );
    assert!(
        report["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("a → b → a"),
        "{report}"
    );
    // The workflow using it is refused too, at its step.
    let (code, report) = check_json(dir.path(), "w.yaml", &workflow("ask", "a"));
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("colleague-cycle".to_owned(), 5, 12)],
        "{report}"
    );
    agent_file(dir.path(), "b", "colleagues: [c]\n");
    agent_file(dir.path(), "c", "colleagues: [d]\n");
    agent_file(dir.path(), "d", "colleagues: [e]\n");
    agent_file(dir.path(), "e", "");
    let (code, report) = check_agent(&a);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("colleagues-too-deep".to_owned(), 4, 14)],
        "{report}"
    );
    agent_file(dir.path(), "d", "");
    let (code, report) = check_agent(&a);
    assert_eq!(code, Some(0), "three deep is allowed: {report}");
    let lone = agent_file(
        dir.path(),
        "lone",
        "tools: [Read]\ncolleagues: [b, nobody]\n",
    );
    let (code, report) = check_agent(&lone);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("unknown-colleague".to_owned(), 5, 17)],
        "{report}"
    );
}

#[test]
fn g22_check_refuses_an_agent_folder_holding_shared_or_library() {
    let dir = tempfile::tempdir().unwrap();
    for reserved in ["shared", "library"] {
        let path = agent_file(dir.path(), "notes", "tools: [Read]\n");
        let holder = dir.path().join("agents/notes").join(reserved);
        std::fs::create_dir_all(&holder).unwrap();
        let (code, report) = check_agent(&path);
        assert_eq!(code, Some(1), "{report}");
        assert_eq!(
            places(&report, "diagnostics"),
            vec![("reserved-folder-name".to_owned(), 1, 1)],
            "{report}"
        );
        std::fs::remove_dir_all(&holder).unwrap();
        let (code, report) = check_agent(&path);
        assert_eq!(code, Some(0), "{report}");
    }
}

#[test]
fn g27_reach_shows_an_agent_steps_colleagues_their_secrets_with_holders_and_the_models() {
    let dir = tempfile::tempdir().unwrap();
    agent_file(
        dir.path(),
        "filer",
        &format!("model: fake/small\nsecrets: [TRACKER_TOKEN]\n{FILER}"),
    );
    agent_file(
        dir.path(),
        "lead",
        "model: fake/large\ntools: [Read]\ncolleagues: [filer]\nsecrets: [NOTES_KEY]\n",
    );
    let folder = dir.path().join("workflows");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("w.yaml");
    std::fs::write(&path, workflow("apply!", "lead")).unwrap();
    let shown = crate::support::stepward(&["reach", "--json", path.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", crate::support::stderr(&shown));
    let report: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    let row = &report["rows"][0];
    assert_eq!(row["internet"], "yes", "{row}");
    assert_eq!(row["colleagues"], serde_json::json!(["filer"]), "{row}");
    assert_eq!(
        row["secret_holders"],
        serde_json::json!([
            {"secret": "NOTES_KEY", "agent": "lead"},
            {"secret": "TRACKER_TOKEN", "agent": "filer"}
        ]),
        "{row}"
    );
    assert_eq!(row["models"][1]["agent"], "filer", "{row}");
    assert_eq!(row["models"][1]["provider"], "fake", "{row}");
    assert!(report.get("isolation").is_none(), "{report}");
    let table = crate::support::stepward(&["reach", path.to_str().unwrap()]);
    let table = stdout(&table);
    assert!(table.contains("TRACKER_TOKEN (filer)"), "{table}");
    assert!(table.contains("fake/small"), "{table}");
    assert!(!table.contains("Not isolated"), "{table}");
    // With the unisolated backend, both say that what the rows declare is not enforced.
    let file = path.to_str().unwrap();
    let shown = crate::support::stepward(&["reach", "--json", "--backend", "unisolated", file]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert!(
        report["isolation"]
            .as_str()
            .is_some_and(|notice| notice.starts_with("Not isolated")),
        "{report}"
    );
    let table = stdout(&crate::support::stepward(&[
        "reach",
        "--backend",
        "unisolated",
        file,
    ]));
    assert!(table.starts_with("Not isolated"), "{table}");
}

/// `check` and `reach` read an agent where `stepward run` takes it (issue 16 §1): from the
/// account's workspace once the data directory has one. The copy beside the file is read only
/// when the workspace lacks the agent, with a warning that `run` here would not find it, and a
/// workspace copy that differs from the one beside the file is said to differ.
#[test]
fn g27_check_and_reach_read_agents_from_the_workspace_that_run_uses() {
    use crate::agents::put;
    let home = crate::support::Home::new();
    let dir = tempfile::tempdir().unwrap();
    agent_file(dir.path(), "helper", "tools: [Read]\n");
    let folder = dir.path().join("workflows");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("w.yaml");
    std::fs::write(&path, workflow("ask", "helper")).unwrap();
    let file = path.to_str().unwrap();
    let check = |home: &crate::support::Home| {
        let checked = home.stepward(&["check", "--json", file]);
        let reports: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
        (checked.status.code(), reports[0].clone())
    };
    let internet = |home: &crate::support::Home| {
        let shown = home.stepward(&["reach", "--json", file]);
        assert!(shown.status.success(), "{}", crate::support::stderr(&shown));
        let report: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
        report["rows"][0]["internet"].as_str().unwrap().to_owned()
    };

    // No data directory here: the folder beside the file, and nothing to warn of.
    let (code, report) = check(&home);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(places(&report, "warnings"), vec![], "{report}");
    assert!(!home.data_dir().exists(), "check made a data directory");

    // A workspace without the agent: the copy beside the file is checked, with a warning.
    put(&home, "notes/a.txt", "a");
    let (code, report) = check(&home);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(
        places(&report, "warnings"),
        vec![("agent-not-in-workspace".to_owned(), 5, 12)],
        "{report}"
    );
    let help = report["warnings"][0]["help"].as_str().unwrap();
    assert!(
        help.contains("stepward files put agents/helper/AGENT.md"),
        "{help}"
    );
    assert_eq!(internet(&home), "no");

    // The workspace's own copy, networked, is the one both read; it differs from the file's.
    put(
        &home,
        "agents/helper/AGENT.md",
        "---\nname: helper\ndescription: An agent.\ntools: [Read]\nnetwork: public_egress\n---\nYou work.\n",
    );
    let (code, report) = check(&home);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(
        places(&report, "warnings"),
        vec![("agent-differs-from-workspace".to_owned(), 5, 12)],
        "{report}"
    );
    assert_eq!(internet(&home), "yes");

    // An agent in neither place is an error naming both.
    std::fs::write(&path, workflow("ask", "ghost")).unwrap();
    let (code, report) = check(&home);
    assert_eq!(code, Some(1), "{report}");
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("the account's workspace"), "{message}");
    assert!(
        message.contains("beside the workflow's folder"),
        "{message}"
    );
}
