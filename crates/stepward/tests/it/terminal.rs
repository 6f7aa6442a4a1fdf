//! Text a step or a model chose never drives the terminal (sandbox review 3, finding 4, and its
//! class): every command that shows a run, a repair, an interview or the files prints through
//! one writer, which shows control characters (ESC, BEL, C1) and bidirectional controls as `?`;
//! with `--json` those that JSON leaves raw (C1, DEL, bidi) are written `\uXXXX`.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::json;

use crate::support::{Home, run_id, stderr, stdout};

/// An OSC that sets the window title, a cursor move and an erase, a C1 CSI, and a right-to-left
/// override: what a step or a model can try on a terminal.
const HOSTILE: &str =
    "boom \u{1b}]0;TITLE-FROM-STEP\u{7} \u{1b}[1A\u{1b}[2Kfake line \u{9b}31m red \u{202e}desrever";

/// Every character of `HOSTILE` that must never reach a terminal raw.
const DRIVERS: [char; 4] = ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'];

fn assert_clean(output: &std::process::Output, what: &str) {
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        for driver in DRIVERS {
            assert!(
                !text.contains(driver),
                "`{what}` wrote {driver:?} raw on {stream}: {text:?}"
            );
        }
    }
}

/// A workflow whose first step prints the hostile text on both streams and returns it, and
/// whose second raises it as its exception's message.
fn hostile_workflow(home: &Home) -> String {
    let path = home.dir.path().join("hostile.yaml");
    // A Python literal: a definition itself holds no control character (spec refuses one).
    let escaped = python_literal(HOSTILE);
    std::fs::write(
        &path,
        format!(
            r#"name: hostile
python: "3.11"
steps:
  - id: shout
    explain: Prints and returns terminal control sequences.
    code: |
      import sys
      TEXT = {escaped}
      def main():
          print(TEXT)
          print(TEXT, file=sys.stderr)
          return {{"said": TEXT}}
  - id: fail
    explain: Fails with terminal control sequences in its message.
    inputs: {{ said: {{ from: shout }} }}
    code: |
      def main(said):
          raise ValueError(said["said"])
"#
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// `text` as a Python string literal of printable ASCII, everything else `\uXXXX`.
fn python_literal(text: &str) -> String {
    let mut literal = String::from("\"");
    for character in text.chars() {
        match character {
            '"' | '\\' => literal.push_str(&format!("\\{character}")),
            ' '..='~' => literal.push(character),
            other => literal.push_str(&format!("\\u{:04x}", u32::from(other))),
        }
    }
    literal.push('"');
    literal
}

#[test]
fn a_steps_output_message_and_printed_text_never_drive_the_terminal_needs_root() {
    let home = Home::new();
    let workflow = hostile_workflow(&home);
    let ran = home.stepward(&["run", &workflow]);
    assert_clean(&ran, "run");
    let shown = stdout(&ran);
    assert!(shown.contains("needs_attention"), "{shown}{}", stderr(&ran));
    assert!(
        shown.contains("ValueError: boom ?]0;TITLE-FROM-STEP?"),
        "the message is shown, its controls as `?`: {shown}"
    );
    let run = run_id(&ran);
    for args in [
        vec!["runs", "show", &run],
        vec!["runs", "events", &run],
        vec!["runs", "list"],
        vec!["files", "list"],
        vec!["files", "history"],
    ] {
        let output = home.stepward(&args);
        assert_clean(&output, &args.join(" "));
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    }
    for args in [
        vec!["run", &workflow, "--json"],
        vec!["runs", "show", &run, "--json"],
        vec!["runs", "events", &run, "--json"],
        vec!["runs", "list", "--json"],
    ] {
        let output = home.stepward(&args);
        assert_clean(&output, &args.join(" "));
        let text = stdout(&output);
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{args:?}: not JSON ({error}): {text}"));
        if args[0] != "runs" || args[1] != "list" {
            assert!(
                text.contains("\\u202e") && text.contains("\\u009b"),
                "{args:?}: the bidi and C1 controls are escaped: {text}"
            );
            assert!(
                value.to_string().contains('\u{202e}'),
                "{args:?}: and still read back as they were"
            );
        }
    }
}

const NEEDS_REPAIR: &str = r#"name: quote
python: "3.11"
steps:
  - id: quote
    explain: Quotes a word for a URL.
    code: |
      import requests
      def main():
          return requests.utils.quote("a b")
"#;

#[test]
fn what_a_model_says_in_a_repair_or_an_interview_never_drives_the_terminal_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![
        // The repair: a proposal whose code carries the controls raw (refused, and the refusal
        // shown), then one whose note carries them.
        ScriptTurn::call(
            "propose",
            json!({
                "code": format!("import urllib.parse\n# {HOSTILE}\ndef main():\n    return urllib.parse.quote('a b')\n"),
                "note": HOSTILE,
            }),
        ),
        ScriptTurn::call(
            "propose",
            json!({
                "code": format!("import urllib.parse\nTEXT = {}\ndef main():\n    return urllib.parse.quote('a b')\n", python_literal(HOSTILE)),
                "note": HOSTILE,
            }),
        ),
        // The interview: a question, then a refused proposal, then an error.
        ScriptTurn::text(HOSTILE),
        ScriptTurn::call(
            "propose",
            json!({"workflow": format!("name: x\n# {HOSTILE}\n"), "note": HOSTILE}),
        ),
        ScriptTurn::error(500, HOSTILE),
    ]))
    .unwrap();
    let exempt = fake.endpoint();
    let home = Home::new();
    crate::support::add_fake_assistant(&home, &fake, "sk-terminal-test-model-key-3141");
    let file = home.put("workflows/quote.yaml", NEEDS_REPAIR);
    let ran = home.stepward(&[
        "run",
        file.to_str().unwrap(),
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(stdout(&ran).contains("needs_repair"), "{}", stdout(&ran));
    let run = run_id(&ran);
    let proposed = home.stepward(&["repair", &run, "quote", "--allow-model-endpoint", &exempt]);
    assert_clean(&proposed, "repair");
    assert!(
        stdout(&proposed).contains("?]0;TITLE-FROM-STEP?"),
        "the proposal is shown, its controls as `?`: {}{}",
        stdout(&proposed),
        stderr(&proposed)
    );
    let talked = home.stepward_with_stdin(
        &["interview", "--allow-model-endpoint", &exempt],
        "Quote words.\nplease propose\nagain\n",
    );
    assert_clean(&talked, "interview");
    assert!(
        stdout(&talked).contains("assistant: boom ?]0;TITLE-FROM-STEP?"),
        "{}{}",
        stdout(&talked),
        stderr(&talked)
    );
    for args in [
        vec!["runs", "show", &run],
        vec!["runs", "events", &run],
        vec!["files", "history"],
    ] {
        assert_clean(&home.stepward(&args), &args.join(" "));
    }
}
