//! G17: JSON keys, strings and numbers are scrubbed recursively; truncation happens after
//! scrubbing, on a character boundary.

use base64::Engine;
use serde_json::json;

use crate::common::redactor_for;

const SECRET: &str = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";

#[test]
fn g17_json_keys_and_strings_are_scrubbed_recursively() {
    let redactor = redactor_for("run-json", &[SECRET, "12345678901"]);
    let value = json!({
        "plain": "ok",
        SECRET: {"nested": [format!("Bearer {SECRET}"), 17, true, null]},
        "account": 12345678901_u64,
        "base64": base64::engine::general_purpose::STANDARD.encode(SECRET),
    });
    let scrubbed = redactor.scrub_json(&value);
    assert_eq!(
        scrubbed.get(),
        &json!({
            "plain": "ok",
            "[REDACTED]": {"nested": ["Bearer [REDACTED]", 17, true, null]},
            "account": "[REDACTED]",
            "base64": "[REDACTED]",
        })
    );
    assert_eq!(
        scrubbed.scope(),
        &redact::Scope::run(&ids::RunId::parse("run-json").unwrap())
    );
    assert!(
        !serde_json::to_string(scrubbed.get())
            .unwrap()
            .contains(SECRET)
    );
}

#[test]
fn g17_json_value_written_with_escapes_is_scrubbed() {
    let redactor = redactor_for("run-json-escapes", &["pass/word\"quoted"]);
    // The document spells the value with `\/`, `\"` and a `\u` escape for the `w`.
    let document = r#"{"password": "pass\/\u0077ord\"quoted"}"#;
    let value: serde_json::Value = serde_json::from_str(document).unwrap();
    let scrubbed = redactor.scrub_json(&value);
    assert_eq!(scrubbed.get(), &json!({"password": "[REDACTED]"}));
    // The raw document text, scrubbed as text, loses the escaped spelling too.
    assert!(redactor.holds_secret(br#"{"password": "pass\/word\"quoted"}"#));
}

#[test]
fn g17_keys_that_scrub_alike_are_kept_apart() {
    let redactor = redactor_for("run-json-keys", &["first-secret-key", "second-secret-key"]);
    let scrubbed = redactor.scrub_json(&json!({"first-secret-key": 1, "second-secret-key": 2}));
    assert_eq!(scrubbed.get().as_object().unwrap().len(), 2);
}

#[test]
fn g17_scrub_happens_before_truncation() {
    let redactor = redactor_for("run-truncate", &[SECRET]);
    let text = format!("token={SECRET} and more");
    // A cut in the middle of the value: truncating first would keep its first half.
    let cut = "token=".len() + SECRET.len() / 2;
    let scrubbed = redactor.scrub_truncated(&text, cut);
    assert!(
        !scrubbed.as_str().contains(&SECRET[..8]),
        "{}",
        scrubbed.as_str()
    );
    assert!(scrubbed.as_str().len() <= cut);
    assert!(scrubbed.as_str().starts_with("token=[REDACTED]"));
}

#[test]
fn g17_truncation_cuts_on_a_char_boundary() {
    let redactor = redactor_for("run-truncate-utf8", &[SECRET]);
    let text = "ünïcødé 🦀🦀🦀";
    let mark = redact::CUT_MARK;
    for max_bytes in 0..=text.len() + 2 {
        let truncated = redactor.scrub_truncated(text, max_bytes).into_inner();
        if max_bytes >= text.len() {
            assert_eq!(truncated, text);
            continue;
        }
        // A cut text ends with the mark, within the bound once the mark fits in it.
        let kept = truncated
            .strip_suffix(mark)
            .unwrap_or_else(|| panic!("no cut mark at {max_bytes}: {truncated}"));
        assert!(text.starts_with(kept));
        if max_bytes >= mark.len() {
            assert!(truncated.len() <= max_bytes, "{max_bytes}: {truncated}");
            assert!(
                kept.len() + mark.len() + 4 > max_bytes,
                "{max_bytes}: {truncated}"
            );
        } else {
            assert_eq!(kept, "");
        }
    }
}

#[test]
fn g17_a_cut_inside_a_mask_drops_the_whole_mask() {
    let redactor = redactor_for("run-truncate-mask", &[SECRET]);
    let text = format!("ab{SECRET}cd");
    let mark = redact::CUT_MARK;
    let expected_full = "ab[REDACTED]cd";
    for max_bytes in 0..=(expected_full.len() + 2) {
        let truncated = redactor.scrub_truncated(&text, max_bytes);
        let expected = if max_bytes >= expected_full.len() {
            expected_full.to_owned()
        } else {
            // Room for the text before the mark: never part of `[REDACTED]`.
            let room = max_bytes.saturating_sub(mark.len());
            let kept = if room >= 12 {
                &expected_full[..room]
            } else {
                &expected_full[..room.min(2)]
            };
            format!("{kept}{mark}")
        };
        assert_eq!(truncated.as_str(), expected, "max_bytes {max_bytes}");
    }
}

#[test]
fn g17_bytes_that_are_not_utf8_are_scrubbed_too() {
    let redactor = redactor_for("run-bytes", &[SECRET]);
    let mut bytes = vec![0xFF, 0x00, 0xC3];
    bytes.extend_from_slice(SECRET.as_bytes());
    bytes.push(0xFE);
    let scrubbed = redactor.scrub_bytes(&bytes);
    assert_eq!(
        scrubbed.get(),
        &[&[0xFF, 0x00, 0xC3][..], b"[REDACTED]", &[0xFE]].concat()
    );
    assert_eq!(
        scrubbed.scope(),
        &redact::Scope::run(&ids::RunId::parse("run-bytes").unwrap())
    );
}

#[test]
fn g17_printed_bytes_cut_inside_a_character_leave_nothing_of_a_value() {
    let value = "correct-horse-battery-staple-ключ-77";
    let redactor = redactor_for("run-printed", &[value]);
    for cut in 4..value.len() {
        let mut bytes = b"before ".to_vec();
        bytes.extend_from_slice(&value.as_bytes()[..cut]);
        let printed = redactor.scrub_printed(&bytes, 1024).into_inner();
        let shown_of_value = printed.strip_prefix("before ").unwrap_or(&printed);
        assert!(
            !shown_of_value.contains(&value[..4]),
            "cut at {cut}: {printed}"
        );
    }
    // A whole value in bytes that are not all UTF-8 is found too.
    let mut bytes = vec![0xFF];
    bytes.extend_from_slice(value.as_bytes());
    bytes.extend_from_slice(b" after");
    assert_eq!(
        redactor.scrub_printed(&bytes, 1024).as_str(),
        "\u{FFFD}[REDACTED] after"
    );
}

#[test]
fn g17_numbers_are_scrubbed_by_the_digits_as_written() {
    let redactor = redactor_for("run-numbers", &["98765432109876543210987"]);
    let scrubbed = redactor
        .scrub_json_text(
            r#"{"a": 98765432109876543210987, "b": [-98765432109876543210987, 1.5e3, 7],
               "c": "98765432109876543210987 in a string", "d": "12\"34"}"#,
        )
        .unwrap()
        .into_inner();
    assert_eq!(
        scrubbed,
        serde_json::json!({
            "a": "[REDACTED]",
            "b": ["[REDACTED]", 1500.0, 7],
            "c": "[REDACTED] in a string",
            "d": "12\"34"
        })
    );
    assert!(redactor.scrub_json_text("{not json").is_err());
}
