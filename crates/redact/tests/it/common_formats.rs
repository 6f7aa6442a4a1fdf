//! G17 (review "credentials" A7): common text formats a program writes a value in by accident.
//! Each encoding is made by the real CPython 3.11 (`/usr/bin/python3 -I -S`), not by this
//! crate's code, and embedded in ordinary surrounding text: HTML and XML escaping, CSV quoting,
//! shell quoting, JSON inside JSON, MIME and PEM line-wrapped base64, UTF-16.

use std::process::Command;

use crate::common::redactor_for;

/// A password with every character those formats escape.
const SPECIAL: &str = "Pa$$w0rd&\"quote'<tag>/back\\slash 2024";
/// A value long enough that its base64 always spans lines (a JWT, a PEM body).
const LONG: &str =
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzdGVwd2FyZC10ZXN0In0.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw";

/// What Python writes for `value` with `expression` (a Python expression over `v`, giving
/// bytes or text), as bytes.
fn python(expression: &str, value: &str) -> Vec<u8> {
    let program = format!(
        "import sys, html, csv, io, shlex, json, base64, textwrap\n\
         from xml.sax.saxutils import escape, quoteattr\n\
         v = sys.stdin.read()\n\
         out = {expression}\n\
         sys.stdout.buffer.write(out if isinstance(out, bytes) else out.encode())\n"
    );
    let mut child = Command::new("/usr/bin/python3")
        .args(["-I", "-S", "-c", &program])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(value.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python failed for {expression}");
    output.stdout
}

fn csv_row() -> &'static str {
    "(lambda b: (csv.writer(b).writerow(['x', v]), b.getvalue())[1])(io.StringIO())"
}

#[test]
fn g17_common_text_formats_of_a_value_are_scrubbed_and_refused() {
    let cases: Vec<(&str, &str)> = vec![
        ("html.escape", "'<p>' + html.escape(v) + '</p>'"),
        ("xml escape", "'<pw>' + escape(v) + '</pw>'"),
        ("xml quoteattr", "'<pw v=' + quoteattr(v) + '/>'"),
        ("csv", csv_row()),
        ("shell", "'export PW=' + shlex.quote(v) + '\\n'"),
        ("json in json", "json.dumps(json.dumps({'pw': v}))"),
        ("utf-16", "v.encode('utf-16')"),
        ("utf-16-le", "b'x' + v.encode('utf-16-le') + b'y'"),
        ("utf-16-be", "v.encode('utf-16-be')"),
    ];
    let redactor = redactor_for("run-formats", &[SPECIAL]);
    for (name, expression) in cases {
        let written = python(expression, SPECIAL);
        assert!(
            redactor.holds_secret(&written),
            "{name}: not recognised in {:?}",
            String::from_utf8_lossy(&written)
        );
        let scrubbed = redactor.scrub_bytes(&written).into_inner();
        assert!(
            scrubbed.windows(5).any(|window| window == b"[REDA"),
            "{name}: nothing masked"
        );
    }
}

#[test]
fn g17_line_wrapped_base64_of_a_value_is_scrubbed() {
    let cases = [
        // base64.encodebytes (MIME, e-mail attachments): 76 columns.
        (
            "mime 76",
            "base64.encodebytes(b'config: x' * 5 + v.encode())",
        ),
        // PEM and `openssl base64`: 64 columns.
        (
            "pem 64",
            "'\\n'.join(textwrap.wrap(base64.b64encode(b'header: ' * 3 + v.encode()).decode(), 64)) + '\\n'",
        ),
        // The value alone, wrapped at 76 with CRLF.
        (
            "crlf 76",
            "base64.encodebytes(v.encode() * 2).replace(b'\\n', b'\\r\\n')",
        ),
    ];
    let redactor = redactor_for("run-mime", &[LONG]);
    for (name, expression) in cases {
        let written = python(expression, LONG);
        let text = String::from_utf8(written.clone()).unwrap();
        assert!(text.contains('\n'), "{name}: the base64 is not wrapped");
        assert!(
            redactor.holds_secret(&written),
            "{name}: not recognised in {text}"
        );
        let scrubbed = redactor.scrub(&text).into_inner();
        assert!(scrubbed.contains(redact::MASK), "{name}: {scrubbed}");
    }
    // Ordinary wrapped base64 that holds no value is left as it is.
    let clean = python(
        "base64.encodebytes(b'nothing to see here, ' * 20).decode()",
        "",
    );
    let clean = String::from_utf8(clean).unwrap();
    assert_eq!(redactor.scrub(&clean).as_str(), clean);
}

/// G17 (review N9): Go's `json.Marshal` escapes `&`, `<`, `>` (and U+2028, U+2029) as
/// `\u0026`, `\u003c`, `\u003e` by default (HTML-safe JSON). The expected texts are what Go 1.22
/// writes for each value, as a string and as a JSON document inside a string.
#[test]
fn g17_go_json_marshal_forms_are_scrubbed() {
    let table: [(&str, &str); 5] = [
        (
            SPECIAL,
            r#"{"pw":"Pa$$w0rd\u0026\"quote'\u003ctag\u003e/back\\slash 2024"}"#,
        ),
        (
            "tok&amp<x>y-9Zq81Lw",
            r#"["tok\u0026amp\u003cx\u003ey-9Zq81Lw"]"#,
        ),
        ("line\u{2028}sep-Wq83Lm", r#""line\u2028sep-Wq83Lm""#),
        (
            "tok&amp<x>y-9Zq81Lw",
            r#""{\"pw\":\"tok\\u0026amp\\u003cx\\u003ey-9Zq81Lw\"}""#,
        ),
        (
            "a<b>c&d-Zq81Lw3",
            r#"log: {"v":"a\u003cb\u003ec\u0026d-Zq81Lw3"} done"#,
        ),
    ];
    for (value, written) in table {
        let redactor = redactor_for("run-go-json", &[value]);
        assert!(
            redactor.holds_secret(written.as_bytes()),
            "Go's form of {value:?} is not recognised in {written}"
        );
        let scrubbed = redactor.scrub(written).into_inner();
        assert!(scrubbed.contains("[REDACTED]"), "{written}: {scrubbed}");
    }
}
