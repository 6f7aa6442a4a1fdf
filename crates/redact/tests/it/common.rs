//! Shared helpers: redactors built from the test-only in-memory source, and test-side encoders
//! written independently of the crate's own pattern code.

use base64::Engine;
use redact::testing::MemorySource;
use std::sync::Arc;

use redact::{Redactor, RunSecrets, ScrubSets, SecretRequest};

pub const ACCOUNT: &str = "account-1";

/// A run with one agent secret per value, and its redactor.
pub fn redactor_for(run_id: &str, values: &[&str]) -> Redactor {
    run_secrets_for(run_id, values).redactor()
}

pub fn run_secrets_for(run_id: &str, values: &[&str]) -> RunSecrets {
    let source = MemorySource::new();
    for (index, value) in values.iter().enumerate() {
        source.set_secret(ACCOUNT, &format!("secret-{index}"), value);
    }
    let sets = ScrubSets::new(Arc::new(source));
    RunSecrets::collect(
        &ids::RunId::parse(run_id).unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets,
        &request_for(values.len()),
    )
    .unwrap()
}

pub fn request_for(count: usize) -> SecretRequest {
    SecretRequest {
        secrets: (0..count).map(|index| format!("secret-{index}")).collect(),
        ..SecretRequest::default()
    }
}

/// The secrets of the table: long, short, punctuation, non-ASCII, multi-line, digits only.
pub const TABLE_SECRETS: &[&str] = &[
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "p@ss w/rd+&=?#%\"\\ ünï 🦀 tail",
    "hunter2!",
    "abcd",
    "9035768123",
    "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ\n-----END KEY-----",
];

