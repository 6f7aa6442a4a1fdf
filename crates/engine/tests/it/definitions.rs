//! Definitions pinned per run (issue 16 §1) and workflow versions (issue 17 §3): a run keeps
//! the bytes it started with, before and after a gate; every saved change of a workflow is a
//! version, parsed first, never holding a value of the account.

use std::sync::{Arc, Mutex};

use engine::{Decision, DefinitionWriteError, GateDecision};
use serde_json::json;
use storage::{Door, RunStatus};
use workspace::{Author, Change, RelPath};

use crate::support::{ACCOUNT, Harness, SECRET, account, cli, succeeded};

const PIPELINE: &str = r#"name: pipeline
python: "3.11"
steps:
  - id: propose
    agent: reader
    task: Read the notes.
  - id: apply!
    agent: reader
    task: Read them again.
"#;

fn agent_file(body: &str, colleagues: &str) -> String {
    format!(
        "---\nname: reader\ndescription: Reads.\nmodel: fake/m\ntools: [Read]\n{colleagues}---\n{body}\n"
    )
}

fn colleague_file() -> String {
    "---\nname: helper\ndescription: Helps.\nmodel: fake/m\ntools: [Read]\n---\nhelper v1\n"
        .to_owned()
}

fn write(harness: &Harness, author: &Author, files: &[(&str, &str)]) {
    test_support::workflows::commit_files(&harness.options.workspaces, &account(), author, files);
}

fn person() -> Author {
    Author::Person { id: "p-1".into() }
}

/// What the executor saw of the pinned definitions, per call.
type Seen = Arc<Mutex<Vec<(String, String, String, String)>>>;

fn record_pinned(harness: &Harness, step: &str, seen: &Seen, edit_first: bool) {
    let seen = seen.clone();
    let work = harness.options.workspaces.clone();
    harness.executor.then(step, move |request| {
        if edit_first {
            // An edit while the step is about to run changes nothing it reads.
            let workspace = work
                .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
                .unwrap();
            workspace
                .commit(
                    &Author::Person { id: "p-2".into() },
                    "edit during the run",
                    vec![(
                        RelPath::parse("agents/reader/tools/notes.py").unwrap(),
                        Change::Write(b"script v3".to_vec()),
                    )],
                    &|_: &[u8]| false,
                )
                .unwrap();
        }
        let read = |name: &str, relative: &str| {
            String::from_utf8(
                request
                    .definitions
                    .agent_file(name, relative)
                    .unwrap()
                    .unwrap_or_default(),
            )
            .unwrap()
        };
        seen.lock().unwrap().push((
            request.step.id().to_owned(),
            read("reader", "AGENT.md"),
            read("reader", "tools/notes.py"),
            read("helper", "AGENT.md"),
        ));
        succeeded(json!("ok"))
    });
}

