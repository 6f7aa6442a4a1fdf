//! Every form a secret value is searched for: raw, base64, hex, URL-encoding, JSON escaping,
//! Python's reprs, the common text formats of `formats.rs`, and each line of a multi-line
//! value. (Base64 wrapped over lines is found by `wrapped.rs`, which joins the lines first.)
//!
//! Patterns are held in `Zeroizing` buffers so the encoded copies are wiped once the automaton
//! is built (the automaton keeps its own copy inside its states; that copy lives as long as the
//! redactor and is not zeroized, which is the price of using a well-kept matcher).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

/// Values shorter than this many bytes are scrubbed in their raw form only.
///
/// The encoded forms of a 1–3 byte value are 2–6 characters long (the stable base64 inner part
/// of a 1-byte value is a single character), so they would match all over ordinary output and
/// blank it out; a value that short is also guessable whatever we do. The raw form is still
/// scrubbed, however short, because failing closed beats a leak.
pub const MIN_ENCODED_VALUE_BYTES: usize = 4;

/// Lines of a multi-line value shorter than this are not searched for on their own.
///
/// Short lines of a multi-line value (a blank line, a lone brace, a dash rule) occur in ordinary
/// output all the time, and masking every one of them would destroy unrelated text while hiding
/// almost nothing of the value; eight bytes is long enough that a line is specific to the value
/// (a PEM body line is 64 characters).
pub const MIN_LINE_BYTES: usize = 8;

/// One searched form of a value; wiped on drop.
pub(crate) type Pattern = Zeroizing<Vec<u8>>;

/// All forms of one value, deduplicated, empty forms dropped.
pub(crate) fn patterns_for_value(value: &str) -> Vec<Pattern> {
    let mut patterns: Vec<Pattern> = Vec::new();
    let mut base_forms: Vec<&str> = vec![value];
    let trimmed = value.trim();
    if trimmed != value && !trimmed.is_empty() {
        // A value read from a file often carries a trailing newline the program drops.
        base_forms.push(trimmed);
    }
    for base in base_forms {
        push_forms(base, &mut patterns);
    }
    if value.contains(['\n', '\r']) {
        for line in value.split(['\n', '\r']) {
            let line = line.trim();
            if line.len() >= MIN_LINE_BYTES {
                push_forms(line, &mut patterns);
            }
        }
    }
    patterns.retain(|pattern| !pattern.is_empty());
    patterns.sort_unstable_by(|left, right| left.as_slice().cmp(right.as_slice()));
    patterns.dedup_by(|left, right| left.as_slice() == right.as_slice());
    patterns
}

fn push_forms(value: &str, patterns: &mut Vec<Pattern>) {
    if value.is_empty() {
        return;
    }
    patterns.push(Zeroizing::new(value.as_bytes().to_vec()));
    if value.len() < MIN_ENCODED_VALUE_BYTES {
        return;
    }
    push_base64_forms(value.as_bytes(), patterns);
    patterns.push(Zeroizing::new(hex::encode(value).into_bytes()));
    patterns.push(Zeroizing::new(hex::encode_upper(value).into_bytes()));
    push_url_forms(value, patterns);
    push_json_forms(value, patterns);
    push_python_forms(value, patterns);
    crate::formats::push_markup_forms(value, patterns);
    crate::formats::push_quoting_forms(value, patterns);
    crate::formats::push_utf16_forms(value, patterns);
}

/// Base64, standard and URL-safe alphabets.
///
/// Embedded in a larger base64 stream, the value may start at byte offset 0, 1 or 2 of a 3-byte
/// group, and the characters at either end then mix its bits with its neighbours' bits. For each
/// alignment we encode `alignment` zero bytes followed by the value and keep only the characters
/// whose 6 bits all come from the value: those appear whatever the neighbours are. The value
/// encoded alone (padded and unpadded) is added too, so a standalone encoding is masked whole.
fn push_base64_forms(value: &[u8], patterns: &mut Vec<Pattern>) {
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for alignment in 0..3_usize {
            let mut shifted = Zeroizing::new(vec![0_u8; alignment]);
            shifted.extend_from_slice(value);
            let encoded = Zeroizing::new(engine.encode(shifted.as_slice()));
            // Character k covers bits [6k, 6k + 6) of the stream; the value covers bits
            // [8 * alignment, 8 * (alignment + len)).
            let first_stable = (8 * alignment).div_ceil(6);
            let end_stable = (8 * (alignment + value.len())) / 6;
            if let Some(inner) = encoded.as_bytes().get(first_stable..end_stable) {
                patterns.push(Zeroizing::new(inner.to_vec()));
            }
        }
        patterns.push(Zeroizing::new(engine.encode(value).into_bytes()));
    }
    for engine in [&STANDARD, &URL_SAFE] {
        patterns.push(Zeroizing::new(engine.encode(value).into_bytes()));
    }
}

/// How a URL encoder writes its hex digits.
#[derive(Clone, Copy)]
pub(crate) enum HexCase {
    Upper,
    Lower,
}

