//! `stepward workflows` (issue 17 §3): every saved change of a workflow is a version, saved
//! through the CLI parsed first (G1); show, diff and export hold connection references only.

use crate::support::{Home, stderr, stdout};

const WORKFLOW: &str = r#"name: tally
python: "3.11"
steps:
  - id: count
    explain: Counts the lines.
    connections: [crm]
    code: |
      def main():
          return 1
"#;

fn save(home: &Home, name: &str, text: &str) -> std::process::Output {
    let file = home.dir.path().join(format!("{name}-upload.yaml"));
    std::fs::write(&file, text).unwrap();
    home.stepward(&["workflows", "save", name, file.to_str().unwrap()])
}

#[test]
fn g25_workflows_list_show_diff_export_through_the_cli() {
    let home = Home::new();
    let first = save(&home, "tally", WORKFLOW);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(
        stdout(&first).contains("tally: version 1"),
        "{}",
        stdout(&first)
    );
    let edited = WORKFLOW.replace("Counts the lines.", "Counts every line.");
    assert_eq!(save(&home, "tally", &edited).status.code(), Some(0));
    // A write of the file through `files put` is the next version too, parsed first.
    let upload = home.dir.path().join("broken.yaml");
    std::fs::write(&upload, "name: tally\nsteps: 7\n").unwrap();
    let refused = home.stepward(&[
        "files",
        "put",
        "workflows/tally.yaml",
        "--from",
        upload.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("workflows/tally.yaml:"),
        "{}",
        stderr(&refused)
    );
    let invalid = save(&home, "tally", "name: tally\n");
    assert_eq!(invalid.status.code(), Some(1), "{}", stderr(&invalid));
    let listed = home.stepward(&["workflows", "list"]);
    assert!(
        stdout(&listed).contains("tally  version 2"),
        "{}",
        stdout(&listed)
    );
    let shown = home.stepward(&["workflows", "show", "tally", "--version", "1"]);
    assert!(stdout(&shown).contains("version 1"), "{}", stdout(&shown));
    assert!(stdout(&shown).contains("version 2"), "{}", stdout(&shown));
    assert!(
        stdout(&shown).contains("Counts the lines."),
        "{}",
        stdout(&shown)
    );
    let diff = home.stepward(&["workflows", "diff", "tally", "1", "2"]);
    assert!(
        stdout(&diff).contains("+    explain: Counts every line."),
        "{}",
        stdout(&diff)
    );
    let exported = home.stepward(&["workflows", "export", "tally"]);
    assert_eq!(stdout(&exported), edited);
    assert!(stdout(&exported).contains("connections: [crm]"));
}

#[test]
fn g19_a_version_holding_a_value_is_refused_and_export_never_shows_one() {
    let home = Home::new();
    let value = "crm-field-value-7Hq2Vb9NxL";
    let set = home.stepward_with_stdin(&["secrets", "set", "CRM_TOKEN"], value);
    assert!(set.status.success(), "{}", stderr(&set));
    let holding = WORKFLOW.replace("Counts the lines.", &format!("Uses {value}."));
    let refused = save(&home, "tally", &holding);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains(":5:"), "{}", stderr(&refused));
    assert!(!stderr(&refused).contains(value));
    // Saved before the value was the account's, then shown after: masked.
    let later = "crm-later-value-3Kp8Wm2QzR";
    assert_eq!(
        save(
            &home,
            "tally",
            &WORKFLOW.replace("Counts the lines.", &format!("Uses {later}."))
        )
        .status
        .code(),
        Some(0)
    );
    let set = home.stepward_with_stdin(&["secrets", "set", "LATER"], later);
    assert!(set.status.success(), "{}", stderr(&set));
    for args in [
        vec!["workflows", "export", "tally"],
        vec!["workflows", "show", "tally"],
    ] {
        let output = home.stepward(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(
            !stdout(&output).contains(later),
            "{args:?}: {}",
            stdout(&output)
        );
        assert!(stdout(&output).contains("Uses "), "{args:?}");
    }
}
