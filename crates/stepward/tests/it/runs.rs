//! `run`, `approve`, `reject`, `runs`, `secrets`, `connections`, `audit` end to end, with real
//! sandboxes (these tests need root, as CI has).

use crate::support::{Home, run_id, stderr, stdout};
use test_support::bytes::contains;

const SIGNING_KEY: &str = "sk-signing-7f3a9c1e5b2d4068";
const INVOICES: &str = "examples/workflows/monthly_invoices.yaml";
const LINES: &str = r#"lines=[{"customer":"acme","cents":1250},{"customer":"bolt","cents":990}]"#;

fn home_with_signing_key() -> Home {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        &format!("{SIGNING_KEY}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    home
}

#[test]
fn g23_cli_run_parks_at_the_gate_and_approve_records_who_door_and_note_needs_root() {
    let home = home_with_signing_key();
    let started = home.stepward(&[
        "run",
        INVOICES,
        "--input",
        "month=2026-11",
        "--input",
        LINES,
    ]);
    assert_eq!(
        started.status.code(),
        Some(0),
        "{}{}",
        stdout(&started),
        stderr(&started)
    );
    assert!(
        home.cgroup_parents().is_empty(),
        "a finished command leaves no cgroup parent behind: {:?}",
        home.cgroup_parents()
    );
    assert!(
        stdout(&started).contains("waiting_approval"),
        "{}",
        stdout(&started)
    );
    let run = run_id(&started);
    let report = home
        .data_dir()
        .join("accounts/local/workspace/reports/2026-11.txt");
    assert!(
        !report.exists(),
        "nothing after the gate ran before the decision"
    );

    let approved = home.stepward(&["approve", &run, "file_summary!", "--note", "totals checked"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    assert!(
        stdout(&approved).contains("succeeded"),
        "{}",
        stdout(&approved)
    );
    let written = std::fs::read_to_string(&report).expect("the approved step wrote its report");
    assert!(written.contains("Total: 22.40"), "{written}");

    let events = home.stepward(&["runs", "events", &run, "--json"]);
    let events: serde_json::Value = serde_json::from_str(&stdout(&events)).unwrap();
    let decision = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["kind"] == "decision")
        .expect("the decision is an event");
    assert_eq!(decision["payload"]["door"], "cli");
    assert_eq!(decision["payload"]["note"], "totals checked");
    assert_eq!(decision["payload"]["who"]["kind"], "cli");
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|event| event["kind"] == "workspace.revision")
    );
    // The record reads from the CLI (newcomer 3, friction 12): the decision with who, when
    // and the note in `runs show`; times in `runs list` and `runs events`, ISO 8601 in JSON.
    assert!(
        decision["time"]
            .as_str()
            .is_some_and(|time| time.contains('T') && time.ends_with('Z')),
        "{decision}"
    );
    let shown = stdout(&home.stepward(&["runs", "show", &run]));
    assert!(
        shown.contains("decisions:")
            && shown.contains("approve `file_summary` by")
            && shown.contains("(the CLI) through the cli: totals checked")
            && shown.contains(" UTC"),
        "{shown}"
    );
    let listed = stdout(&home.stepward(&["runs", "list"]));
    assert!(
        listed.contains("updated 20")
            && listed.contains(" UTC")
            && listed.contains("monthly_invoices #1 "),
        "{listed}"
    );
    let listed = stdout(&home.stepward(&["runs", "list", "--json"]));
    assert!(listed.contains("\"updated\": \"20"), "{listed}");
}

#[test]
fn g23_reject_stops_the_run_and_the_gated_step_never_runs_needs_root() {
    let home = home_with_signing_key();
    let started = home.stepward(&[
        "run",
        INVOICES,
        "--input",
        "month=2026-12",
        "--input",
        LINES,
    ]);
    let run = run_id(&started);
    let rejected = home.stepward(&["reject", &run, "file_summary", "--note", "wrong month"]);
    assert!(
        stdout(&rejected).contains("stopped"),
        "{}{}",
        stdout(&rejected),
        stderr(&rejected)
    );
    assert!(
        !home
            .data_dir()
            .join("accounts/local/workspace/reports/2026-12.txt")
            .exists()
    );
    let again = home.stepward(&["approve", &run, "file_summary", "--note", "changed my mind"]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "a decided gate cannot be decided again"
    );
}

