//! What a new user hits first (issue 12): a run refused at its start when this server cannot
//! give a step what it needs, with the flag that would fix it, and nothing recorded.

use crate::support::{Home, stderr, stdout};

/// The runs of the local account, as `runs list --json` shows them.
fn runs(home: &Home) -> Vec<serde_json::Value> {
    let listed = home.stepward(&["runs", "list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    serde_json::from_str::<serde_json::Value>(&stdout(&listed))
        .unwrap()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// refund.yaml's second step needs public egress: without `--egress-resolver` the run is
/// refused before its first step runs or its gate parks, naming the flag; nothing is recorded.
#[test]
fn g11_a_run_whose_step_needs_egress_the_server_lacks_is_refused_at_start_needs_root() {
    let home = Home::new();
    let refused = home.stepward(&[
        "run",
        "examples/workflows/refund.yaml",
        "--input",
        "ticket_id=T-1",
        "--input",
        "amount_cents=1250",
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("no run was started")
            && said.contains("step send_refund declares `network: public_egress`")
            && said.contains("--egress-resolver IP"),
        "{said}"
    );
    assert!(!stdout(&refused).contains("waiting_approval"));
    assert!(runs(&home).is_empty(), "a refused run is never created");
}

/// A workflow pinned to a Python this machine lacks is refused at start with the versions it
/// has (G8), never run with another.
#[test]
fn g8_a_run_pinned_to_a_python_the_server_lacks_is_refused_at_start_needs_root() {
    let home = Home::new();
    let file = home.dir.path().join("old.yaml");
    std::fs::write(
        &file,
        "name: old\npython: \"3.4\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n",
    )
    .unwrap();
    let refused = home.stepward(&["run", file.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("step one needs Python 3.4") && said.contains("pin a version"),
        "{said}"
    );
    assert!(runs(&home).is_empty(), "a refused run is never created");
}