#[test]
fn g1_workflow_agent_file_and_script_edited_after_run_start_keep_the_pinned_bytes_across_a_gate() {
    let harness = Harness::new();
    let engine = harness.engine();
    let version = engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            PIPELINE,
            &person(),
            "first",
        )
        .unwrap();
    assert_eq!(version.number, 1);
    write(
        &harness,
        &person(),
        &[
            (
                "agents/reader/AGENT.md",
                &agent_file("reader v1", "colleagues: [helper]\n"),
            ),
            ("agents/reader/tools/notes.py", "script v1"),
            ("agents/helper/AGENT.md", &colleague_file()),
            ("agents/unreached/AGENT.md", "not in reach"),
        ],
    );
    let seen: Seen = Arc::default();
    record_pinned(&harness, "propose", &seen, true);
    record_pinned(&harness, "apply", &seen, false);
    let workflow = spec::parse_workflow("workflows/pipeline.yaml", PIPELINE).unwrap();
    let parked = engine
        .start_run(&account(), &workflow, json!({}), cli("alice"))
        .unwrap();
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    // While it waits, everything it can reach is edited, and the workflow gets a version 2.
    write(
        &harness,
        &person(),
        &[
            (
                "agents/reader/AGENT.md",
                &agent_file("reader v2", "colleagues: [helper]\n"),
            ),
            ("agents/reader/tools/notes.py", "script v2"),
            (
                "agents/helper/AGENT.md",
                &colleague_file().replace("helper v1", "helper v2"),
            ),
        ],
    );
    engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            &PIPELINE.replace("Read them again.", "Edited."),
            &person(),
            "second",
        )
        .unwrap();
    // The gate shows the pinned reach, with the version that runs.
    let (pin, rows) = engine
        .pinned_reach(&account(), &parked.run)
        .unwrap()
        .unwrap();
    assert_eq!(pin.workflow_version, Some(1));
    assert_eq!(
        pin.workflow_path.as_deref(),
        Some("workflows/pipeline.yaml")
    );
    let names: Vec<&str> = pin.agents.iter().map(|agent| agent.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["helper", "reader"],
        "the colleague is pinned, the unreached not"
    );
    assert_eq!(rows.len(), 2);
    let done = engine
        .decide(
            &parked.run,
            "apply",
            Decision {
                kind: GateDecision::Approve,
                who: cli("alice"),
                door: Door::Cli,
                note: "read".into(),
            },
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (step, agent, script, helper) in &seen {
        assert!(agent.contains("reader v1"), "{step} read {agent}");
        assert_eq!(script, "script v1", "{step}");
        assert!(helper.contains("helper v1"), "{step} read {helper}");
    }
    // The engine, not a cache: a fresh engine reads the same pin from the journal.
    let again = harness
        .engine()
        .pinned_reach(&account(), &parked.run)
        .unwrap();
    assert_eq!(again.unwrap().0, pin);
}

#[test]
fn g1_a_run_of_a_text_that_is_no_saved_version_records_none() {
    let harness = Harness::new();
    let engine = harness.engine();
    let workflow = spec::parse_workflow("elsewhere/pipeline.yaml", PIPELINE).unwrap();
    let parked = engine
        .start_run(&account(), &workflow, json!({}), cli("alice"))
        .unwrap();
    let (pin, _) = engine
        .pinned_reach(&account(), &parked.run)
        .unwrap()
        .unwrap();
    assert_eq!(pin.workflow_version, None);
    // Its agent is not there: pinned as an empty folder, so the step reads nothing.
    assert_eq!(pin.agents.len(), 1);
    assert!(pin.agents[0].files.is_empty());
    // The same text saved later is that version for the next run.
    engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            PIPELINE,
            &person(),
            "saved",
        )
        .unwrap();
    let next = engine
        .start_run(&account(), &workflow, json!({}), cli("alice"))
        .unwrap();
    let (pin, _) = engine.pinned_reach(&account(), &next.run).unwrap().unwrap();
    assert_eq!(pin.workflow_version, Some(1));
}