#[test]
fn g17_a_credential_the_step_prints_and_returns_never_reaches_the_record_needs_root() {
    let home = home_with_signing_key();
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("leaky.yaml");
    std::fs::write(
        &workflow,
        r#"name: leaky
python: "3.11"
steps:
  - id: leak
    explain: Prints and returns its signing key in several encodings, which must all be scrubbed.
    connections: [signing]
    code: |
      import base64, os
      def main():
          key = os.environ["CONN_SIGNING_KEY"]
          print("key is", key, base64.b64encode(key.encode()).decode(), key.encode().hex())
          return {"raw": key, "b64": base64.b64encode(key.encode()).decode()}
"#,
    )
    .unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap(), "--json"]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let encoded = [
        SIGNING_KEY.to_owned(),
        base64_of(SIGNING_KEY),
        SIGNING_KEY
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    ];
    let run = run_id(&ran);
    let events = home.stepward(&["runs", "events", &run]);
    let data = home.data_bytes();
    for form in &encoded {
        assert!(
            !stdout(&ran).contains(form.as_str()),
            "run output holds {form}"
        );
        assert!(
            !stdout(&events).contains(form.as_str()),
            "events hold {form}"
        );
        assert!(!contains(&data, form), "the data directory holds {form}");
    }
    assert!(stdout(&ran).contains("[REDACTED]"), "{}", stdout(&ran));
}

/// G12, the screen the binary gives the sandbox's copy-back: it knows every value of the
/// run's account, not only those granted to the run, so a file holding a secret the step was
/// never given (here built from two halves, as code that found it elsewhere would) is refused
/// with a reason, and the rest of the copy-back is written.
#[test]
fn g12_the_copy_back_screen_refuses_a_file_holding_any_value_of_the_account_needs_root() {
    let home = Home::new();
    let value = "ghp-account-value-the-run-was-never-given-7";
    let set = home.stepward_with_stdin(&["secrets", "set", "DEPLOY_TOKEN"], value);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("writer.yaml");
    std::fs::write(
        &workflow,
        r#"name: writer
python: "3.11"
steps:
  - id: write
    explain: Writes a report and a file holding a value of the account it pieced together.
    code: |
      import os
      def main():
          os.makedirs("out", exist_ok=True)
          with open("out/report.txt", "w") as report:
              report.write("42 refunds\n")
          with open("out/found.env", "w") as found:
              found.write("TOKEN=" + "ghp-account-value-" + "the-run-was-never-given-7\n")
          return None
"#,
    )
    .unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap(), "--json"]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let folder = home.data_dir().join("accounts/local/workspace/out");
    assert_eq!(
        std::fs::read(folder.join("report.txt")).unwrap(),
        b"42 refunds\n"
    );
    assert!(!folder.join("found.env").exists(), "the file was refused");
    let events = home.stepward(&["runs", "events", &run_id(&ran), "--json"]);
    let events: serde_json::Value = serde_json::from_str(&stdout(&events)).unwrap();
    let refused: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["kind"] == "copy_back.refused")
        .collect();
    assert_eq!(refused.len(), 1, "{events:#}");
    assert_eq!(refused[0]["payload"]["path"], "out/found.env");
    // Refused by the sandbox's filter with the binary's screen, before the engine's own
    // screen (which would say `engine`) had to.
    assert_eq!(refused[0]["payload"]["by"], "sandbox", "{events:#}");
    assert!(!contains(&home.data_bytes(), value));
}

#[test]
fn g19_secrets_list_shows_names_and_the_value_is_never_stored_in_plaintext() {
    let home = Home::new();
    let value = "ghp-value-that-must-stay-sealed-42";
    let set = home.stepward_with_stdin(&["secrets", "set", "GITHUB_TOKEN"], value);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let listed = home.stepward(&["secrets", "list"]);
    assert!(stdout(&listed).contains("GITHUB_TOKEN"));
    assert!(!stdout(&listed).contains(value));
    assert!(!contains(&home.data_bytes(), value));
    let audit = home.stepward(&["audit", "verify"]);
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
}

