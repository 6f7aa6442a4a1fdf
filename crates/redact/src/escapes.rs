//! JSON strings with `\u` escapes (agents review, finding 9): `json.dumps(value,
//! ensure_ascii=True)` of a value with one character beyond ASCII, or a program that writes
//! every character as `\uXXXX` on purpose, prints a form no fixed list of encodings holds (any
//! subset of the characters may be escaped). Text that holds a `\u` escape is also read with
//! every JSON escape decoded, searched, and each match mapped back onto the escapes it came
//! from.
//!
//! Cheap on ordinary text: only text with a `\u` in it is decoded.

use crate::wrapped::JoinedBlock;

/// The longest a character's JSON escape is, per byte of its UTF-8: one ASCII byte as
/// `\u0041` (six bytes); a stream holds back this many times its longest form when an escape
/// is in sight.
pub(crate) const ESCAPE_EXPANSION: usize = 6;

/// `haystack` with its JSON escapes decoded, each decoded byte mapped to the whole escape it
/// came from; `None` when it holds no `\u` escape.
pub(crate) fn decoded_block(haystack: &[u8]) -> Option<JoinedBlock> {
    memchr::memmem::find(haystack, b"\\u")?;
    let mut joined = Vec::with_capacity(haystack.len());
    let mut origin = Vec::with_capacity(haystack.len());
    let mut at = 0;
    while let Some(&byte) = haystack.get(at) {
        let rest = haystack.get(at..).unwrap_or_default();
        if let Some((character, used)) = (byte == b'\\').then(|| escape_at(rest)).flatten() {
            let mut buffer = [0u8; 4];
            for decoded in character.encode_utf8(&mut buffer).bytes() {
                joined.push(decoded);
                origin.push(at..at + used);
            }
            at += used;
            continue;
        }
        joined.push(byte);
        origin.push(at..at + 1);
        at += 1;
    }
    Some(JoinedBlock::new(joined, origin))
}

/// Where, in `text`, the first `\u` is: what a stream must not emit past until it has seen as
/// much after it as a form can be long.
pub(crate) fn first_unicode_escape(text: &[u8]) -> Option<usize> {
    memchr::memmem::find(text, b"\\u")
}

/// The JSON escape `text` starts with (at its `\`): the character and how many bytes it takes.
/// A lone or reversed surrogate is not decoded.
fn escape_at(text: &[u8]) -> Option<(char, usize)> {
    let simple = match text.get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode_escape_at(text),
        _ => return None,
    };
    Some((simple, 2))
}

fn unicode_escape_at(text: &[u8]) -> Option<(char, usize)> {
    let unit = hex_unit(text.get(2..6)?)?;
    match unit {
        0xD800..=0xDBFF => {
            let low = text
                .get(6..8)
                .filter(|marker| *marker == b"\\u")
                .and_then(|_| hex_unit(text.get(8..12)?))
                .filter(|low| (0xDC00..=0xDFFF).contains(low))?;
            let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(u32::from(unit))?, 6)),
    }
}

fn hex_unit(digits: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(digits).ok()?;
    if text.len() != 4 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> (String, Vec<std::ops::Range<usize>>) {
        let block = decoded_block(text.as_bytes()).expect("a \\u escape");
        let spans = (0..block.joined.len())
            .filter_map(|at| block.original(&(at..at + 1)))
            .collect();
        (String::from_utf8(block.joined.clone()).unwrap(), spans)
    }

    #[test]
    fn decodes_every_json_escape_and_maps_each_byte_to_its_escape() {
        let (text, spans) = decoded(r#"a\u0062\"\\u0063\ud83e\udd80\n"#);
        assert_eq!(text, "ab\"\\u0063🦀\n");
        assert_eq!(spans[0], 0..1);
        assert_eq!(spans[1], 1..7);
        assert_eq!(spans[2], 7..9);
        assert_eq!(
            spans[3],
            9..11,
            "an escaped backslash is not the start of an escape"
        );
        // The crab's four bytes all come from its surrogate pair.
        assert!(spans[9..13].iter().all(|span| *span == (16..28)));
    }

    #[test]
    fn leaves_what_is_not_an_escape_as_it_is() {
        for text in [r"\u12", r"\uZZZZ\u", r"\udc00\u0041", r"\ud800x", r"\q\u"] {
            let block = decoded_block(text.as_bytes()).unwrap();
            let expected = text.replace(r"\u0041", "A");
            assert_eq!(String::from_utf8(block.joined.clone()).unwrap(), expected);
        }
        assert!(decoded_block(b"no escapes \\n here").is_none());
    }
}
