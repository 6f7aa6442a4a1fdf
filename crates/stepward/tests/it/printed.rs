//! Issue 12, item 9: `stepward run` shows what each step printed (bounded, scrubbed like the
//! record, `--quiet` hides it), `files list` and `files history` take `--json`, and an empty
//! history says so in words.

use crate::support::{Home, stderr, stdout};

const TOKEN: &str = "sk-printed-4b7d1e9a2c6f8035";

/// A workflow whose one step prints a greeting, the granted value, a terminal escape and 500
/// numbered lines on stdout, and a warning on stderr.
fn chatty_workflow(home: &Home) -> String {
    let added = home.stepward_with_stdin(
        &["connections", "add", "crm", "--field", "token"],
        &format!("{TOKEN}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let workflow = home.dir.path().join("chatty.yaml");
    std::fs::write(
        &workflow,
        r#"name: chatty
python: "3.11"
steps:
  - id: talk
    explain: Prints a greeting, the granted token, an escape and many lines.
    connections: [crm]
    code: |
      import os, sys
      def main():
          print("hello from the step")
          print("the token is", os.environ["CONN_CRM_TOKEN"])
          print("clear \x1b[2J screen")
          for number in range(500):
              print("line", number)
          print("careful now", file=sys.stderr)
          return {"ok": True}
"#,
    )
    .unwrap();
    workflow.to_str().unwrap().to_owned()
}

#[test]
fn g17_run_shows_what_each_step_printed_scrubbed_and_bounded_needs_root() {
    let home = Home::new();
    let workflow = chatty_workflow(&home);
    let ran = home.stepward(&["run", &workflow]);
    let shown = stdout(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}{}", stderr(&ran));
    assert!(shown.contains("hello from the step"), "{shown}");
    assert!(
        shown.contains("careful now"),
        "stderr is shown too: {shown}"
    );
    assert!(shown.contains("line 0"), "{shown}");
    // Scrubbed like the record: the granted value never reaches the terminal.
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("the token is [REDACTED]"), "{shown}");
    // A step cannot drive the terminal.
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    // Bounded: not all 500 lines, and it says where the rest is.
    assert!(!shown.contains("line 499"), "{shown}");
    assert!(
        shown.lines().count() < 120,
        "{} lines",
        shown.lines().count()
    );
    assert!(shown.contains("stepward runs events"), "{shown}");
    // The summary still ends the output.
    let last = shown.lines().last().unwrap_or_default();
    assert!(
        last.contains("talk") && last.contains("succeeded"),
        "{shown}"
    );
}

#[test]
fn run_quiet_hides_what_the_steps_printed_needs_root() {
    let home = Home::new();
    let workflow = chatty_workflow(&home);
    let ran = home.stepward(&["run", &workflow, "--quiet"]);
    let shown = stdout(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}{}", stderr(&ran));
    assert!(!shown.contains("hello from the step"), "{shown}");
    assert!(!shown.contains("line 0"), "{shown}");
    assert!(shown.contains(": succeeded"), "{shown}");
}

#[test]
fn files_list_and_history_take_json() {
    let home = Home::new();
    let put = home.stepward_with_stdin(
        &["files", "put", "notes/a.txt", "--message", "first notes"],
        "hello\n",
    );
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    let listed = home.stepward(&["files", "list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let files: serde_json::Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(
        files,
        serde_json::json!([{ "path": "notes/a.txt", "bytes": 6 }])
    );
    let history = home.stepward(&["files", "history", "--json"]);
    assert_eq!(history.status.code(), Some(0), "{}", stderr(&history));
    let revisions: serde_json::Value = serde_json::from_str(&stdout(&history)).unwrap();
    let revisions = revisions.as_array().unwrap();
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert_eq!(revisions[0]["author_kind"], "cli");
    assert_eq!(revisions[0]["message"], "first notes");
    assert_eq!(revisions[0]["changes"][0]["path"], "notes/a.txt");
    assert_eq!(revisions[0]["changes"][0]["deleted"], false);
}

#[test]
fn an_empty_history_says_so() {
    let home = Home::new();
    // An installation with nothing in its workspace (reading commands make none).
    let made = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-value-0000000002\n");
    assert!(made.status.success(), "{}", stderr(&made));
    let history = home.stepward(&["files", "history"]);
    assert_eq!(history.status.code(), Some(0), "{}", stderr(&history));
    let said = stdout(&history);
    assert!(said.contains("no revisions yet"), "{said:?}");
    let listed = home.stepward(&["files", "list", "--json"]);
    assert_eq!(stdout(&listed).trim(), "[]", "{}", stderr(&listed));
    let history = home.stepward(&["files", "history", "--json"]);
    assert_eq!(stdout(&history).trim(), "[]", "{}", stderr(&history));
}

/// `approve` and `runs retry` show what the attempts they start printed, as `run` does, and
/// only those: what the run printed before the decision was shown by the command that ran it.
#[test]
fn g17_approve_and_retry_show_what_their_attempts_printed_needs_root() {
    let home = Home::new();
    let workflow = home.dir.path().join("gated.yaml");
    std::fs::write(
        &workflow,
        r#"name: gated
python: "3.11"
inputs:
  fail: boolean
steps:
  - id: before
    explain: Prints before the gate.
    code: |
      def main():
          print("printed before the gate")
          return {}
  - id: send!
    explain: Prints after the decision, and fails when asked to.
    inputs:
      fail: { from: input.fail }
    code: |
      def main(fail):
          print("printed after the decision, fail is", fail)
          if fail:
              raise ValueError("asked to fail")
          return {"sent": True}
"#,
    )
    .unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap(), "--input", "fail=true"]);
    assert!(
        stdout(&ran).contains("printed before the gate"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = crate::support::run_id(&ran);
    let approved = home.stepward(&["approve", &run, "send", "--note", "fine"]);
    let shown = stdout(&approved);
    assert!(
        shown.contains("step send (attempt 1) printed on stdout:"),
        "{shown}{}",
        stderr(&approved)
    );
    assert!(shown.contains("fail is True"), "{shown}");
    assert!(!shown.contains("printed before the gate"), "{shown}");

    let retried = home.stepward(&[
        "runs",
        "retry",
        &run,
        "send",
        "--input",
        "fail=false",
        "--note",
        "again",
    ]);
    // New inputs for a gated step park the run for a decision on them (G23); the approval
    // then shows what the attempt with them printed.
    let shown = stdout(&retried);
    assert!(
        shown.contains("on the new inputs of a person's retry"),
        "{shown}{}",
        stderr(&retried)
    );
    assert!(!shown.contains("fail is"), "{shown}");
    let approved = home.stepward(&["approve", &run, "send", "--note", "false is right"]);
    let shown = stdout(&approved);
    assert!(
        shown.contains("fail is False"),
        "{shown}{}",
        stderr(&approved)
    );
    assert!(!shown.contains("fail is True"), "{shown}");
}

/// newcomer 3, friction 7: a step's runtime error pointed at a `step.py` the user never wrote,
/// and `run` showed only the exception. `run` shows the traceback's last lines at the workflow
/// file's lines for a literal block, and says when a quoted one cannot be mapped.
#[test]
fn g5_run_shows_where_a_steps_code_raised_at_the_workflow_files_line_needs_root() {
    let home = Home::new();
    let file = home.dir.path().join("raises.yaml");
    std::fs::write(
        &file,
        "name: raises\npython: \"3.11\"\nsteps:\n  - id: count\n    explain: Fails on purpose.\n    code: |\n      def check(top):\n          if top < 1:\n              raise ValueError(f\"top must be at least 1, got {top}\")\n      def main():\n          check(0)\n          return 1\n",
    )
    .unwrap();
    let ran = home.stepward(&["run", file.to_str().unwrap()]);
    let said = stdout(&ran);
    assert!(
        said.contains("step count (attempt 1) raised ValueError: top must be at least 1, got 0"),
        "{said}"
    );
    // Line 5 of the code (`check(0)`) is line 11 of the file; line 3 (the raise) is line 9.
    assert!(said.contains("raises.yaml:11 in main: check(0)"), "{said}");
    assert!(
        said.contains("raises.yaml:9 in check: raise ValueError"),
        "{said}"
    );
    let quoted = home.dir.path().join("quoted.yaml");
    std::fs::write(
        &quoted,
        "name: quoted\npython: \"3.11\"\nsteps:\n  - id: count\n    explain: Fails on purpose.\n    code: \"def main():\\n    raise ValueError('no')\\n\"\n",
    )
    .unwrap();
    let ran = home.stepward(&["run", quoted.to_str().unwrap()]);
    let said = stdout(&ran);
    assert!(said.contains("step.py:2 in main"), "{said}");
    assert!(said.contains("cannot be mapped to the file's"), "{said}");
}