#[test]
fn g4_a_run_time_input_with_a_credential_key_is_refused_before_anything_runs() {
    let home = Home::new();
    let ran = home.stepward(&[
        "run",
        INVOICES,
        "--input",
        "month=2026-11",
        "--input",
        r#"lines=[{"customer":"acme","api_key":"x"}]"#,
    ]);
    assert_eq!(ran.status.code(), Some(1), "{}", stderr(&ran));
    assert!(stderr(&ran).contains("api_key"), "{}", stderr(&ran));
    let listed = home.stepward(&["runs", "list", "--json"]);
    assert_eq!(stdout(&listed).trim(), "[]");
}

fn base64_of(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * index)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn g9_a_third_party_import_or_a_syntax_error_sends_the_step_to_repair_needs_root() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        (
            "imports",
            "import requests\n      def main():\n          return 1",
        ),
        ("broken", "def main(:\n          return 1"),
    ] {
        let workflow = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &workflow,
            format!(
                "name: {name}\npython: \"3.11\"\nsteps:\n  - id: only\n    explain: Needs repair before it can run.\n    code: |\n      {body}\n"
            ),
        )
        .unwrap();
        let ran = home.stepward(&["run", workflow.to_str().unwrap()]);
        assert_eq!(ran.status.code(), Some(1), "{name}: {}", stderr(&ran));
        let printed = stdout(&ran);
        assert!(printed.contains(": needs_repair"), "{name}: {printed}");
        if name == "imports" {
            assert!(printed.contains("requests"), "{printed}");
        } else {
            assert!(printed.contains("SyntaxError"), "{printed}");
        }
    }
}

#[test]
fn g20_a_root_key_file_inside_the_data_directory_is_refused() {
    let home = Home::new();
    let inside = home.data_dir().join("root.key");
    std::fs::create_dir_all(home.data_dir()).unwrap();
    std::fs::write(&inside, "00".repeat(32)).unwrap();
    let listed = home.stepward_with_stdin(
        &[
            "secrets",
            "set",
            "TOKEN",
            "--root-key-file",
            inside.to_str().unwrap(),
        ],
        "a-value-0000000004\n",
    );
    assert_eq!(listed.status.code(), Some(2));
    assert!(
        stderr(&listed).contains("inside the data directory"),
        "{}",
        stderr(&listed)
    );
}

