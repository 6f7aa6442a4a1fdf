//! G17: a table of secrets × encodings; neither the secret nor its encoded form survives.

use crate::common::{
    TABLE_SECRETS, all_encodings, assert_nothing_survives, print_with, redactor_for,
};

#[test]
fn g17_no_secret_survives_in_any_encoding() {
    let redactor = redactor_for("run-table", TABLE_SECRETS);
    let mut checked = 0;
    for secret in TABLE_SECRETS {
        for encoding in all_encodings() {
            let printed = print_with(secret, encoding);
            let scrubbed = redactor.scrub(&printed.text);
            let context = format!("secret {secret:?} as {encoding:?}");
            assert_nothing_survives(scrubbed.as_str(), &printed.forbidden, &context);
            assert!(
                scrubbed.as_str().contains(redact::MASK),
                "{context}: nothing was masked"
            );
            assert!(
                redactor.holds_secret(printed.text.as_bytes()),
                "{context}: holds_secret missed it"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, TABLE_SECRETS.len() * all_encodings().len());
}

#[test]
fn g17_each_secret_alone_is_masked_in_every_encoding() {
    // One redactor per secret, so a pattern of another secret cannot mask it by accident.
    for secret in TABLE_SECRETS {
        let redactor = redactor_for("run-single", &[secret]);
        for encoding in all_encodings() {
            let printed = print_with(secret, encoding);
            let scrubbed = redactor.scrub(&printed.text);
            assert_nothing_survives(
                scrubbed.as_str(),
                &printed.forbidden,
                &format!("{secret:?} as {encoding:?}"),
            );
        }
    }
}

#[test]
fn g17_ordinary_text_is_left_unchanged() {
    let redactor = redactor_for("run-ordinary", TABLE_SECRETS);
    let ordinary = [
        "Traceback (most recent call last):\n  File \"step.py\", line 12, in <module>\n    main()\nKeyError: 'orders'\n",
        "{\"id\": 17, \"name\": \"widget\", \"tags\": [\"a\", \"b\"], \"price\": 3.14}",
        "GET /api/v1/items?page=2&size=50 HTTP/1.1 200 OK in 12ms",
        "aGVsbG8gd29ybGQ= 68656c6c6f20776f726c64 hello%20world hello+world",
        "ünïcødé text with emoji 🦀 and tabs\tand\r\nwindows line ends",
        "",
    ];
    for text in ordinary {
        assert_eq!(redactor.scrub(text).as_str(), text);
        assert!(!redactor.holds_secret(text.as_bytes()));
    }
}

#[test]
fn g17_overlapping_secrets_are_both_masked_whole() {
    // The second secret starts inside the first: leftmost-longest matching would leave its tail.
    let redactor = redactor_for(
        "run-overlap",
        &["alpha-bravo-charlie", "charlie-delta-echo"],
    );
    let scrubbed = redactor.scrub("x alpha-bravo-charlie-delta-echo y");
    assert_eq!(scrubbed.as_str(), "x [REDACTED] y");
}

#[test]
fn g17_very_short_value_is_still_scrubbed_raw() {
    let redactor = redactor_for("run-short", &["q7"]);
    assert_eq!(redactor.scrub("pin q7 ok").as_str(), "pin [REDACTED] ok");
}

#[test]
fn g17_value_with_trailing_newline_is_masked_without_it() {
    let redactor = redactor_for("run-newline", &["token-from-a-file-1234\n"]);
    assert_eq!(
        redactor.scrub("t=token-from-a-file-1234;").as_str(),
        "t=[REDACTED];"
    );
}

#[test]
fn g17_multi_line_value_short_lines_are_left_alone() {
    let redactor = redactor_for("run-lines", &["{\nlong-enough-line-one\n}\nxyz"]);
    let scrubbed = redactor.scrub("{\n}\nxyz\nlong-enough-line-one\n");
    assert_eq!(scrubbed.as_str(), "{\n}\nxyz\n[REDACTED]\n");
}

#[test]
fn g17_empty_value_masks_nothing() {
    let redactor = redactor_for("run-empty", &[""]);
    assert_eq!(
        redactor.scrub("nothing to hide").as_str(),
        "nothing to hide"
    );
}

/// The console's templates (askama) write each of `& < > " '` as a decimal reference; a value
/// on a page in that form is masked like every other markup form (issue 14 review, finding 1).
#[test]
fn g17_a_value_in_decimal_character_references_is_masked() {
    let secret = "pw<Z9&q>\"7'x_DecimalRefs4Kd";
    let redactor = redactor_for("run-decimal", &[secret]);
    let decimal = "pw&#60;Z9&#38;q&#62;&#34;7&#39;x_DecimalRefs4Kd";
    let scrubbed = redactor.scrub(&format!("<td>Ops {decimal}</td>"));
    assert_eq!(scrubbed.as_str(), format!("<td>Ops {}</td>", redact::MASK));
}
