//! G17 wherever a form sits on its line (newcomer 3, workload 1: MIME base64 printed after
//! other text on the same line, `print("mime", base64.encodebytes(v * 2))`, kept its first
//! line, the first 57 bytes of the value, while the same text without the prefix was
//! scrubbed). Every form the redactor knows, after arbitrary prefixes and before arbitrary
//! suffixes on the same line; base64 wrapped over lines with text before its first line and
//! after its last; a JSON string with any or all of its characters `\u`-escaped.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::common::{
    TABLE_SECRETS, all_encodings, assert_nothing_survives, print_with, redactor_for,
};

const PREFIXES: &[&str] = &["", "mime ", "x=", "\t", "prefix:", "🦀 ", "(", "'"];
const SUFFIXES: &[&str] = &["", " end", ",", "\"", ")", "\t9", "🦀"];

#[test]
fn g17_every_form_is_masked_whatever_stands_before_and_after_it_on_its_line() {
    for secret in TABLE_SECRETS {
        let redactor = redactor_for("run-framed", &[secret]);
        for encoding in all_encodings() {
            let printed = print_with(secret, encoding);
            for prefix in PREFIXES {
                for suffix in SUFFIXES {
                    let text = format!("{prefix}{}{suffix}", printed.text);
                    let scrubbed = redactor.scrub(&text);
                    assert_nothing_survives(
                        scrubbed.as_str(),
                        &printed.forbidden,
                        &format!("{secret:?} as {encoding:?} after {prefix:?}, before {suffix:?}"),
                    );
                }
            }
        }
    }
}

/// Base64 wrapped at `width` columns, each line ended by a newline, as Python's
/// `base64.encodebytes` (76) and `openssl base64` (64) write it.
fn wrapped(bytes: &[u8], width: usize) -> String {
    let encoded = STANDARD.encode(bytes);
    encoded
        .as_bytes()
        .chunks(width)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect()
}

/// The newcomer's reproduction: an 83-character connection value, printed twice over as MIME
/// base64 after a word on the same line. No line of it survives whole, and what is left holds
/// no run of the value's bytes.
#[test]
fn g17_wrapped_base64_after_text_on_its_first_line_is_masked_whole() {
    let value =
        "grant-7Qm2Vx9Lp4Tn6Rw8-Fixture-connection-value-of-eighty-three-characters-01234567";
    assert_eq!(value.len(), 83);
    let redactor = redactor_for("run-mime", &[value]);
    for width in [64, 76] {
        let body = wrapped(value.repeat(2).as_bytes(), width);
        for prefix in ["mime ", "x=", "payload: ", ""] {
            for suffix in ["", "done", " (2 copies)"] {
                let printed = format!("{prefix}{body}{suffix}");
                let scrubbed = redactor.scrub(&printed);
                let scrubbed = scrubbed.as_str();
                for line in body.lines().filter(|line| line.len() >= 16) {
                    assert!(
                        !scrubbed.contains(line),
                        "width {width}, {prefix:?}…{suffix:?}: the line {line:?} survived in \
                         {scrubbed:?}"
                    );
                }
                // Every base64 run left decodes to nothing of the value.
                for run in
                    scrubbed.split(|c: char| !c.is_ascii_alphanumeric() && !"+/=".contains(c))
                {
                    for start in 0..4.min(run.len()) {
                        let piece = &run[start..];
                        let usable = piece.len() / 4 * 4;
                        if let Ok(decoded) = STANDARD.decode(&piece[..usable]) {
                            let decoded = String::from_utf8_lossy(&decoded);
                            for window in value.as_bytes().windows(12) {
                                let window = String::from_utf8_lossy(window);
                                assert!(
                                    !decoded.contains(window.as_ref()),
                                    "width {width}, {prefix:?}: {window:?} decodes from {run:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Which characters of a value to escape, by index.
type Picker = Box<dyn Fn(usize) -> bool>;

/// `\u`-escapes of `text`: the characters whose index `escape` picks, as JSON writes them
/// (UTF-16 code units, surrogate pairs for characters beyond the basic plane).
fn u_escaped(text: &str, escape: impl Fn(usize) -> bool) -> String {
    let mut out = String::new();
    for (index, character) in text.chars().enumerate() {
        if escape(index) {
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            match character {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                other => out.push(other),
            }
        }
    }
    out
}

/// agents review, finding 9: a value written fully `\uXXXX`-escaped reached the model and the
/// record. A JSON string with any or all of its characters escaped is masked, however it is
/// framed.
#[test]
fn g17_a_json_string_with_any_or_all_characters_u_escaped_is_masked() {
    for secret in TABLE_SECRETS
        .iter()
        .filter(|secret| secret.chars().count() >= 4)
    {
        let redactor = redactor_for("run-escaped", &[secret]);
        let pickers: Vec<(&str, Picker)> = vec![
            ("all", Box::new(|_| true)),
            ("every other", Box::new(|index| index % 2 == 0)),
            ("the first half", Box::new(|index| index < 4)),
            ("one", Box::new(|index| index == 1)),
        ];
        for (name, picker) in &pickers {
            let escaped = u_escaped(secret, picker);
            for (prefix, suffix) in [("{\"token\": \"", "\"}"), ("x=\"", "\" end"), ("", "")] {
                let text = format!("{prefix}{escaped}{suffix}");
                let scrubbed = redactor.scrub(&text);
                assert!(
                    scrubbed.as_str().contains(redact::MASK),
                    "{secret:?} with {name} escaped, in {text:?}: nothing masked"
                );
                assert_nothing_survives(
                    scrubbed.as_str(),
                    std::slice::from_ref(&escaped),
                    &format!("{secret:?} with {name} escaped"),
                );
                assert!(
                    redactor.holds_secret(text.as_bytes()),
                    "{secret:?} {name}: holds_secret"
                );
            }
        }
    }
}

/// A stream holds an escaped value back until it has seen all of it: cut anywhere, a stream
/// scrubs `\u`-escaped text exactly like the whole text at once.
#[test]
fn g17_a_u_escaped_value_split_across_stream_chunks_is_masked() {
    let secrets: Vec<&str> = TABLE_SECRETS
        .iter()
        .copied()
        .filter(|secret| secret.chars().count() >= 4 && secret.len() < 200)
        .collect();
    let redactor = redactor_for("run-escaped-stream", &secrets);
    for secret in &secrets {
        for escaped in [
            u_escaped(secret, |_| true),
            u_escaped(secret, |index| index % 3 == 1),
        ] {
            let text = format!("log: {{\"token\": \"{escaped}\"}}\nnext line\n");
            let whole = redactor.scrub(&text);
            for cut in (0..=text.len()).filter(|cut| text.is_char_boundary(*cut)) {
                let mut stream = redactor.stream();
                let mut output = stream.push(&text[..cut]).into_inner();
                output.push_str(stream.push(&text[cut..]).as_str());
                output.push_str(stream.finish().as_str());
                assert_eq!(output, whole.as_str(), "{secret:?} cut at {cut}");
                assert_nothing_survives(
                    &output,
                    std::slice::from_ref(&escaped),
                    &format!("{secret:?}"),
                );
            }
        }
    }
}
