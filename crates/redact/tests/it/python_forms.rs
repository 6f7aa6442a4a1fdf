//! Review: the forms Python itself gives a value when step code prints a container, an
//! exception or bytes (G17). `print({"key": value})`, `KeyError(value)`, f"{value!r}" and
//! `print(value.encode())` all write `repr()`, which escapes differently from JSON: a backslash
//! is doubled but a double quote is not, non-printable characters become `\xNN`, and bytes
//! show every non-ASCII byte as `\xNN`. The expected texts below are what CPython 3.11 prints.

use crate::common::{TABLE_SECRETS, redactor_for};

/// `(value, what Python printed)` pairs, copied from `python3 -I -S`.
fn python_printed() -> Vec<(&'static str, &'static str)> {
    vec![
        // print(repr(v)), print({"k": v}): backslash doubled, double quote raw.
        (
            TABLE_SECRETS[1],
            r#"{'k': 'p@ss w/rd+&=?#%"\\ ünï 🦀 tail'}"#,
        ),
        // print(ascii(v)), and what `str.encode("unicode_escape")` holds for this value.
        (
            TABLE_SECRETS[1],
            r#"'p@ss w/rd+&=?#%"\\ \xfcn\xef \U0001f980 tail'"#,
        ),
        // print(v.encode()): every non-ASCII byte as \xNN.
        (
            TABLE_SECRETS[1],
            r#"b'p@ss w/rd+&=?#%"\\ \xc3\xbcn\xc3\xaf \xf0\x9f\xa6\x80 tail'"#,
        ),
        // Both quotes: the single quote is escaped, a control character is \xNN.
        (
            "it's \"quoted\" \\ back\u{1}tab\tend",
            r#"KeyError: 'it\'s "quoted" \\ back\x01tab\tend'"#,
        ),
    ]
}

#[test]
fn g17_python_repr_ascii_and_bytes_forms_are_scrubbed() {
    for (value, printed) in python_printed() {
        let redactor = redactor_for("run-review-python", &[value]);
        let scrubbed = redactor.scrub(printed);
        assert!(
            scrubbed.as_str().contains(redact::MASK),
            "nothing masked in {printed:?}: {:?}",
            scrubbed.as_str()
        );
        // The value's distinctive middle must not survive in any form.
        for fragment in ["w/rd+&=?#%", "quoted", "\\xc3\\xbc", "\\xfcn"] {
            if printed.contains(fragment) {
                assert!(
                    !scrubbed.as_str().contains(fragment),
                    "{fragment:?} survived in {:?}",
                    scrubbed.as_str()
                );
            }
        }
    }
}

/// A value cut short by whatever capped the text before the redactor saw it: its beginning, in
/// any form, is masked at the very end of the text; elsewhere nothing changes.
#[test]
fn g17_value_cut_at_the_end_of_capped_output_is_masked() {
    let value = TABLE_SECRETS[0];
    let redactor = redactor_for("run-review-cut", &[value]);
    let hex = hex::encode(value);
    for cut_form in [&value[..12], &hex[..20]] {
        let text = format!("log line\nthe key is {cut_form}");
        let scrubbed = redactor.scrub_cut_truncated(&text, 1024);
        assert_eq!(
            scrubbed.as_str(),
            format!("log line\nthe key is {}", redact::MASK)
        );
        // In the middle of the text the same characters are not a value, and stay.
        let middle = format!("{cut_form} is not the end\n");
        assert_eq!(redactor.scrub_cut_truncated(&middle, 1024).as_str(), middle);
    }
}
