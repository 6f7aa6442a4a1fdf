//! `check`, `reach` and `schema`: exit codes, diagnostics with places, the caption.

use crate::support::{example_workflows, stderr, stdout, stepward};

const CAPTION: &str =
    "This is what each step is permitted to reach, not a review of what its code does.";

#[test]
fn g1_every_bundled_example_passes_check() {
    let mut args = vec!["check"];
    let workflows = example_workflows();
    args.extend(workflows.iter().map(String::as_str));
    args.push("examples/agents/digest/AGENT.md");
    let output = stepward(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for workflow in &workflows {
        assert!(stdout(&output).contains(&format!("{workflow}: valid")));
    }
}

#[test]
fn g5_check_reports_file_line_and_column_and_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.yaml");
    std::fs::write(
        &path,
        "name: broken\npython: \"3.11\"\nsteps:\n  - id: build\n    explain: \"  \"\n    code: |\n      def main():\n          return 1\n",
    )
    .unwrap();
    let output = stepward(&["check", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let printed = stderr(&output);
    assert!(
        printed.contains(&format!("{}:5:", path.display())),
        "{printed}"
    );
}

#[test]
fn g5_check_json_gives_diagnostics_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.yaml");
    std::fs::write(&path, "name: x\nsteps: []\n").unwrap();
    let output = stepward(&["check", "--json", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let reports: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let diagnostics = reports[0]["diagnostics"].as_array().unwrap();
    assert!(!diagnostics.is_empty());
    assert!(diagnostics.iter().all(|d| d["line"].as_u64().unwrap() >= 1));
    assert_eq!(reports[0]["valid"], false);
}

#[test]
fn check_of_a_missing_file_is_an_io_error_exit_two() {
    let output = stepward(&["check", "no/such/file.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no/such/file.yaml"));
}

#[test]
fn check_without_files_is_a_usage_error_exit_two() {
    let output = stepward(&["check"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn g27_reach_prints_the_caption_word_for_word_and_a_row_per_step() {
    for workflow in example_workflows() {
        let output = stepward(&["reach", &workflow]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let printed = stdout(&output);
        assert!(printed.contains(CAPTION), "{workflow}: {printed}");
    }
}

#[test]
fn g27_reach_json_lists_every_step_including_those_that_reach_nothing() {
    for workflow in example_workflows() {
        let text = std::fs::read_to_string(crate::support::repo_root().join(&workflow)).unwrap();
        let step_count = text
            .lines()
            .filter(|line| line.trim_start().starts_with("- id:"))
            .count();
        let output = stepward(&["reach", "--json", &workflow]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["caption"], CAPTION);
        let rows = report["rows"].as_array().unwrap();
        assert_eq!(rows.len(), step_count, "{workflow}: one row per step");
        assert!(rows.iter().all(|row| row["internet"].is_string()));
    }
}

#[test]
fn g27_offline_example_rows_say_no_internet() {
    let output = stepward(&["reach", "--json", "examples/workflows/word_count.yaml"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    for row in report["rows"].as_array().unwrap() {
        assert_eq!(row["internet"], "no");
        assert_eq!(row["connections"].as_array().unwrap().len(), 0);
    }
}

#[test]
fn schema_prints_a_json_schema() {
    let output = stepward(&["schema"]);
    assert_eq!(output.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert!(
        schema["$schema"]
            .as_str()
            .unwrap()
            .contains("json-schema.org")
    );
}

/// `stepward runs list | head`: a reader that goes away ends the command quietly, with the
/// status a shell gives a process ended by SIGPIPE, never a panic report or a backtrace.
#[test]
fn g5_a_closed_stdout_ends_the_command_quietly() {
    let home = crate::support::Home::new();
    // `runs list` reads an installation: one is made first.
    let made = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-value-0000000003\n");
    assert!(made.status.success(), "{}", stderr(&made));
    for args in [vec!["schema"], vec!["runs", "list"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_stepward"))
            .args(&args)
            .arg("--data-dir")
            .arg(home.data_dir())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("RUST_BACKTRACE", "1")
            .env("XDG_CONFIG_HOME", home.dir.path().join("config"))
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("backtrace"), "{args:?}: {stderr}");
    }
}

/// newcomer 3, friction 3: `check` passed a step importing `requests`, which the run then sent
/// to repair after the earlier steps ran. `check` reads the imports with the platform's own
/// reader (G9) against the pinned standard library and reports the import at the workflow
/// file's line and column.
#[test]
fn g9_check_reports_an_import_outside_the_standard_library_where_it_is_written() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("m2_requests.yaml");
    std::fs::write(
        &file,
        "name: m2_requests\npython: \"3.11\"\nsteps:\n  - id: total\n    explain: Adds.\n    code: |\n      def main():\n          return 1\n  - id: fetch\n    explain: Fetches.\n    code: |\n      import json\n      import requests\n      def main():\n          return requests.get('https://example.test').status_code\n",
    )
    .unwrap();
    let checked = stepward(&["check", file.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    let said = stderr(&checked);
    assert!(
        said.contains("error[import-outside-stdlib]")
            && said.contains("m2_requests.yaml:13:7")
            && said.contains("'requests'")
            && said.contains("Python 3.11's standard library"),
        "{said}"
    );
    assert!(
        !said.contains("'json'"),
        "json is in the standard library: {said}"
    );
}
