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

/// Writes `text` to `<dir>/workflows/<name>` and checks it as JSON: (exit code, the report).
pub fn check_json(
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> (Option<i32>, serde_json::Value) {
    let folder = dir.join("workflows");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(name);
    std::fs::write(&path, text).unwrap();
    let checked = crate::support::stepward(&["check", "--json", path.to_str().unwrap()]);
    let reports: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
    (checked.status.code(), reports[0].clone())
}

/// `(code, line, column)` of every diagnostic of a report.
pub fn places(report: &serde_json::Value, key: &str) -> Vec<(String, u64, u64)> {
    report[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            (
                diagnostic["code"].as_str().unwrap().to_owned(),
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A syntax error in a step's code is a check error at the workflow's own line and column of
/// the offending code, not a place in some step.py (G5).
#[test]
fn g5_check_reports_a_python_syntax_error_at_the_yaml_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = check_json(
        dir.path(),
        "broken.yaml",
        "name: broken\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns a list.\n    code: |\n      def main():\n          items = [1, 2\n          return items\n",
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("python-syntax-error".to_owned(), 8, 19)],
        "{report}"
    );
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("step one") && !message.contains("step.py"),
        "{message}"
    );
}

/// An error only the compiler finds (`ast.parse` accepts a `return` outside a function) is a
/// check error too, at its own line and column, not a surprise at run time.
#[test]
fn g5_check_reports_an_error_only_the_compiler_finds_at_the_yaml_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = check_json(
        dir.path(),
        "stray.yaml",
        "name: stray\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n      return 2\n",
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("python-syntax-error".to_owned(), 9, 7)],
        "{report}"
    );
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("outside function"), "{message}");
}

/// The compiler's warnings (here about 200 KB of "`is` with a literal") are not the check's
/// business: it answers at once, without waiting on a pipe nobody reads.
#[test]
fn g5_check_is_not_stalled_by_the_compilers_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "name: noisy\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          n = 1\n",
    );
    for _ in 0..3000 {
        text.push_str("          if n is 1: n = 1\n");
    }
    text.push_str("          return n\n");
    let started = std::time::Instant::now();
    let (code, report) = check_json(dir.path(), "noisy.yaml", &text);
    assert_eq!(code, Some(0), "{report}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the check took {:?}",
        started.elapsed()
    );
}

/// Reading code never runs it, but the compiler's constant folding can be made to take
/// gigabytes (each `+` of this chain keeps a longer string): the checker's limits make it code
/// that cannot be compiled, answered in seconds, with the host's memory untouched.
#[test]
fn g5_check_of_a_constant_folding_bomb_stays_within_the_checkers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let chain = vec!["'\u{10000}' * 4096"; 900].join(" + ");
    let text = format!(
        "name: bomb\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      x = {chain}\n      def main():\n          return 1\n"
    );
    let started = std::time::Instant::now();
    let (code, report) = check_json(dir.path(), "bomb.yaml", &text);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(18),
        "the check took {:?}",
        started.elapsed()
    );
    assert_eq!(code, Some(1), "{report}");
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be compiled (MemoryError"),
        "{message}"
    );
}

/// `def main(...)` must accept exactly the declared inputs: no input it rejects, no required
/// parameter that is not an input; `**kwargs` takes any, a default makes a parameter optional.
#[test]
fn check_holds_def_main_to_the_steps_declared_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let step = |id: &str, signature: &str| {
        format!(
            "  - id: {id}\n    explain: Returns one.\n    inputs: {{ a: {{ from: input.a }} }}\n    code: |\n      def main({signature}):\n          return 1\n"
        )
    };
    let text = format!(
        "name: sig\npython: \"3.11\"\ninputs: {{ a: string }}\nsteps:\n{}{}{}{}{}",
        step("exact", "a"),
        step("kwargs", "**inputs"),
        step("defaulted", "a, b=2"),
        step("rejects", "b=2"),
        step("wants_c", "a, c"),
    );
    let (code, report) = check_json(dir.path(), "sig.yaml", &text);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![
            ("main-rejects-input".to_owned(), 27, 7),
            ("main-parameter-not-an-input".to_owned(), 33, 7),
        ],
        "{report}"
    );
}

