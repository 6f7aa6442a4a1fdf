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

#[test]
fn g11_network_none_has_a_working_loopback_needs_root() {
    let answer = report(
        &Probe::new(include_str!("../../probes/ordinary.py"), json!({})).run(Filter::Enforced),
    );
    assert_eq!(answer["loopback"], "ping", "{answer}");
    assert_eq!(answer["http"], "served on loopback", "{answer}");
    assert_eq!(answer["localhost"], json!(["127.0.0.1"]), "{answer}");
}

#[test]
fn g7_the_sandbox_user_has_a_passwd_entry_with_tmp_as_home_and_no_added_environment_needs_root() {
    let answer = report(
        &Probe::new(include_str!("../../probes/ordinary.py"), json!({})).run(Filter::Enforced),
    );
    assert_eq!(answer["user"], "sandbox", "{answer}");
    assert_eq!(answer["home"], "/tmp", "{answer}");
    assert_eq!(answer["expanduser"], "/tmp", "{answer}");
    assert_eq!(answer["group"], "sandbox", "{answer}");
    assert_eq!(
        answer["tar_owner"],
        json!(["sandbox", "sandbox"]),
        "{answer}"
    );
    // G7: nothing but what the step declared (none here) and what the interpreter sets.
    let environment: Vec<&str> = answer["environment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert!(
        environment.iter().all(|name| *name == "LC_CTYPE"),
        "{environment:?}"
    );
}

#[test]
fn g7_an_interpreter_exiting_with_daemon_threads_finds_libgcc_s_needs_root() {
    let answer = report(
        &Probe::new(
            include_str!("../../probes/daemon_thread_exit.py"),
            json!({}),
        )
        .run(Filter::Enforced),
    );
    for run in answer["runs"].as_array().unwrap() {
        assert_eq!(run["code"], 0, "{answer}");
        assert!(
            !run["stderr"].as_str().unwrap().contains("libgcc_s"),
            "{answer}"
        );
    }
}