/// How a URL encoder writes a space.
#[derive(Clone, Copy)]
enum SpaceForm {
    Percent,
    Plus,
}

/// Whether a URL encoder leaves `/` alone (Python's `quote` default) or encodes it.
#[derive(Clone, Copy)]
pub(crate) enum SlashForm {
    Kept,
    Encoded,
}

/// Percent-encoding of everything outside RFC 3986's unreserved set, in each variant that
/// common encoders produce: `%2F` and `%2f`, space as `%20` or `+`, `/` kept or encoded.
fn push_url_forms(value: &str, patterns: &mut Vec<Pattern>) {
    for hex_case in [HexCase::Upper, HexCase::Lower] {
        for space_form in [SpaceForm::Percent, SpaceForm::Plus] {
            for slash_form in [SlashForm::Kept, SlashForm::Encoded] {
                let encoded = url_encode(value, hex_case, space_form, slash_form);
                patterns.push(Zeroizing::new(encoded.into_bytes()));
            }
        }
    }
}

fn url_encode(
    value: &str,
    hex_case: HexCase,
    space_form: SpaceForm,
    slash_form: SlashForm,
) -> String {
    let mut encoded = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        let unreserved = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~');
        if unreserved {
            encoded.push(char::from(byte));
        } else if byte == b' ' && matches!(space_form, SpaceForm::Plus) {
            encoded.push('+');
        } else if byte == b'/' && matches!(slash_form, SlashForm::Kept) {
            encoded.push('/');
        } else {
            push_percent_byte(&mut encoded, byte, hex_case);
        }
    }
    encoded
}

fn push_percent_byte(encoded: &mut String, byte: u8, hex_case: HexCase) {
    let digits: &[u8; 16] = match hex_case {
        HexCase::Upper => b"0123456789ABCDEF",
        HexCase::Lower => b"0123456789abcdef",
    };
    encoded.push('%');
    encoded.push(char::from(digits[usize::from(byte >> 4)]));
    encoded.push(char::from(digits[usize::from(byte & 0x0F)]));
}

/// Which characters a JSON encoder escapes.
#[derive(Clone, Copy)]
pub(crate) enum JsonEscaping {
    /// serde_json, Go, JavaScript: quotes, backslash and control characters only.
    Minimal,
    /// Python's default `ensure_ascii`: also every non-ASCII character (and DEL), as `\uXXXX`.
    AsciiOnly(HexCase),
    /// Go's `json.Marshal` (HTML-safe by default): also `&`, `<`, `>`, U+2028 and U+2029, as
    /// `\u0026`, `\u003c`, `\u003e`, `\u2028`, `\u2029`.
    Go,
}

/// Whether Go's escaping of `value` differs from the minimal one (only then is it a form of
/// its own, so values without those characters cost no extra pattern).
pub(crate) fn go_escapes(value: &str) -> bool {
    value.contains(['&', '<', '>', '\u{2028}', '\u{2029}'])
}

/// JSON string escaping, the string body without its quotes, with `/` plain and as `\/`.
fn push_json_forms(value: &str, patterns: &mut Vec<Pattern>) {
    for escaping in [
        JsonEscaping::Minimal,
        JsonEscaping::AsciiOnly(HexCase::Lower),
        JsonEscaping::AsciiOnly(HexCase::Upper),
    ] {
        for slash_form in [SlashForm::Kept, SlashForm::Encoded] {
            let escaped = json_escape(value, escaping, slash_form);
            patterns.push(Zeroizing::new(escaped.into_bytes()));
        }
    }
    if go_escapes(value) {
        // Go never writes `\/`.
        let escaped = json_escape(value, JsonEscaping::Go, SlashForm::Kept);
        patterns.push(Zeroizing::new(escaped.into_bytes()));
    }
}

pub(crate) fn json_escape(value: &str, escaping: JsonEscaping, slash_form: SlashForm) -> String {
    let mut escaped = String::with_capacity(value.len() + 8);
    for character in value.chars() {
        match character {
            '"' => escaped.push_str("\\\""),
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            '\u{08}' => escaped.push_str("\\b"),
            '\u{0C}' => escaped.push_str("\\f"),
            '/' if matches!(slash_form, SlashForm::Encoded) => escaped.push_str("\\/"),
            control if u32::from(control) < 0x20 => {
                push_unicode_escape(&mut escaped, u32::from(control), HexCase::Lower);
            }
            other => match escaping {
                JsonEscaping::Go if matches!(other, '&' | '<' | '>' | '\u{2028}' | '\u{2029}') => {
                    push_unicode_escape(&mut escaped, u32::from(other), HexCase::Lower);
                }
                JsonEscaping::AsciiOnly(hex_case) if !(' '..='~').contains(&other) => {
                    let mut units = [0_u16; 2];
                    for unit in other.encode_utf16(&mut units) {
                        push_unicode_escape(&mut escaped, u32::from(*unit), hex_case);
                    }
                }
                _ => escaped.push(other),
            },
        }
    }
    escaped
}

