//! The interview's proposals (issue 17 §4) at the engine: the check shown to the person
//! records every workspace file its reach rows were made from (an agent the workflow uses
//! without proposing it, at any depth, and the scripts its tools name), and a confirmation
//! saves only while each of them is still as it was then (G27).

use engine::{Draft, DraftSaveError};
use workspace::{Author, Change, RelPath};

use crate::support::{ACCOUNT, Harness};

const POSTING: &str = "name: posting\npython: \"3.11\"\nsteps:\n  - id: post!\n    agent: poster\n    task: Post it.\n";

const POSTER: &str =
    "---\nname: poster\ndescription: Posts.\ntools: [Read]\ncolleagues: [helper]\n---\nPosts.\n";

const HELPER: &str =
    "---\nname: helper\ndescription: Helps.\ntools: [Read]\ncolleagues: [fetcher]\n---\nHelps.\n";

const FETCHER: &str = "---\nname: fetcher\ndescription: Fetches.\ntools: [Read, fetch]\nnetwork: none\ncustom_tools:\n  fetch:\n    explain: Fetches the feed.\n    script: tools/fetch.py\n---\nFetches.\n";

fn account() -> ids::AccountId {
    ids::AccountId::parse(ACCOUNT).unwrap()
}

fn write(harness: &Harness, path: &str, text: &str) {
    harness
        .options
        .workspaces
        .for_account(&account())
        .unwrap()
        .commit(
            &Author::Person { id: "p-1".into() },
            "edit",
            vec![(
                RelPath::parse(path).unwrap(),
                Change::Write(text.as_bytes().to_vec()),
            )],
            &|_: &[u8]| false,
        )
        .unwrap();
}

/// The workspace with poster → helper → fetcher (and fetcher's script), none proposed.
fn with_agents() -> Harness {
    let harness = Harness::new();
    write(&harness, "agents/poster/AGENT.md", POSTER);
    write(&harness, "agents/helper/AGENT.md", HELPER);
    write(&harness, "agents/fetcher/AGENT.md", FETCHER);
    write(
        &harness,
        "agents/fetcher/tools/fetch.py",
        "def main():\n    return 1\n",
    );
    harness
}

fn draft() -> Draft {
    Draft {
        workflow: POSTING.to_owned(),
        files: Vec::new(),
    }
}

/// Shows the proposal (its check), then runs `between`, then confirms it as the server does.
fn show_then_confirm(
    harness: &Harness,
    between: impl FnOnce(),
) -> Result<engine::WorkflowVersion, DraftSaveError> {
    let engine = harness.engine();
    let names = spec::AccountNames::default();
    let checked = engine
        .check_draft(&account(), &names, None, &draft())
        .unwrap();
    let base = engine.current_hashes(&account(), &checked.paths()).unwrap();
    between();
    engine.save_draft(
        &account(),
        &names,
        &draft(),
        engine::AsRead {
            written: &base,
            shown: &checked.read,
        },
        &Author::Assistant {
            accepted_by: "p-1".into(),
        },
        "accepted",
    )
}

fn saved(harness: &Harness) -> bool {
    harness
        .options
        .workspaces
        .for_account(&account())
        .unwrap()
        .read_file(&RelPath::parse("workflows/posting.yaml").unwrap(), 1)
        .unwrap()
        .is_some()
}

#[test]
fn g27_the_check_records_every_workspace_agent_and_script_its_reach_rows_came_from() {
    let harness = with_agents();
    let checked = harness
        .engine()
        .check_draft(&account(), &spec::AccountNames::default(), None, &draft())
        .unwrap();
    let read: Vec<&str> = checked.read.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        read,
        [
            "agents/fetcher/AGENT.md",
            "agents/fetcher/tools/fetch.py",
            "agents/helper/AGENT.md",
            "agents/poster/AGENT.md",
        ]
    );
    assert!(checked.read.iter().all(|(_, hash)| hash.is_some()));
}

#[test]
fn g27_unchanged_since_the_check_was_shown_the_proposal_is_saved() {
    let harness = with_agents();
    let version = show_then_confirm(&harness, || {}).unwrap();
    assert_eq!(version.number, 1);
    assert!(saved(&harness));
}

#[test]
fn g27_a_colleague_two_deep_given_the_internet_after_the_check_refuses_the_confirmation() {
    let harness = with_agents();
    let refused = show_then_confirm(&harness, || {
        write(
            &harness,
            "agents/fetcher/AGENT.md",
            &FETCHER.replace("network: none", "network: public_egress"),
        );
    });
    assert!(
        matches!(&refused, Err(DraftSaveError::ReachChanged { path }) if path == "agents/fetcher/AGENT.md"),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("changed since you were shown the check: look again"),
        "{message}"
    );
    assert!(!saved(&harness));
}

#[test]
fn g27_a_script_of_a_used_agent_changed_after_the_check_refuses_the_confirmation() {
    let harness = with_agents();
    let refused = show_then_confirm(&harness, || {
        write(
            &harness,
            "agents/fetcher/tools/fetch.py",
            "import urllib.request\ndef main():\n    return 2\n",
        );
    });
    assert!(
        matches!(&refused, Err(DraftSaveError::ReachChanged { path }) if path == "agents/fetcher/tools/fetch.py"),
        "{refused:?}"
    );
    assert!(!saved(&harness));
}

#[test]
fn g27_a_new_colleague_added_after_the_check_refuses_the_confirmation() {
    let harness = with_agents();
    let refused = show_then_confirm(&harness, || {
        write(
            &harness,
            "agents/other/AGENT.md",
            "---\nname: other\ndescription: O.\ntools: [Read]\nnetwork: public_egress\n---\nO.\n",
        );
        write(
            &harness,
            "agents/helper/AGENT.md",
            &HELPER.replace("[fetcher]", "[fetcher, other]"),
        );
    });
    assert!(
        matches!(&refused, Err(DraftSaveError::ReachChanged { .. })),
        "{refused:?}"
    );
    assert!(!saved(&harness));
}
