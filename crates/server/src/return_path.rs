//! Where sign-in sends a person back to (issue 11, finding 10): an approve link opened without
//! a session leads through `/signin?next=PATH` and back. The way back is attacker-chosen text
//! (anyone can send a link to our sign-in page), so it is accepted only when it can only be a
//! path on our own origin; anything else goes to the console's home.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// The longest way back kept; a real console path is far shorter.
const MAX_RETURN_PATH_BYTES: usize = 2048;

/// What a path may hold besides letters and digits: the characters of a path and a query, and
/// `%` for what they escape. Everything else (a backslash, a space, a tab, a quote, `#`, `<`, a
/// control character, anything beyond ASCII) is refused rather than interpreted.
const PATH_PUNCTUATION: &[u8] = b"/-._~%?=&+,:@";

/// Escaping for a path put into `?next=`: everything but letters, digits and `-._~`.
const NEXT_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn shaped_like_our_path(text: &str) -> bool {
    let bytes = text.as_bytes();
    // One slash, then anything but a second slash or a backslash: a browser reads `//host`
    // and `/\host` as another host.
    bytes.first() == Some(&b'/')
        && !matches!(bytes.get(1), Some(b'/' | b'\\'))
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || PATH_PUNCTUATION.contains(byte))
}

/// `raw` if it is a path of this origin (`/...`), checked as given and again with its escapes
/// decoded (so `/%2F/host` and `/%5Chost` are refused too); `None` otherwise.
pub(crate) fn console_path(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.len() > MAX_RETURN_PATH_BYTES || !shaped_like_our_path(raw) {
        return None;
    }
    let decoded = percent_decode_str(raw).decode_utf8().ok()?;
    let decoded_path = decoded.split('?').next().unwrap_or_default();
    if decoded_path.starts_with("//")
        || decoded.contains('\\')
        || decoded.chars().any(|character| character.is_control())
    {
        return None;
    }
    Some(raw.to_owned())
}

/// `/signin?next=PATH`, for a path of ours.
pub(crate) fn sign_in_and_back(path: &str) -> String {
    format!("/signin?next={}", utf8_percent_encode(path, NEXT_VALUE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_of_this_origin_are_ways_back() {
        for good in [
            "/",
            "/runs?status=failed",
            "/approve/run_1/ship/1/v1.k.AbC-_x",
        ] {
            assert_eq!(console_path(good).as_deref(), Some(good), "{good}");
        }
        for bad in [
            "",
            "//evil.example",
            "https://evil.example/",
            "/\\evil.example",
            "\\\\evil.example",
            "/%2F/evil.example",
            "/%2f/evil.example",
            "/%5Cevil.example",
            "/x%5C",
            "/%09/evil.example",
            "/\t/evil.example",
            " /x",
            "javascript:alert(1)",
            "evil.example",
            "/x#fragment",
            "/\u{a0}",
        ] {
            assert_eq!(console_path(bad), None, "{bad:?}");
        }
    }
}