/// An agent that does not exist is reported with where it was looked for; a custom tool whose
/// script is missing is reported at its `script:`.
#[test]
fn check_reports_a_missing_agent_where_it_looked_and_a_missing_tool_script() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = check_json(
        dir.path(),
        "asks.yaml",
        "name: asks\npython: \"3.11\"\nsteps:\n  - id: ask\n    agent: nobody\n    task: Summarise the notes.\n",
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        places(&report, "diagnostics"),
        vec![("unknown-agent".to_owned(), 5, 12)]
    );
    let help = report["diagnostics"][0]["help"].as_str().unwrap();
    let agents = dir.path().join("agents");
    assert!(help.contains(&agents.display().to_string()), "{help}");

    let folder = agents.join("notes");
    std::fs::create_dir_all(&folder).unwrap();
    let agent_file = folder.join("AGENT.md");
    std::fs::write(
        &agent_file,
        "---\nname: notes\ndescription: Reads notes.\ntools: [fetch]\ncustom_tools:\n  fetch:\n    explain: Fetches the notes.\n    script: tools/fetch.py\n---\nRead the notes.\n",
    )
    .unwrap();
    let checked = crate::support::stepward(&["check", "--json", agent_file.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    let reports: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
    assert_eq!(
        places(&reports[0], "diagnostics"),
        vec![("missing-script".to_owned(), 8, 13)]
    );
    std::fs::create_dir_all(folder.join("tools")).unwrap();
    std::fs::write(folder.join("tools/fetch.py"), "def main():\n    return 1\n").unwrap();
    let fixed = crate::support::stepward(&["check", agent_file.to_str().unwrap()]);
    assert_eq!(fixed.status.code(), Some(0), "{}", stderr(&fixed));
}

/// A `python:` version this machine lacks is a warning from `check` (the file may be meant for
/// another server), never an error; `run` refuses it (the test above).
#[test]
fn g8_check_warns_of_a_python_version_this_machine_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = check_json(
        dir.path(),
        "old.yaml",
        "name: old\npython: \"3.4\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n",
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["valid"], true);
    assert_eq!(
        places(&report, "warnings"),
        vec![("python-version-missing".to_owned(), 2, 1)]
    );
}

/// `--help` speaks to the person running the command: no design vocabulary, no guarantee
/// codes (issue 12, 4).
#[test]
fn help_says_what_stepward_does_without_design_vocabulary() {
    let help = crate::support::stepward(&["--help"]);
    let text = stdout(&help);
    assert!(text.contains("Runs workflows"), "{text}");
    assert!(!text.contains("composition root"), "{text}");
    for command in ["run", "serve", "accounts", "keys", "check", "secrets"] {
        let help = stdout(&crate::support::stepward(&[command, "--help"]));
        assert!(
            !help.contains("composition root") && !help.contains("(G"),
            "{command}: {help}"
        );
    }
}

/// A decision on the wrong step names the gate the run is parked at in words, not
/// `Some("file_summary")` (issue 12, 4).
#[test]
fn a_decision_on_the_wrong_step_names_the_gate_in_words_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        "sk-signing-7f3a9c1e5b2d4068\n",
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let started = home.stepward(&[
        "run",
        "examples/workflows/monthly_invoices.yaml",
        "--input",
        "month=2026-11",
        "--input",
        r#"lines=[{"customer":"acme","cents":1250}]"#,
    ]);
    assert_eq!(started.status.code(), Some(0), "{}", stderr(&started));
    let run = crate::support::run_id(&started);
    let wrong = home.stepward(&["approve", &run, "total", "--note", "looks right"]);
    assert_ne!(wrong.status.code(), Some(0));
    let said = stderr(&wrong);
    assert!(said.contains("parked at the gate file_summary"), "{said}");
    assert!(!said.contains("Some(") && !said.contains('"'), "{said}");
}

