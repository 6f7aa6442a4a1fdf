//! The credentials review's reproductions run end to end with real sandboxes (these tests need
//! root, as CI has): each writes a value of the account through one of the platform's own
//! writers and searches the data directory and what the CLI shows for it.

use crate::support::{Home, contains, stderr, stdout};

/// A numeric credential of 23 digits: as a JSON float only 16 of them would survive.
const ACCOUNT_NUMBER: &str = "98765432109876543210987";

/// G17 (review "credentials" A9): a long numeric credential returned as a JSON number is
/// scrubbed by the digits the step wrote, not by the float it would become.
#[test]
fn g17_a_numeric_credential_returned_as_a_number_is_scrubbed_needs_root() {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "bank", "--field", "account_number"],
        &format!("{ACCOUNT_NUMBER}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let workflow = home.dir.path().join("w_num.yaml");
    std::fs::write(
        &workflow,
        r#"name: leak_number
python: "3.11"
steps:
  - id: num
    explain: Returns the numeric credential as a number.
    connections: [bank]
    code: |
      import os
      def main():
          n = int(os.environ["CONN_BANK_ACCOUNT_NUMBER"])
          print(n * 1)
          return {"as_int": n, "as_float": float(n), "as_str": str(n), "list": [n, 1]}
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
    let shown = stdout(&ran);
    // 16 significant digits: what survives of the value as a float.
    let float_digits = &ACCOUNT_NUMBER[..16];
    assert!(!shown.contains(float_digits), "{shown}");
    assert!(!contains(&home.data_bytes(), float_digits), "stored");
    let summary: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let output = &summary["steps"][0]["output"];
    assert_eq!(output["as_int"], "[REDACTED]", "{output}");
    assert_eq!(output["list"][1], 1, "other numbers stay numbers: {output}");
}