/// How a program might have written a value.
#[derive(Clone, Copy, Debug)]
pub enum Encoding {
    Raw,
    Base64 {
        url_safe: UrlSafe,
        padded: Padded,
        alignment: usize,
    },
    HexLower,
    HexUpper,
    UrlEncoded {
        lower_hex: LowerHex,
        plus_for_space: PlusForSpace,
    },
    JsonEscaped,
    JsonEscapedAsciiOnly,
    /// A JSON document written by Python's `json.dumps` (`ensure_ascii`), itself a string in
    /// another JSON document.
    JsonInJsonAsciiOnly,
    EachLinePrinted,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UrlSafe {
    Yes,
    No,
}
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Padded {
    Yes,
    No,
}
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LowerHex {
    Yes,
    No,
}
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlusForSpace {
    Yes,
    No,
}

pub fn all_encodings() -> Vec<Encoding> {
    let mut encodings = vec![Encoding::Raw];
    for url_safe in [UrlSafe::Yes, UrlSafe::No] {
        for padded in [Padded::Yes, Padded::No] {
            for alignment in 0..3 {
                encodings.push(Encoding::Base64 {
                    url_safe,
                    padded,
                    alignment,
                });
            }
        }
    }
    encodings.extend([Encoding::HexLower, Encoding::HexUpper]);
    for lower_hex in [LowerHex::Yes, LowerHex::No] {
        for plus_for_space in [PlusForSpace::Yes, PlusForSpace::No] {
            encodings.push(Encoding::UrlEncoded {
                lower_hex,
                plus_for_space,
            });
        }
    }
    encodings.extend([
        Encoding::JsonEscaped,
        Encoding::JsonEscapedAsciiOnly,
        Encoding::JsonInJsonAsciiOnly,
        Encoding::EachLinePrinted,
    ]);
    encodings
}

/// What the program printed, and the parts of it that must not survive scrubbing.
pub struct Printed {
    pub text: String,
    pub forbidden: Vec<String>,
}

/// Writes `secret` as a program would, inside ordinary text.
pub fn print_with(secret: &str, encoding: Encoding) -> Printed {
    match encoding {
        Encoding::Raw => wrapped(secret.to_owned()),
        Encoding::Base64 {
            url_safe,
            padded,
            alignment,
        } => base64_embedded(secret, url_safe, padded, alignment),
        Encoding::HexLower => wrapped(hex::encode(secret)),
        Encoding::HexUpper => wrapped(hex::encode_upper(secret)),
        Encoding::UrlEncoded {
            lower_hex,
            plus_for_space,
        } => wrapped(url_encode(secret, lower_hex, plus_for_space)),
        Encoding::JsonEscaped => {
            let serialized = serde_json::to_string(secret).unwrap();
            Printed {
                forbidden: vec![
                    serialized[1..serialized.len() - 1].to_owned(),
                    secret.to_owned(),
                ],
                text: format!("{{\"token\": {serialized}}}"),
            }
        }
        Encoding::JsonEscapedAsciiOnly => wrapped(json_ascii_only(secret)),
        Encoding::JsonInJsonAsciiOnly => {
            let inner = format!("{{\"token\": \"{}\"}}", json_ascii_only(secret));
            let outer = serde_json::to_string(&inner).unwrap();
            let escaped_twice = serde_json::to_string(&json_ascii_only(secret)).unwrap();
            Printed {
                forbidden: vec![escaped_twice[1..escaped_twice.len() - 1].to_owned()],
                text: format!("{{\"body\": {outer}}}"),
            }
        }
        Encoding::EachLinePrinted => {
            let lines: Vec<&str> = secret.lines().collect();
            let text = lines
                .iter()
                .map(|line| format!("> {line}\n"))
                .collect::<String>();
            let forbidden = lines
                .iter()
                .filter(|line| line.len() >= redact::MIN_LINE_BYTES || lines.len() == 1)
                .map(|line| line.to_string())
                .collect();
            Printed { text, forbidden }
        }
    }
}

fn wrapped(encoded: String) -> Printed {
    Printed {
        text: format!("step said: {encoded} (done)\n"),
        forbidden: vec![encoded],
    }
}

/// The value embedded at byte offset `alignment` of a longer base64 stream; the characters
/// made only of the value's bits must not survive.
fn base64_embedded(secret: &str, url_safe: UrlSafe, padded: Padded, alignment: usize) -> Printed {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let engine = match (url_safe, padded) {
        (UrlSafe::Yes, Padded::Yes) => &URL_SAFE,
        (UrlSafe::Yes, Padded::No) => &URL_SAFE_NO_PAD,
        (UrlSafe::No, Padded::Yes) => &STANDARD,
        (UrlSafe::No, Padded::No) => &STANDARD_NO_PAD,
    };
    let before: Vec<u8> = [b"{\"k\":\"".as_slice(), &[0xFB; 3][..alignment]].concat();
    let mut stream = [b"abc".as_slice(), &before].concat();
    let value_start = stream.len();
    stream.extend_from_slice(secret.as_bytes());
    let value_end = stream.len();
    stream.extend_from_slice(b"\xFF\"}");
    let encoded = engine.encode(&stream);
    // Characters whose six bits all lie inside the value.
    let first = (value_start * 8).div_ceil(6);
    let end = value_end * 8 / 6;
    let stable = encoded[first..end].to_owned();
    Printed {
        text: format!("payload={encoded}\n"),
        forbidden: vec![stable, engine.encode(secret)],
    }
}

fn url_encode(secret: &str, lower_hex: LowerHex, plus_for_space: PlusForSpace) -> String {
    let mut encoded = String::new();
    for byte in secret.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else if byte == b' ' && plus_for_space == PlusForSpace::Yes {
            encoded.push('+');
        } else if lower_hex == LowerHex::Yes {
            encoded.push_str(&format!("%{byte:02x}"));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Python's `json.dumps` default: every non-ASCII character as `\uXXXX`.
fn json_ascii_only(secret: &str) -> String {
    let serialized = serde_json::to_string(secret).unwrap();
    let body = &serialized[1..serialized.len() - 1];
    let mut escaped = String::new();
    for character in body.chars() {
        if character.is_ascii() {
            escaped.push(character);
        } else {
            let mut units = [0_u16; 2];
            for unit in character.encode_utf16(&mut units) {
                escaped.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    escaped
}

/// Asserts none of `forbidden` survives in `scrubbed` (each also checked in 12-byte windows so
/// a long form cannot survive in part).
pub fn assert_nothing_survives(scrubbed: &str, forbidden: &[String], context: &str) {
    for form in forbidden {
        assert!(
            !scrubbed.contains(form.as_str()),
            "{context}: {form:?} survived in {scrubbed:?}"
        );
        let bytes = form.as_bytes();
        if bytes.len() > 12 {
            for window in bytes.windows(12) {
                let window = String::from_utf8_lossy(window);
                assert!(
                    !scrubbed.contains(window.as_ref()),
                    "{context}: part {window:?} of {form:?} survived in {scrubbed:?}"
                );
            }
        }
    }
}
