//! G16, G17, G19 (issue "Credentials", its property test): a generated value of the account
//! (ASCII, non-ASCII, every special character) goes through every sink a run has — the run's
//! inputs, printed text split at random byte offsets, outputs, errors, decision notes, file
//! names, file contents in every common format, the workflow's name — with real sandboxes, and
//! then the whole data directory (database, WAL, workspace, revisions, file names), every API
//! answer and console page of the run, the CLI's output and the server's log are searched.
//!
//! The search has its own list of forms, written here and not taken from the redactor: a
//! mistake in the redactor's forms must not hide itself. Forms the product documents as out
//! of reach (`docs/credentials.md`: a step that encodes a value its own way) are searched too
//! and printed as known gaps; every other hit fails. The step writes a few of those on purpose,
//! so the gaps printed are real ones.

use std::io::Read;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use proptest::prelude::*;

use crate::http::{Server, send};
use crate::support::{Home, run_id, stderr, stdout};
use test_support::bytes::contains;

/// Letters, digits, every character the common formats escape, and non-ASCII ones; no `/`
/// (the value also names a file) and no line break (a connection value is one line).
const ALPHABET: &[char] = &[
    'a', 'b', 'c', 'x', 'y', 'z', 'K', 'Q', 'W', '0', '7', '9', '&', '<', '>', '"', '\'', '\\',
    '$', '`', ';', ',', ' ', '=', '+', '%', '#', '?', '*', '(', ')', '[', '{', '|', '~', '-', '_',
    '.', 'ä', 'é', 'ß', 'к', 'л', 'ю', 'ч', '中', '🦀',
];

/// Letters only: every fourth character of a value is one, so that no 16-byte window of it
/// survives rot13 unchanged (rot13 is a known gap, and must not be mistaken for a slice).
const LETTERS: &[char] = &['a', 'b', 'c', 'x', 'y', 'z', 'K', 'Q', 'W'];

fn value_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec((0..ALPHABET.len(), 0..LETTERS.len()), 20..36).prop_map(|picks| {
        picks
            .iter()
            .enumerate()
            .map(|(index, (any, letter))| {
                if index % 4 == 0 {
                    LETTERS[*letter]
                } else {
                    ALPHABET[*any]
                }
            })
            .collect::<String>()
    })
}

/// The workflow: a step writes the value everywhere a step can, a gate, then a step that
/// raises an error quoting it.
fn workflow(name: &str) -> String {
    format!(
        r#"name: {name}
python: "3.11"
inputs: {{ note: string, offsets: array }}
steps:
  - id: writer
    explain: Writes the connection's value into every sink a step has.
    connections: [prop]
    inputs: {{ note: {{ from: input.note }}, offsets: {{ from: input.offsets }} }}
    code: |
{WRITER}
  - id: failing!
    explain: Fails with an error that quotes the value.
    connections: [prop]
    code: |
      import os
      def main():
          raise RuntimeError("could not use " + os.environ["CONN_PROP_VALUE"])
"#
    )
}

const WRITER: &str = r#"      import base64, bz2, codecs, csv, gzip, html, io, json, lzma, os, shlex, sys, zipfile
      from xml.sax.saxutils import escape, quoteattr
      def z(name, data):
          b = io.BytesIO()
          with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as f:
              f.writestr(name, data)
          return b.getvalue()
      def main(note, offsets):
          s = os.environ["CONN_PROP_VALUE"]
          b = s.encode()
          # Printed raw, in chunks split at the given byte offsets.
          cuts = sorted(set(o % (len(b) + 1) for o in offsets)) + [len(b)]
          start = 0
          for cut in cuts:
              sys.stdout.buffer.write(b[start:cut]); sys.stdout.flush()
              start = cut
          print()
          sys.stderr.write("stderr: " + s + "\n")
          # Known gaps, written on purpose: a step's own encodings.
          print("reversed:", s[::-1])
          print("b64x2:", base64.b64encode(base64.b64encode(b)).decode())
          print("b32:", base64.b32encode(b).decode())
          w = "/work/prop"
          os.makedirs(w, exist_ok=True)
          def put(name, data):
              with open(os.path.join(w, name), "wb" if isinstance(data, bytes) else "w") as f:
                  f.write(data)
          put("html.html", "<p>" + html.escape(s) + "</p>")
          put("xml.xml", "<pw>" + escape(s) + "</pw>")
          put("attr.xml", "<pw v=" + quoteattr(s) + "/>")
          c = io.StringIO(); csv.writer(c).writerow(["x", s]); put("csv.csv", c.getvalue())
          put("shell.sh", "export PW=" + shlex.quote(s) + "\n")
          put("json2.json", json.dumps(json.dumps({"pw": s})))
          put("mime.txt", base64.encodebytes(b"config: x" * 5 + b).decode())
          put("utf16.txt", s.encode("utf-16"))
          put("value.gz", gzip.compress(b"token " + b))
          put("value.bz2", bz2.compress(b"token " + b))
          put("value.xz", lzma.compress(b"token " + b))
          put("value.zip", z("sheet.xml", b"<c>" + b + b"</c>"))
          put("nested.zip", z("inner.gz", gzip.compress(z("deep.xml", b))))
          put("name_" + s + ".txt", "clean")
          put("clean.txt", "nothing here")
          return {"v": s, s: 1, "nested": [{"k": s}], "note": note}