fn push_unicode_escape(escaped: &mut String, unit: u32, hex_case: HexCase) {
    match hex_case {
        HexCase::Lower => escaped.push_str(&format!("\\u{unit:04x}")),
        HexCase::Upper => escaped.push_str(&format!("\\u{unit:04X}")),
    }
}

/// How Python writes one character that `repr` does not show as itself.
#[derive(Clone, Copy)]
enum PythonText {
    /// `repr(str)`: printable non-ASCII characters are shown as they are.
    Repr,
    /// `ascii(str)` and `str.encode("unicode_escape")`: non-ASCII as `\xNN`, `\uNNNN`,
    /// `\UNNNNNNNN`.
    Ascii,
    /// `repr(bytes)` of the UTF-8 encoding: every byte of 0x80 or more as `\xNN`.
    Utf8Bytes,
}

/// Whether Python quotes a value's repr with `'` and so escapes the `'` inside it: it picks `"`
/// only when the value holds a `'` and no `"`.
#[derive(Clone, Copy)]
enum PythonQuote {
    SingleEscaped,
    SingleRaw,
}

/// The body (without quotes) of what Python prints for a value: `print({"k": value})`, an
/// exception message (`KeyError`), `f"{value!r}"`, `ascii(value)`, `print(value.encode())` and
/// `value.encode("unicode_escape")`. Unlike JSON, `repr` doubles a backslash but leaves a double
/// quote alone, and writes other unprintable characters as `\xNN`.
fn push_python_forms(value: &str, patterns: &mut Vec<Pattern>) {
    let quote_escaped = if value.contains('\'') && !value.contains('"') {
        PythonQuote::SingleRaw
    } else {
        PythonQuote::SingleEscaped
    };
    for text in [PythonText::Repr, PythonText::Ascii, PythonText::Utf8Bytes] {
        patterns.push(Zeroizing::new(
            python_escape(value, text, quote_escaped).into_bytes(),
        ));
    }
    // `unicode_escape` never escapes a quote.
    patterns.push(Zeroizing::new(
        python_escape(value, PythonText::Ascii, PythonQuote::SingleRaw).into_bytes(),
    ));
}

fn python_escape(value: &str, text: PythonText, quote: PythonQuote) -> String {
    let mut escaped = String::with_capacity(value.len() + 8);
    for character in value.chars() {
        match character {
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            '\'' if matches!(quote, PythonQuote::SingleEscaped) => escaped.push_str("\\'"),
            ' '..='~' => escaped.push(character),
            // Python's `isprintable` is close to "not a control character and not a separator
            // other than the space"; the rare characters where the two differ are not worth a
            // Unicode table here.
            other if u32::from(other) < 0x80 || other.is_control() || other.is_whitespace() => {
                push_python_code_point(&mut escaped, other);
            }
            other => match text {
                PythonText::Repr => escaped.push(other),
                PythonText::Ascii => push_python_code_point(&mut escaped, other),
                PythonText::Utf8Bytes => {
                    let mut buffer = [0_u8; 4];
                    for byte in other.encode_utf8(&mut buffer).bytes() {
                        escaped.push_str(&format!("\\x{byte:02x}"));
                    }
                }
            },
        }
    }
    escaped
}

fn push_python_code_point(escaped: &mut String, character: char) {
    let code = u32::from(character);
    if code <= 0xFF {
        escaped.push_str(&format!("\\x{code:02x}"));
    } else if code <= 0xFFFF {
        escaped.push_str(&format!("\\u{code:04x}"));
    } else {
        escaped.push_str(&format!("\\U{code:08x}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_minimal_json_escaping_matches_serde_json() {
        for value in [
            "plain",
            "quo\"te\\back",
            "tab\tnew\nline\r\u{1}\u{7f}",
            "ünï/cødé 🦀",
        ] {
            let serialized = serde_json::to_string(value).unwrap();
            let body = &serialized[1..serialized.len() - 1];
            assert_eq!(
                json_escape(value, JsonEscaping::Minimal, SlashForm::Kept),
                body
            );
        }
    }

    #[test]
    fn g17_base64_inner_forms_appear_at_every_alignment() {
        let value = b"correct horse battery";
        let patterns = patterns_for_value("correct horse battery");
        for alignment in 0..3 {
            for neighbour in [0_u8, 0xFF, b'x'] {
                let mut stream = vec![neighbour; alignment];
                stream.extend_from_slice(value);
                stream.extend_from_slice(&[neighbour; 5]);
                let encoded = STANDARD.encode(&stream);
                assert!(
                    patterns.iter().any(|pattern| encoded
                        .as_bytes()
                        .windows(pattern.len())
                        .any(|window| window == pattern.as_slice())),
                    "alignment {alignment} neighbour {neighbour}"
                );
            }
        }
    }

    #[test]
    fn g17_short_values_are_scrubbed_raw_only() {
        let patterns = patterns_for_value("abc");
        assert_eq!(patterns.len(), 1);
        assert_eq!(patterns[0].as_slice(), b"abc");
    }
}
