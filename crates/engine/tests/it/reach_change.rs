//! No door widens a saved workflow's reach silently (agents review, finding 3: an interview
//! rewrote an agent another workflow used, and that workflow's ungated step got the internet
//! and a secret while the person saw only the new workflow's reach). Every write of
//! definitions goes through the engine: one that changes what a saved workflow may reach or
//! run (its reach rows, or a script its agents name, through colleagues too) is refused with
//! the list unless each such workflow is confirmed by name.

use engine::{DefinitionWriteError, Draft, ReachConfirmation};
use workspace::{Author, Change, RelPath};

use crate::support::{ACCOUNT, Harness};

const PAYROLL: &str = "name: payroll\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: lead\n    task: Summarise.\n";
const LEAD: &str =
    "---\nname: lead\ndescription: Leads.\ntools: [Read]\ncolleagues: [filer]\n---\nLeads.\n";
const FILER: &str = "---\nname: filer\ndescription: Files.\ntools: [Read, fetch]\nnetwork: none\ncustom_tools:\n  fetch:\n    explain: Fetches.\n    script: tools/fetch.py\n---\nFiles.\n";
const WIDER: &str = "---\nname: filer\ndescription: Files.\ntools: [Read, fetch]\nsecrets: [ATK_TOKEN]\nnetwork: public_egress\ncustom_tools:\n  fetch:\n    explain: Fetches.\n    script: tools/fetch.py\n    applies: false\n---\nFiles.\n";

fn account() -> ids::AccountId {
    ids::AccountId::parse(ACCOUNT).unwrap()
}

fn person() -> Author {
    Author::Person { id: "p-1".into() }
}

fn change(path: &str, text: &str) -> Vec<(RelPath, Change)> {
    vec![(
        RelPath::parse(path).unwrap(),
        Change::Write(text.as_bytes().to_vec()),
    )]
}

/// payroll → lead → filer (a colleague), filer's script, all saved.
fn saved() -> Harness {
    let harness = Harness::new();
    let engine = harness.engine();
    for (path, text) in [
        ("agents/lead/AGENT.md", LEAD),
        ("agents/filer/AGENT.md", FILER),
        ("agents/filer/tools/fetch.py", "def main():\n    return 1\n"),
        ("workflows/payroll.yaml", PAYROLL),
    ] {
        engine
            .write_definitions(&account(), &person(), "setup", change(path, text))
            .unwrap();
    }
    harness
}

#[test]
fn g27_widening_a_colleague_of_a_saved_workflow_is_refused_with_its_changed_rows() {
    let harness = saved();
    let engine = harness.engine();
    let refused = engine
        .write_definitions(
            &account(),
            &person(),
            "widen",
            change("agents/filer/AGENT.md", WIDER),
        )
        .unwrap_err();
    let DefinitionWriteError::ChangesReach { workflows } = &refused else {
        panic!("{refused}");
    };
    assert_eq!(workflows.len(), 1);
    assert_eq!(workflows[0].workflow, "payroll");
    let said = refused.to_string();
    assert!(
        said.contains("internet no") && said.contains("internet yes"),
        "{said}"
    );
    assert!(said.contains("ATK_TOKEN (filer)"), "{said}");
    // Nothing was written.
    let text = std::fs::read_to_string(harness.work_dir().join("agents/filer/AGENT.md")).unwrap();
    assert_eq!(text, FILER);
    // Confirmed by name, it is written.
    engine
        .write_definitions_confirming(
            &account(),
            &person(),
            "widen",
            change("agents/filer/AGENT.md", WIDER),
            &[],
            &ReachConfirmation {
                confirmed: vec!["payroll".into()],
                except: None,
            },
        )
        .unwrap();
}

#[test]
fn g27_a_script_a_saved_workflow_runs_needs_confirmation_and_a_prompt_does_not() {
    let harness = saved();
    let engine = harness.engine();
    let refused = engine
        .write_definitions(
            &account(),
            &person(),
            "script",
            change("agents/filer/tools/fetch.py", "def main():\n    return 2\n"),
        )
        .unwrap_err();
    assert!(
        refused.to_string().contains("agents/filer/tools/fetch.py"),
        "{refused}"
    );
    // The prompt alone changes no reach and no script: written.
    let reworded = FILER.replace("Files.\n", "Files carefully.\n");
    engine
        .write_definitions(
            &account(),
            &person(),
            "words",
            change("agents/filer/AGENT.md", &reworded),
        )
        .unwrap();
}

/// The interview's proposal of the review: a new workflow that rewrites an agent another
/// workflow uses is refused before it is shown, naming that workflow.
#[test]
fn g27_an_interview_proposal_that_changes_another_workflows_reach_is_refused() {
    let harness = saved();
    let engine = harness.engine();
    let draft = Draft {
        workflow: "name: digest\npython: \"3.11\"\nsteps:\n  - id: digest\n    agent: filer\n    task: Digest.\n".into(),
        files: vec![("agents/filer/AGENT.md".into(), WIDER.into())],
    };
    let names = spec::AccountNames::default();
    let problems = engine
        .check_draft(&account(), &names, None, &draft)
        .unwrap_err();
    assert!(
        problems.iter().any(|problem| problem.contains("payroll")),
        "{problems:#?}"
    );
}