"#;

/// One encoding a search looks for.
struct Form {
    name: &'static str,
    bytes: Vec<u8>,
    /// Out of reach by design (documented): a hit is printed, not failed.
    known_gap: bool,
}

/// Every form the search looks for, made here without the redactor.
fn forms(value: &str) -> Vec<Form> {
    let bytes = value.as_bytes();
    let mut forms = Vec::new();
    let mut add = |name: &'static str, form: Vec<u8>, known_gap: bool| {
        if form.len() >= 8 {
            forms.push(Form {
                name,
                bytes: form,
                known_gap,
            });
        }
    };
    add("raw", bytes.to_vec(), false);
    add("base64", STANDARD.encode(bytes).into_bytes(), false);
    add(
        "base64 url",
        URL_SAFE_NO_PAD.encode(bytes).into_bytes(),
        false,
    );
    // The value inside a longer base64 stream, at each byte alignment: the characters that
    // depend on the value's bits alone.
    for alignment in 0..3 {
        let mut shifted = vec![b'\0'; alignment];
        shifted.extend_from_slice(bytes);
        let encoded = STANDARD_NO_PAD.encode(&shifted);
        let first = (8 * alignment).div_ceil(6);
        let end = 8 * (alignment + bytes.len()) / 6;
        add(
            "base64 inside",
            encoded.as_bytes()[first..end].to_vec(),
            false,
        );
    }
    add("hex", hex::encode(bytes).into_bytes(), false);
    add("HEX", hex::encode_upper(bytes).into_bytes(), false);
    let url: String = bytes
        .iter()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(byte) {
                char::from(*byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect();
    add("url", url.into_bytes(), false);
    let json = serde_json::to_string(value).unwrap();
    let json_body = json[1..json.len() - 1].to_owned();
    add("json", json_body.clone().into_bytes(), false);
    let json_twice = serde_json::to_string(&json_body).unwrap();
    add(
        "json in json",
        json_twice.as_bytes()[1..json_twice.len() - 1].to_vec(),
        false,
    );
    let ascii_json: String = value
        .encode_utf16()
        .map(|unit| {
            if (0x20..0x7f).contains(&unit) && unit != u16::from(b'"') && unit != u16::from(b'\\') {
                char::from(u8::try_from(unit).unwrap()).to_string()
            } else {
                format!("\\u{unit:04x}")
            }
        })
        .collect();
    add("json ascii", ascii_json.into_bytes(), false);
    let markup = |quote: &str, apostrophe: &str| {
        value
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', quote)
            .replace('\'', apostrophe)
    };
    add(
        "html.escape",
        markup("&quot;", "&#x27;").into_bytes(),
        false,
    );
    add("xml escape", markup("\"", "'").into_bytes(), false);
    add("quoteattr", markup("&quot;", "'").into_bytes(), false);
    add("csv", value.replace('"', "\"\"").into_bytes(), false);
    add("shell", value.replace('\'', "'\"'\"'").into_bytes(), false);
    let utf16 = |big_endian: bool| -> Vec<u8> {
        value
            .encode_utf16()
            .flat_map(|unit| {
                if big_endian {
                    unit.to_be_bytes()
                } else {
                    unit.to_le_bytes()
                }
            })
            .collect()
    };
    add("utf-16 le", utf16(false), false);
    add("utf-16 be", utf16(true), false);
    // Every 16-byte slice: what is left of a value cut in half.
    for start in 0..bytes.len().saturating_sub(16) {
        add("16-byte slice", bytes[start..start + 16].to_vec(), false);
    }
    // Known gaps: encodings a step chooses itself.
    add(
        "reversed",
        value.chars().rev().collect::<String>().into_bytes(),
        true,
    );
    let rot13: String = value
        .chars()
        .map(|character| match character {
            'a'..='m' | 'A'..='M' => char::from(u8::try_from(character).unwrap() + 13),
            'n'..='z' | 'N'..='Z' => char::from(u8::try_from(character).unwrap() - 13),
            other => other,
        })
        .collect();
    add("rot13", rot13.into_bytes(), true);
    add(
        "base64 twice",
        STANDARD.encode(STANDARD.encode(bytes)).into_bytes(),
        true,
    );
    add("base32", base32(bytes).into_bytes(), true);
    add("ascii85", ascii85(bytes).into_bytes(), true);
    let separated: Vec<String> = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    add("hex with :", separated.join(":").into_bytes(), true);
    add("hex with spaces", separated.join(" ").into_bytes(), true);
    forms
}

fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let mut buffer = 0_u64;
    let mut bits = 0;
    for byte in bytes {
        buffer = (buffer << 8) | u64::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

fn ascii85(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(4) {
        let mut word = [0_u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        let mut number = u32::from_be_bytes(word);
        if number == 0 && chunk.len() == 4 {
            out.push('z');
            continue;
        }
        let mut digits = [0_u8; 5];
        for digit in digits.iter_mut().rev() {
            *digit = (number % 85) as u8 + 33;
            number /= 85;
        }
        out.extend(
            digits[..chunk.len() + 1]
                .iter()
                .map(|digit| char::from(*digit)),
        );
    }
    out
}

/// The bytes of a compressed file or archive member, inflated (what a copy of the workspace
/// would give a reader), up to three layers deep.
fn inflated(bytes: &[u8], depth: usize) -> Vec<Vec<u8>> {
    if depth == 3 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut inflated_one = |data: Vec<u8>| {
        found.extend(inflated(&data, depth + 1));
        found.push(data);
    };
    let mut read = |mut reader: Box<dyn Read + '_>| {
        let mut data = Vec::new();
        if reader.read_to_end(&mut data).is_ok() {
            inflated_one(data);
        }
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        read(Box::new(flate2::read::MultiGzDecoder::new(bytes)));
    } else if bytes.starts_with(b"BZh") {
        read(Box::new(bzip2::read::MultiBzDecoder::new(bytes)));
    } else if bytes.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0]) {
        read(Box::new(lzma_rust2::XzReader::new(bytes, true)));
    } else if bytes.starts_with(b"PK\x03\x04")
        && let Ok(mut archive) = zip::ZipArchive::new(std::io::Cursor::new(bytes))
    {
        for index in 0..archive.len() {
            if let Ok(mut member) = archive.by_index(index) {
                let mut data = Vec::new();
                if member.read_to_end(&mut data).is_ok() {
                    found.extend(inflated(&data, depth + 1));
                    found.push(data);
                }
            }
        }
    }
    found
}

