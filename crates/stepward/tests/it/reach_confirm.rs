//! No door widens a saved workflow's reach silently, at the command line (G27, agents review
//! finding 3): `files put` of an agent file that changes what a saved workflow may reach is
//! refused with the workflow, its changed rows and the flag that confirms it.

use crate::agents::put;
use crate::support::{Home, stderr, stdout};

const PAYROLL: &str = "name: payroll\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: filer\n    task: Summarise.\n";
const FILER: &str =
    "---\nname: filer\ndescription: Files.\ntools: [Read]\nnetwork: none\n---\nFiles.\n";
const WIDER: &str = "---\nname: filer\ndescription: Files.\ntools: [Read, fetch]\nnetwork: public_egress\ncustom_tools:\n  fetch:\n    explain: Fetches.\n    script: tools/fetch.py\n    applies: false\n---\nFiles.\n";

#[test]
fn g27_files_put_of_an_agent_a_saved_workflow_uses_shows_the_change_and_needs_confirmation() {
    let home = Home::new();
    put(&home, "agents/filer/AGENT.md", FILER);
    put(
        &home,
        "agents/filer/tools/fetch.py",
        "def main(**a):\n    return 1\n",
    );
    put(&home, "workflows/payroll.yaml", PAYROLL);
    let file = home.dir.path().join("wider.md");
    std::fs::write(&file, WIDER).unwrap();
    let path = file.to_str().unwrap();
    let refused = home.stepward(&["files", "put", "agents/filer/AGENT.md", "--from", path]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "{}{}",
        stdout(&refused),
        stderr(&refused)
    );
    let said = stderr(&refused);
    assert!(said.contains("payroll"), "{said}");
    assert!(
        said.contains("internet no") && said.contains("internet yes"),
        "{said}"
    );
    assert!(said.contains("--confirm-reach payroll"), "{said}");
    let written = home.stepward(&[
        "files",
        "put",
        "agents/filer/AGENT.md",
        "--from",
        path,
        "--confirm-reach",
        "payroll",
    ]);
    assert!(written.status.success(), "{}", stderr(&written));
}
