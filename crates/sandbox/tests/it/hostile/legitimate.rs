//! Legitimate standard-library work runs in the sandbox: json, re, threading, tempfile and a
//! subprocess of the interpreter itself; its output file comes back.

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

#[test]
fn g7_legitimate_stdlib_work_runs_needs_root() {
    let observation = Probe::new(
        include_str!("../../probes/legitimate.py"),
        json!({ "numbers": [1, 2, 3, 4] }),
    )
    .run(Filter::Enforced);
    let answer = report(&observation);
    assert_eq!(answer["words"], json!(["alpha", "beta", "gamma"]));
    assert_eq!(answer["sum_of_squares"], 30);
    assert_eq!(answer["temporary"], "kept");
    assert_eq!(answer["child"], "42");
    assert_eq!(answer["child_code"], 0);
    assert!(String::from_utf8_lossy(&observation.stdout).contains("legitimate work done"));
    assert_eq!(observation.backend, "local");
    let returned: Vec<&str> = observation
        .copy_back
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(returned, vec!["output.json"]);
}
