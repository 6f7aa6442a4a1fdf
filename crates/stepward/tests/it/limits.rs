//! Declared limits end to end (issue 13, part 3): the operator's maxima are a parameter of
//! every parse (`check`, `run`), a declaration above one is refused naming the limit and the
//! maximum, the record states the limits each attempt ran under, and a step killed by a limit
//! says which.

use crate::support::{Home, stderr, stdout};

fn workflow(dir: &std::path::Path, limits: &str, body: &str) -> String {
    let path = dir.join("limited.yaml");
    std::fs::write(
        &path,
        format!(
            "name: limited\npython: \"3.11\"\nsteps:\n  - id: spin\n    explain: Spins until a limit stops it.\n    limits: {limits}\n    code: |\n      {body}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn g5_a_declared_limit_above_the_operators_maximum_is_refused_naming_both() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let path = workflow(
        dir.path(),
        "{ memory_mib: 512 }",
        "def main():\n          return 1",
    );
    // `check` holds it to the built-in maxima, and says so.
    let checked = home.stepward(&["check", &path]);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("checked against the built-in maxima"),
        "{}",
        stderr(&checked)
    );
    // An operator maximum below the declaration refuses it, at check and at run, never lowers it.
    for command in ["check", "run"] {
        let refused = home.stepward(&["--max-step-memory-mib", "256", command, &path]);
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        let printed = stderr(&refused);
        assert!(
            printed.contains("`memory_mib: 512` is above this server's maximum of 256"),
            "{printed}"
        );
        assert!(printed.contains("--max-step-memory-mib"), "{printed}");
    }
}

#[test]
fn g10_a_step_killed_by_its_declared_limit_says_which_and_the_record_states_its_limits_needs_root()
{
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let path = workflow(
        dir.path(),
        "{ cpu_s: 1, timeout_s: 30, memory_mib: 200 }",
        "def main():\n          while True:\n              pass",
    );
    let ran = home.stepward(&["run", &path, "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&stdout(&ran))
        .unwrap_or_else(|error| panic!("{error}: {}{}", stdout(&ran), stderr(&ran)));
    let step = &summary["steps"][0];
    assert_eq!(step["status"], "unknown", "{summary}");
    assert!(
        step["reason"]
            .as_str()
            .unwrap()
            .contains("CPU time limit (cpu_s 1)"),
        "{summary}"
    );
    let run = summary["run"].as_str().unwrap();
    // The attempt's record (its finishing event) carries the limits it ran under.
    let shown = home.stepward(&["runs", "events", run, "--json"]);
    let record = stdout(&shown);
    assert!(
        record.contains(
            "limits: memory_mib 200, timeout_s 30, cpu_s 1, output_kib 1024, work_mib 128"
        ),
        "{record}"
    );
}

/// newcomer 3, workloads 2 and 3, as a user runs it: `stepward run` builds its first step's
/// sandbox ahead, before the step's declared limits are applied; a declaration above the
/// default (up to the maximum) reaches it, is used, and the step starts 256 threads.
#[test]
fn g10_a_step_declaring_more_memory_runs_and_uses_it_needs_root() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    for memory in [512, 1024, 2048] {
        let path = workflow(
            dir.path(),
            &format!("{{ memory_mib: {memory}, cpu_s: 3600 }}"),
            "import threading\n      def main():\n          held = bytearray(400 * 1024 * 1024)\n          threads = [threading.Thread(target=lambda: None) for _ in range(256)]\n          for thread in threads:\n              thread.start()\n          for thread in threads:\n              thread.join()\n          return len(held) >> 20",
        );
        let ran = home.stepward(&["run", &path]);
        assert_eq!(
            ran.status.code(),
            Some(0),
            "{memory}: {}{}",
            stdout(&ran),
            stderr(&ran)
        );
        assert!(
            stdout(&ran).contains("succeeded    400"),
            "{memory}: {}",
            stdout(&ran)
        );
    }
}