/// A new root key file that does not exist is what is missing, not the current key: the
/// message says how to make it and offers `--generate`, which writes one and rotates
/// (issue 12, 5).
#[test]
fn rotate_root_with_a_missing_new_key_file_says_how_to_make_it_and_generate_works() {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "API"], "value-1234567890\n");
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let new_key = home.dir.path().join("keys/new.key");
    let new_key_text = new_key.to_str().unwrap();
    let missing = home.stepward(&["keys", "rotate-root", "--new-root-key-file", new_key_text]);
    assert_eq!(missing.status.code(), Some(2), "{}", stdout(&missing));
    let said = stderr(&missing);
    assert!(
        said.contains(&format!(
            "the new root key file {new_key_text} does not exist"
        )) && said.contains("64 hexadecimal characters")
            && said.contains("--generate")
            && !said.contains("lost"),
        "{said}"
    );
    let generated = home.stepward(&[
        "keys",
        "rotate-root",
        "--new-root-key-file",
        new_key_text,
        "--generate",
    ]);
    assert_eq!(generated.status.code(), Some(0), "{}", stderr(&generated));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&new_key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let listed = home.stepward(&["--root-key-file", new_key_text, "secrets", "list"]);
    assert!(stdout(&listed).contains("API"), "{}", stderr(&listed));
    let again = home.stepward(&[
        "--root-key-file",
        new_key_text,
        "keys",
        "rotate-root",
        "--new-root-key-file",
        new_key_text,
        "--generate",
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
}

/// A run that stops for a person prints the commands to type, for every status that waits on
/// one; a needs_repair run is stopped (the retry says why it would not help), a
/// needs_attention run is retried or stopped (issue 12, 8).
#[test]
fn a_run_that_waits_for_a_person_prints_the_commands_to_type_needs_root() {
    let home = Home::new();
    let repair = home.dir.path().join("repair.yaml");
    std::fs::write(
        &repair,
        "name: repair\npython: \"3.11\"\nsteps:\n  - id: fetch\n    explain: Fetches a page.\n    code: |\n      import requests\n      def main():\n          return 1\n",
    )
    .unwrap();
    let started = home.stepward(&["run", repair.to_str().unwrap()]);
    let printed = stdout(&started);
    assert!(printed.contains(": needs_repair"), "{printed}");
    let run = crate::support::run_id(&started);
    assert!(
        printed.contains(&format!("stepward runs stop {run} --note")),
        "{printed}"
    );
    let retried = home.stepward(&["runs", "retry", &run, "fetch", "--note", "try again"]);
    assert_eq!(retried.status.code(), Some(2));
    let said = stderr(&retried);
    assert!(
        said.contains("needs repair") && said.contains("Fix the step's code"),
        "{said}"
    );
    let stopped = home.stepward(&["runs", "stop", &run, "--note", "fixing the import"]);
    assert_eq!(stopped.status.code(), Some(0), "{}", stderr(&stopped));
    assert!(
        stdout(&stopped).contains(": stopped"),
        "{}",
        stdout(&stopped)
    );

    let failing = home.dir.path().join("failing.yaml");
    std::fs::write(
        &failing,
        "name: failing\npython: \"3.11\"\nsteps:\n  - id: divide\n    explain: Divides by zero.\n    code: |\n      def main():\n          return 1 / 0\n",
    )
    .unwrap();
    let started = home.stepward(&["run", failing.to_str().unwrap()]);
    let printed = stdout(&started);
    assert!(printed.contains(": needs_attention"), "{printed}");
    let run = crate::support::run_id(&started);
    assert!(
        printed.contains(&format!("stepward runs retry {run} divide --note"))
            && printed.contains(&format!("stepward runs stop {run} --note")),
        "{printed}"
    );
}

/// A blank note is refused by the CLI's decisions too (issue 12, 10): nothing is decided.
#[test]
fn g23_a_blank_note_is_refused_by_the_cli_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        "sk-signing-7f3a9c1e5b2d4068\n",
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let started = home.stepward(&[
        "run",
        "examples/workflows/monthly_invoices.yaml",
        "--input",
        "month=2026-11",
        "--input",
        r#"lines=[{"customer":"acme","cents":1250}]"#,
    ]);
    let run = crate::support::run_id(&started);
    for verb in ["approve", "reject"] {
        let refused = home.stepward(&[verb, &run, "file_summary", "--note", "  "]);
        assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
        assert!(
            stderr(&refused).contains("needs a note"),
            "{}",
            stderr(&refused)
        );
    }
    let shown = home.stepward(&["runs", "show", &run]);
    assert!(
        stdout(&shown).contains(": waiting_approval"),
        "{}",
        stdout(&shown)
    );
}

/// `secrets set NAME` on a terminal prompts, does not echo what is typed, and ends at Enter
/// (issue 12, 10). The terminal is a pseudo-terminal made by Python's `pty` module.
#[test]
fn secrets_set_on_a_terminal_prompts_without_echo_and_ends_at_enter() {
    let home = Home::new();
    let driver = r#"
import os, pty, select, sys, time
binary, data, config = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execve(binary, [binary, "--data-dir", data, "secrets", "set", "API"],
              {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": config})
seen = b""
def read_for(seconds, until=None):
    global seen
    end = time.time() + seconds
    while time.time() < end and not (until and until in seen):
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen += chunk
read_for(20, b"Enter to end")
os.write(fd, b"typed-value-8d2f1c\n")
read_for(20, b"set (version")
end = time.time() + 20
status = None
while time.time() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(0 if status == 0 else 1)
"#;
    let output = std::process::Command::new("/usr/bin/python3")
        .args(["-I", "-S", "-c", driver, env!("CARGO_BIN_EXE_stepward")])
        .arg(home.data_dir())
        .arg(home.dir.path().join("config"))
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{seen}");
    assert!(
        seen.contains("not shown as you type, Enter to end"),
        "{seen}"
    );
    assert!(
        !seen.contains("typed-value-8d2f1c"),
        "the value was echoed: {seen}"
    );
    assert!(seen.contains("secret API set"), "{seen}");
    let listed = home.stepward(&["secrets", "list"]);
    assert!(stdout(&listed).contains("API"), "{}", stdout(&listed));
}
