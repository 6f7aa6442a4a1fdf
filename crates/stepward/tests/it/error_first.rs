//! "`error:` everywhere" (newcomer 3, item 13): whichever way a command refuses, the line that
//! says so starts with `error:`, as clap's own refusals do, so a person (and a script) finds
//! it the same way every time. Notes (`note:`), hints (`help:`) and indented detail may
//! follow it; a located diagnostic (`FILE:LINE:COL: error: ...`) may precede it.

use std::process::Output;

use crate::support::{Home, TINY_WORKFLOW, stderr};

/// The last line of stderr that is neither indented detail nor a hint (`help:`, `note:`, and
/// clap's `Usage:` and `For more information` lines).
fn refusal_line(output: &Output) -> String {
    const HINTS: [&str; 4] = ["help:", "note:", "Usage:", "For more information"];
    stderr(output)
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with(' '))
        .rfind(|line| !HINTS.iter().any(|hint| line.starts_with(hint)))
        .unwrap_or_default()
        .to_owned()
}

/// What is wrong with how `stepward ARGS` refused, if anything.
fn refused_with_error_first(home: &Home, args: &[&str]) -> Option<String> {
    let output = home.stepward(args);
    if output.status.success() {
        return Some(format!(
            "`stepward {}` was not refused: {}",
            args.join(" "),
            stderr(&output)
        ));
    }
    let line = refusal_line(&output);
    (!line.starts_with("error:")).then(|| {
        format!(
            "`stepward {}` refused without `error:` first; its refusal line is {line:?} in:\n{}",
            args.join(" "),
            stderr(&output)
        )
    })
}

#[test]
fn every_kind_of_refusal_of_the_cli_says_error_first() {
    let home = Home::new();
    let invalid = home.dir.path().join("invalid.yaml");
    std::fs::write(
        &invalid,
        TINY_WORKFLOW.replace(
            "explain: Returns one.",
            "explain: Returns one.\n    colour: red",
        ),
    )
    .unwrap();
    let typed = home.dir.path().join("typed.yaml");
    std::fs::write(
        &typed,
        "name: typed\npython: \"3.11\"\ninputs:\n  top: integer\nsteps:\n  - id: one\n    \
         explain: Returns its input.\n    inputs:\n      top: { from: input.top }\n    code: |\n      \
         def main(top):\n          return top\n",
    )
    .unwrap();
    // An installation first, so that the refusals below are the commands' own.
    home.put("workflows/tiny.yaml", TINY_WORKFLOW);
    let path = |file: &std::path::Path| file.to_str().unwrap().to_owned();
    let cases: Vec<Vec<String>> = vec![
        // clap's own refusal, the model of the others.
        vec!["run".into(), "--no-such-flag".into()],
        vec!["check".into(), path(&invalid)],
        vec!["run".into(), path(&invalid)],
        vec!["run".into(), "no_such_workflow".into()],
        vec![
            "run".into(),
            path(&typed),
            "--input".into(),
            "top=three".into(),
        ],
        vec![
            "runs".into(),
            "show".into(),
            "run_00000000000000000000000000".into(),
        ],
        vec![
            "approve".into(),
            "run_00000000000000000000000000".into(),
            "--note".into(),
            "yes".into(),
        ],
        vec!["workflows".into(), "show".into(), "no_such_workflow".into()],
        vec![
            "files".into(),
            "put".into(),
            "workflows/tiny.yaml".into(),
            "--from".into(),
            path(&invalid),
        ],
        vec!["secrets".into(), "remove".into(), "NO_SUCH_SECRET".into()],
    ];
    let mut wrong: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let args: Vec<&str> = case.iter().map(String::as_str).collect();
            refused_with_error_first(&home, &args)
        })
        .collect();
    // A read command in a folder with no installation refuses, and creates nothing.
    wrong.extend(refused_with_error_first(&Home::new(), &["runs", "list"]));
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_changed_audit_log_is_reported_with_error_first() {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "TOKEN"], "a-long-enough-value-1\n");
    assert!(set.status.success(), "{}", stderr(&set));
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .execute_batch(
            "DROP TRIGGER audit_is_append_only_update;
             UPDATE audit_log SET detail = '{\"changed\":true}'
                 WHERE account_id = 'local' AND seq = 1;",
        )
        .unwrap();
    drop(connection);
    let wrong = refused_with_error_first(&home, &["audit", "verify"]);
    assert!(wrong.is_none(), "{}", wrong.unwrap_or_default());
}
