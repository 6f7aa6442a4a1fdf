//! G17 as a table: one secret × every encoding the redactor knows × every sink a step can
//! reach (output, error message, traceback, stdout, stderr, isolation notes, a copied-back
//! file, the parked state at a gate). For each cell a step emits the encoded value into the
//! sink; then neither the value nor that encoding may appear anywhere in the database files
//! or the workspace revision store.

use std::path::Path;

use base64::Engine as _;
use engine::{CodePhase, ExecutionOutcome, ExecutionReport, StepError};
use serde_json::json;
use storage::RunStatus;

use crate::support::{ACCOUNT, Harness, account, cli, contains, workflow};

/// Holds characters every encoding treats differently: a slash, a plus, a space, an equals
/// sign and a double quote.
const VALUE: &str = "pk/Live+Zq8v X2mN=4pL7\"tR1wY";

/// A step holding the connection, a gate, then a step after it.
const LEAK: &str = r#"name: leak
python: "3.11"
steps:
  - id: leak
    explain: Emits the credential in some form.
    connections: [vendor]
    code: |
      def main():
          return 1
  - id: hold!
    explain: Parks the run so its state is stored.
    inputs: { leaked: { from: leak } }
    code: |
      def main(leaked):
          return leaked
"#;

fn url_encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

fn encodings() -> Vec<(&'static str, String)> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let json_escaped = serde_json::to_string(VALUE).unwrap();
    vec![
        ("raw", VALUE.to_owned()),
        ("base64", STANDARD.encode(VALUE)),
        ("base64 unpadded", STANDARD_NO_PAD.encode(VALUE)),
        ("base64 url-safe", URL_SAFE.encode(VALUE)),
        ("base64 url-safe unpadded", URL_SAFE_NO_PAD.encode(VALUE)),
        ("base64 at offset 1", STANDARD.encode(format!("x{VALUE}"))),
        ("base64 at offset 2", STANDARD.encode(format!("xy{VALUE}"))),
        ("hex", hex::encode(VALUE)),
        ("HEX", hex::encode_upper(VALUE)),
        ("url-encoded", url_encode(VALUE)),
        (
            "json-escaped",
            json_escaped[1..json_escaped.len() - 1].to_owned(),
        ),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Sink {
    Output,
    ErrorMessage,
    Traceback,
    Stdout,
    Stderr,
    IsolationNotes,
    CopiedBackFile,
    ParkedState,
}

const SINKS: [Sink; 8] = [
    Sink::Output,
    Sink::ErrorMessage,
    Sink::Traceback,
    Sink::Stdout,
    Sink::Stderr,
    Sink::IsolationNotes,
    Sink::CopiedBackFile,
    Sink::ParkedState,
];

fn report_leaking(sink: Sink, text: String) -> ExecutionReport {
    let failure = |message: String, traceback: String| {
        ExecutionReport::outcome_only(
            ExecutionOutcome::Failed {
                error: StepError {
                    kind: "ValueError".into(),
                    message,
                    traceback,
                },
                phase: CodePhase::CodeStarted,
            },
            "fake",
        )
    };
    let mut report = crate::support::succeeded(json!({"ok": true}));
    match sink {
        Sink::Output | Sink::ParkedState => {
            report = crate::support::succeeded(json!({"leaked": format!("=> {text} <=")}))
        }
        Sink::ErrorMessage => report = failure(format!("bad value {text}"), String::new()),
        Sink::Traceback => {
            report = failure(
                "bad".into(),
                format!("Traceback:\n  File main.py\n    x = '{text}'\n"),
            )
        }
        Sink::Stdout => report.stdout = format!("value: {text}\n").into_bytes().into(),
        Sink::Stderr => report.stderr = format!("debug {text}\n").into_bytes().into(),
        Sink::IsolationNotes => report.isolation_notes = vec![format!("note {text}")],
        Sink::CopiedBackFile => {
            report.file_changes = vec![crate::support::file(
                "out/leak.txt",
                format!("key={text}").into_bytes(),
            )];
        }
    }
    report
}

fn all_bytes_under(folder: &Path, into: &mut Vec<u8>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_bytes_under(&path, into);
        } else {
            into.extend(std::fs::read(&path).unwrap());
        }
    }
}

#[test]
fn g17_every_encoding_in_every_sink_never_reaches_the_record() {
    let mut failures = Vec::new();
    for (encoding, encoded) in encodings() {
        for sink in SINKS {
            let harness = Harness::new();
            harness
                .source
                .set_connection_field(ACCOUNT, "vendor", "token", VALUE);
            let text = encoded.clone();
            harness
                .executor
                .then("leak", move |_| report_leaking(sink, text.clone()));
            let summary = harness
                .engine()
                .start_run(&account(), &workflow(LEAK), json!({}), cli("alice"))
                .unwrap();
            let expected = match sink {
                Sink::ErrorMessage | Sink::Traceback => RunStatus::NeedsAttention,
                _ => RunStatus::WaitingApproval,
            };
            assert_eq!(summary.status, expected, "{encoding} in {sink:?}");
            let mut bytes = Vec::new();
            all_bytes_under(harness.dir.path(), &mut bytes);
            // The positive control: the step did emit something, and it was masked or refused.
            let control: &[u8] = match sink {
                Sink::CopiedBackFile => b"copy_back.refused",
                _ => redact::MASK.as_bytes(),
            };
            assert!(
                contains(&bytes, control),
                "{encoding} in {sink:?}: nothing was emitted"
            );
            for (form, needle) in [("the value", VALUE), (encoding, encoded.as_str())] {
                if contains(&bytes, needle.as_bytes()) {
                    failures.push(format!(
                        "{form} ({encoding}) written to {sink:?} reached the record"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