#[test]
fn g1_an_invalid_workflow_or_agent_file_is_refused_with_its_diagnostics_and_loses_nothing() {
    let harness = Harness::new();
    let engine = harness.engine();
    engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            PIPELINE,
            &person(),
            "first",
        )
        .unwrap();
    let invalid = PIPELINE.replace("python: \"3.11\"\n", "python: \"3.11\"\nbogus: 1\n");
    let refused = engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            &invalid,
            &person(),
            "broken",
        )
        .unwrap_err();
    let DefinitionWriteError::Invalid { path, diagnostics } = &refused else {
        panic!("{refused}");
    };
    assert_eq!(path, "workflows/pipeline.yaml");
    assert!(!diagnostics.is_empty());
    assert!(
        refused.to_string().contains("workflows/pipeline.yaml:"),
        "{refused}"
    );
    let refused = engine
        .write_definitions(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            &person(),
            "agent",
            vec![(
                RelPath::parse("agents/reader/AGENT.md").unwrap(),
                Change::Write(b"---\nname: reader\n---\n".to_vec()),
            )],
        )
        .unwrap_err();
    assert!(
        matches!(refused, DefinitionWriteError::Invalid { .. }),
        "{refused}"
    );
    // Nothing was lost: one version, the first text, and no agent file.
    let versions = engine
        .workflow_versions(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline")
        .unwrap();
    assert_eq!(versions.len(), 1);
    let (_, text) = engine
        .workflow_version_text(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline", None)
        .unwrap()
        .unwrap();
    assert_eq!(text, PIPELINE);
    assert!(!harness.work_dir().join("agents/reader/AGENT.md").exists());
    // `workflows/` holds workflow files only.
    let refused = engine
        .write_definitions(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            &person(),
            "other",
            vec![(
                RelPath::parse("workflows/notes.txt").unwrap(),
                Change::Write(b"x".to_vec()),
            )],
        )
        .unwrap_err();
    assert!(
        matches!(refused, DefinitionWriteError::NotAWorkflowPath { .. }),
        "{refused}"
    );
    // The folders in another case (one folder on a case-insensitive file system) are parsed
    // or refused alike: no write reaches a definition unparsed.
    for (path, content) in [
        ("Workflows/pipeline.yaml", invalid.as_bytes().to_vec()),
        (
            "AGENTS/reader/agent.md",
            b"---\nname: reader\n---\n".to_vec(),
        ),
    ] {
        let refused = engine
            .write_definitions(
                &ids::AccountId::parse(ACCOUNT).unwrap(),
                &person(),
                "case",
                vec![(RelPath::parse(path).unwrap(), Change::Write(content))],
            )
            .unwrap_err();
        assert!(
            matches!(
                refused,
                DefinitionWriteError::Invalid { .. }
                    | DefinitionWriteError::NotAWorkflowPath { .. }
            ),
            "{path}: {refused}"
        );
    }
}

#[test]
fn g19_a_version_holding_a_value_of_the_account_is_refused_naming_the_line() {
    let harness = Harness::new();
    let engine = harness.engine();
    let holding = PIPELINE.replace("Read the notes.", &format!("Read with {SECRET}."));
    let refused = engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            &holding,
            &person(),
            "leak",
        )
        .unwrap_err();
    let DefinitionWriteError::HoldsValue { path, line, .. } = &refused else {
        panic!("{refused}");
    };
    assert_eq!((path.as_str(), *line), ("workflows/pipeline.yaml", 6));
    assert!(!refused.to_string().contains(SECRET));
    assert!(
        engine
            .workflow_versions(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g19_export_and_diff_hold_connection_references_only() {
    let harness = Harness::new();
    let engine = harness.engine();
    // Saved before the value was the account's: it becomes one afterwards.
    let later = "sk_live_LaterAddedValue77";
    let first = PIPELINE.replace("Read the notes.", &format!("Read {later}."));
    engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            &first,
            &person(),
            "first",
        )
        .unwrap();
    engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            &first.replace("Read them again.", "Again."),
            &person(),
            "second",
        )
        .unwrap();
    harness
        .source
        .set_connection_field(ACCOUNT, "tracker", "token", later);
    let (version, exported) = engine
        .workflow_version_text(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline", None)
        .unwrap()
        .unwrap();
    assert_eq!(version.number, 2);
    assert!(!exported.contains(later), "{exported}");
    let diff = engine
        .workflow_diff(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline", 1, 2)
        .unwrap()
        .unwrap();
    assert!(diff.contains("-    task: Read them again."), "{diff}");
    assert!(diff.contains("+    task: Again."), "{diff}");
    assert!(!diff.contains(later), "{diff}");
    assert!(
        engine
            .workflow_diff(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline", 1, 9)
            .unwrap()
            .is_none()
    );
}

#[test]
fn g26_the_assistant_saves_only_with_a_persons_acceptance_and_steps_never_save() {
    let harness = Harness::new();
    let engine = harness.engine();
    let assistant = Author::Assistant {
        accepted_by: "p-7".into(),
    };
    let version = engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            PIPELINE,
            &assistant,
            "repair",
        )
        .unwrap();
    assert_eq!(version.author, assistant);
    for author in [
        Author::Assistant {
            accepted_by: " ".into(),
        },
        Author::RunStep {
            run_id: ids::RunId::parse("r").unwrap(),
            step: "s".into(),
            attempt: 1,
        },
        Author::Agent { name: "a".into() },
    ] {
        let refused = engine.save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "pipeline",
            PIPELINE,
            &author,
            "x",
        );
        assert!(
            matches!(refused, Err(DefinitionWriteError::Author(_))),
            "{author:?}"
        );
    }
    assert_eq!(
        engine
            .workflow_versions(&ids::AccountId::parse(ACCOUNT).unwrap(), "pipeline")
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn g22_no_steps_copy_back_writes_a_definition_or_protected_file_even_one_not_yet_created() {
    let harness = Harness::new();
    // An agent file naming a script that does not exist yet.
    write(
        &harness,
        &person(),
        &[(
            "agents/digest/AGENT.md",
            "---\nname: digest\ndescription: D.\nmodel: fake/m\ntools: [notes]\ncustom_tools:\n  \
             notes:\n    explain: Notes.\n    script: tools/notes.py\n    arguments: {}\n---\nBody.\n",
        )],
    );
    let protected = [
        ("workflows/pipeline.yaml", "under `workflows/`"),
        ("workflows/new/other.yaml", "under `workflows/`"),
        ("Workflows/pipeline.yaml", "under `workflows/`"),
        ("agents/digest/AGENT.md", "an agent file"),
        ("agents/brand_new/AGENT.md", "an agent file"),
        ("agents/digest/agent.MD", "an agent file"),
        (
            "agents/digest/tools/notes.py",
            "a script an agent file names",
        ),
        ("library/handbook.md", "`library/`"),
        (".secrets", "the secrets file"),
        ("shared/.journal/x", "the run journal"),
        ("knowledge/faq/index/0.bin", "generated index"),
    ];
    harness.executor.then("compute", move |_| {
        let mut report = succeeded(json!(2));
        report.file_changes = protected
            .iter()
            .map(|(path, _)| crate::support::file(path, b"written by a step".to_vec()))
            .chain([crate::support::file("shared/out.txt", b"fine".to_vec())])
            .collect();
        report
    });
    let engine = harness.engine();
    let run = engine
        .start_run(
            &account(),
            &crate::support::workflow(crate::support::OFFLINE),
            json!({"count": 1}),
            cli("a"),
        )
        .unwrap()
        .run;
    let events = storage::EventLog::events(harness.store.as_ref(), &run).unwrap();
    let refusals: Vec<(String, String)> = events
        .iter()
        .filter(|event| event.kind == "copy_back.refused")
        .map(|event| {
            (
                event.payload["path"].as_str().unwrap_or("").to_owned(),
                event.payload["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    for (path, reason) in protected {
        let found = refusals.iter().find(|(refused, _)| refused == path);
        let Some((_, said)) = found else {
            panic!("{path} was not refused: {refusals:?}");
        };
        assert!(said.contains(reason), "{path}: {said}");
        assert!(
            !harness.work_dir().join(path).exists() || path == "agents/digest/AGENT.md",
            "{path} was written"
        );
    }
    let agent = std::fs::read_to_string(harness.work_dir().join("agents/digest/AGENT.md")).unwrap();
    assert!(agent.contains("Body."), "the agent file is the person's");
    assert_eq!(
        std::fs::read(harness.work_dir().join("shared/out.txt")).unwrap(),
        b"fine"
    );
}