#[test]
fn g13_the_gvisor_backend_runs_a_workflow_and_records_itself_needs_root() {
    let home = Home::new();
    let ran = home.stepward(&[
        "--backend",
        "gvisor",
        "run",
        "examples/workflows/word_count.yaml",
        "--input",
        "text=one two two",
        "--input",
        "top=1",
    ]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    assert!(stdout(&ran).contains(r#"["two",2]"#), "{}", stdout(&ran));
    assert!(
        home.cgroup_parents().is_empty(),
        "{:?}",
        home.cgroup_parents()
    );
    let events = home.stepward(&["runs", "events", &run_id(&ran), "--json"]);
    let events: serde_json::Value = serde_json::from_str(&stdout(&events)).unwrap();
    let finished = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["kind"] == "attempt.finished")
        .expect("an attempt finished");
    assert_eq!(finished["payload"]["backend"], "gvisor");
}

/// A data directory from before each account had a workspace of its own: the local account's
/// files and history move to its folder on the next command, and nothing is lost.
#[test]
fn g25_a_single_account_workspace_moves_to_the_local_accounts_folder() {
    let home = Home::new();
    let data = home.data_dir();
    std::fs::create_dir_all(data.join("workspace/reports")).unwrap();
    std::fs::write(data.join("workspace/reports/old.txt"), b"kept").unwrap();
    std::fs::create_dir_all(data.join("revisions")).unwrap();
    std::fs::write(data.join("revisions/revisions.log"), b"").unwrap();
    // Such a data directory had its database (an empty one here: migrations make the rest).
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(data.join("stepward.db"))
            .unwrap();
    }
    let listed = home.stepward(&["runs", "list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(
        std::fs::read(data.join("accounts/local/workspace/reports/old.txt")).unwrap(),
        b"kept"
    );
    assert!(data.join("accounts/local/revisions/revisions.log").exists());
    assert!(!data.join("workspace").exists() && !data.join("revisions").exists());
}

/// `stepward files`: a write from the command line is a revision by the OS user, a value of the
/// vault is refused whole, and the history names both the person at the terminal and the run's
/// step that wrote beside them.
#[test]
fn g25_files_put_is_a_revision_by_the_os_user_and_a_vault_value_is_refused() {
    let home = Home::new();
    let put = home.stepward_with_stdin(
        &[
            "files",
            "put",
            "inputs/notes.txt",
            "--message",
            "notes for the run",
        ],
        "remember the totals\n",
    );
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    assert_eq!(
        std::fs::read_to_string(
            home.data_dir()
                .join("accounts/local/workspace/inputs/notes.txt")
        )
        .unwrap(),
        "remember the totals\n"
    );
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        &format!("{SIGNING_KEY}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let leak = home.stepward_with_stdin(
        &["files", "put", "leak.txt"],
        &format!("key={SIGNING_KEY}\n"),
    );
    assert_ne!(leak.status.code(), Some(0), "{}", stdout(&leak));
    assert!(!stderr(&leak).contains(SIGNING_KEY), "{}", stderr(&leak));
    assert!(
        !home
            .data_dir()
            .join("accounts/local/workspace/leak.txt")
            .exists()
    );
    let outside = home.stepward_with_stdin(&["files", "put", "../escape.txt"], "x");
    assert_ne!(outside.status.code(), Some(0));
    assert!(!home.data_dir().join("accounts/local/escape.txt").exists());

    let listed = home.stepward(&["files", "list"]);
    assert!(
        stdout(&listed).contains("inputs/notes.txt"),
        "{}",
        stdout(&listed)
    );
    let history = home.stepward(&["files", "history"]);
    assert!(
        stdout(&history).contains("(command line): notes for the run"),
        "{}",
        stdout(&history)
    );
    let removed = home.stepward(&["files", "rm", "inputs/notes.txt"]);
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    assert!(stdout(&home.stepward(&["files", "history"])).contains("inputs/notes.txt (deleted)"));
    let audit = home.stepward(&["audit", "verify"]);
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
}

/// Issue 11, finding 9: the CLI's door has the note limit of every other door, and says it
/// before anything is opened.
#[test]
fn g23_a_note_over_its_limit_is_refused_by_the_cli() {
    let home = Home::new();
    let long = "n".repeat(api_types::limits::NOTE_CHARS + 1);
    for args in [
        vec!["approve", "r-none", "ship", "--note", &long],
        vec!["reject", "r-none", "ship", "--note", &long],
        vec!["runs", "retry", "r-none", "ship", "--note", &long],
        vec!["runs", "stop", "r-none", "--note", &long],
    ] {
        let output = home.stepward(&args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("--note: at most 2000 characters, 2001 given"),
            "{}",
            stderr(&output)
        );
    }
}

/// newcomer 3, workload 4: `runs events --json` gives every event with the journal version it
/// was stored in.
#[test]
fn g25_runs_events_json_carries_each_events_stored_version_needs_root() {
    let home = Home::new();
    let workflow = home.dir.path().join("tiny.yaml");
    std::fs::write(&workflow, crate::support::TINY_WORKFLOW).unwrap();
    let ran = home.stepward(&["run", workflow.to_str().unwrap()]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let events = home.stepward(&["runs", "events", &run_id(&ran), "--json"]);
    let events: serde_json::Value = serde_json::from_str(&stdout(&events)).unwrap();
    let events = events.as_array().unwrap();
    assert!(events.len() >= 3, "{events:?}");
    for event in events {
        // Each event is stored in the lowest version that holds its fields.
        let version = event["version"]
            .as_u64()
            .unwrap_or_else(|| panic!("{event}"));
        assert!(
            (1..=u64::from(engine::journal::VERSION)).contains(&version),
            "{event}"
        );
    }
}