/// Every place searched, by name, and what it holds.
struct Haystacks(Vec<(String, Vec<u8>)>);

impl Haystacks {
    fn add(&mut self, place: impl Into<String>, bytes: Vec<u8>) {
        let place = place.into();
        // Base64 wrapped over lines is searched with its line breaks taken out.
        let unwrapped: Vec<u8> = bytes
            .iter()
            .copied()
            .filter(|byte| *byte != b'\n' && *byte != b'\r')
            .collect();
        for inner in inflated(&bytes, 0) {
            self.0.push((format!("{place} (inflated)"), inner));
        }
        self.0.push((format!("{place} (lines joined)"), unwrapped));
        self.0.push((place, bytes));
    }

    /// Every file of a folder, its path and contents.
    fn add_tree(&mut self, root: &std::path::Path) {
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                self.add(
                    format!("the name {}", path.display()),
                    path.as_os_str().as_encoded_bytes().to_vec(),
                );
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let contents = std::fs::read(&path).unwrap_or_default();
                    self.add(format!("the file {}", path.display()), contents);
                }
            }
        }
    }
}

fn search(value: &str, haystacks: &Haystacks) {
    let mut leaks = Vec::new();
    let mut gaps = Vec::new();
    for form in forms(value) {
        for (place, bytes) in &haystacks.0 {
            if contains_bytes(bytes, &form.bytes) {
                let hit = format!("{} in {place}", form.name);
                if form.known_gap {
                    gaps.push(hit);
                } else {
                    leaks.push(hit);
                }
            }
        }
    }
    gaps.sort();
    gaps.dedup();
    for gap in &gaps {
        eprintln!("known gap (a step's own encoding, out of reach by design): {gap}");
    }
    assert!(
        leaks.is_empty(),
        "the value {value:?} was found:\n{}",
        leaks.join("\n")
    );
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    needle.len() <= haystack.len()
        && haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

fn one_case(value: &str, offsets: &[u32]) {
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &["connections", "add", "prop", "--field", "value"],
        &format!("{value}\n"),
    );
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let mut haystacks = Haystacks(Vec::new());
    let file = home.dir.path().join("prop.yaml");
    std::fs::write(&file, workflow("prop")).unwrap();
    let file = file.to_str().unwrap();
    let note = format!("note: {value}");
    let offsets_input = format!("offsets={}", serde_json::json!(offsets));
    let started = home.stepward(&[
        "run",
        file,
        "--input",
        &format!("note={note}"),
        "--input",
        &offsets_input,
    ]);
    assert_eq!(
        started.status.code(),
        Some(0),
        "{}{}",
        stdout(&started),
        stderr(&started)
    );
    let run = run_id(&started);
    let mut cli = vec![started];
    cli.push(home.stepward(&["approve", &run, "failing!", "--note", &note]));
    cli.push(home.stepward(&["runs", "retry", &run, "failing", "--note", &note]));
    cli.push(home.stepward(&["runs", "stop", &run, "--note", &note]));
    // The workflow's name holds the value: refused before a run, and nothing of it kept.
    let named = home.dir.path().join("named.yaml");
    std::fs::write(&named, workflow(&serde_json::to_string(value).unwrap())).unwrap();
    cli.push(home.stepward(&[
        "run",
        named.to_str().unwrap(),
        "--input",
        "note=x",
        "--input",
        "offsets=[]",
    ]));
    for command in [
        vec!["runs", "list"],
        vec!["runs", "show", &run],
        vec!["runs", "events", &run],
        vec!["runs", "events", &run, "--json"],
        vec!["files", "list"],
        vec!["files", "history"],
    ] {
        cli.push(home.stepward(&command));
    }
    for (index, output) in cli.iter().enumerate() {
        haystacks.add(format!("CLI output {index}"), output.stdout.clone());
        haystacks.add(format!("CLI errors {index}"), output.stderr.clone());
    }

    // Every answer and page of the run, through the server.
    let mut server = Server::start_with_env(
        &home,
        &["--owner-email", "ada@example.test"],
        &[("RUST_LOG", "debug")],
    );
    let (address, session, csrf) = server.first_owner_session();
    let get = |route: &str| send(address, "GET", route, &[("Cookie", &session)], "");
    let shared = send(
        address,
        "POST",
        &format!("/api/runs/{run}/shares"),
        &[
            ("Cookie", &session),
            ("X-CSRF-Token", &csrf),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(shared.status, 201, "{}", shared.body);
    let share: serde_json::Value = serde_json::from_str(&shared.body).unwrap();
    for route in [
        "/api/runs".to_owned(),
        format!("/api/runs/{run}"),
        format!("/api/runs/{run}/events"),
        "/runs".to_owned(),
        format!("/runs/{run}"),
        "/api/audit".to_owned(),
        "/audit".to_owned(),
        "/files".to_owned(),
        "/api/workspace/files".to_owned(),
        "/api/workspace/revisions".to_owned(),
        share["path"].as_str().unwrap().to_owned(),
    ] {
        let answer = get(&route);
        assert!(
            answer.status < 400,
            "{route}: {} {}",
            answer.status,
            answer.body
        );
        haystacks.add(format!("GET {route}"), answer.body.into_bytes());
    }
    server.terminate();
    haystacks.add("the server's log", server.stderr().into_bytes());
    haystacks.add_tree(&home.data_dir());
    // The positive control: the step ran and its clean file came back, so the sinks were
    // really written through.
    assert!(
        home.data_dir()
            .join("accounts/local/workspace/prop/clean.txt")
            .exists(),
        "the step's clean file did not come back"
    );
    assert!(contains(&home.data_bytes(), "nothing here"));
    search(value, &haystacks);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn g16_a_value_of_the_account_reaches_no_record_through_any_sink_needs_root(
        value in value_strategy(),
        offsets in proptest::collection::vec(0_u32..200, 0..6),
    ) {
        one_case(&value, &offsets);
    }
}
