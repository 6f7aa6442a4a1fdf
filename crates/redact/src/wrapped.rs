//! Base64 wrapped over lines (MIME's 76 columns, PEM's and `openssl base64`'s 64): a value's
//! base64 forms cannot match across a line break, and a form for every place a break could
//! fall would multiply the automaton by the form's length. So the lines of a wrapped block are
//! joined first, searched, and each match mapped back onto the original text (the breaks
//! inside it masked too).
//!
//! Cheap on ordinary text: only a line of exactly 64 or 76 characters, all of them base64, can
//! start a block, and the length is known from the line breaks alone.

use std::ops::Range;

/// The lengths of a full line of wrapped base64.
const WRAP_WIDTHS: [usize; 2] = [64, 76];

/// A wrapped block: its lines joined, and where each joined byte is in the original text.
pub(crate) struct JoinedBlock {
    pub(crate) joined: Vec<u8>,
    origin: Vec<usize>,
}

impl JoinedBlock {
    /// A span of `joined` as a span of the original text (covering the breaks inside it).
    pub(crate) fn original(&self, span: &Range<usize>) -> Option<Range<usize>> {
        let start = *self.origin.get(span.start)?;
        let last = *self.origin.get(span.end.checked_sub(1)?)?;
        Some(start..last + 1)
    }
}

fn is_base64(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'-' | b'_' | b'=')
}

/// Every line of `haystack`, as a range without its line break (`\n` or `\r\n`).
fn lines(haystack: &[u8]) -> Vec<Range<usize>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', haystack) {
        let end = if newline > start && haystack.get(newline - 1) == Some(&b'\r') {
            newline - 1
        } else {
            newline
        };
        lines.push(start..end);
        start = newline + 1;
    }
    lines.push(start..haystack.len());
    lines
}

/// The wrapped blocks of `haystack`: one or more full lines (64 or 76 base64 characters, the
/// same width throughout) followed by one more line of base64, joined.
pub(crate) fn wrapped_blocks(haystack: &[u8]) -> Vec<JoinedBlock> {
    if memchr::memchr(b'\n', haystack).is_none() {
        return Vec::new();
    }
    let all_base64 = |line: &Range<usize>| {
        haystack
            .get(line.clone())
            .is_some_and(|bytes| !bytes.is_empty() && bytes.iter().all(|byte| is_base64(*byte)))
    };
    let lines = lines(haystack);
    let mut blocks = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let Some(first) = lines.get(index) else { break };
        let width = first.len();
        if !WRAP_WIDTHS.contains(&width) || !all_base64(first) {
            index += 1;
            continue;
        }
        let mut end = index + 1;
        while lines
            .get(end)
            .is_some_and(|line| line.len() == width && all_base64(line))
        {
            end += 1;
        }
        // The block's last line may be shorter (the rest of the encoding).
        if lines
            .get(end)
            .is_some_and(|line| line.len() < width && all_base64(line))
        {
            end += 1;
        }
        if end - index >= 2 {
            let mut joined = Vec::with_capacity((end - index) * width);
            let mut origin = Vec::with_capacity((end - index) * width);
            for line in lines.get(index..end).unwrap_or_default() {
                joined.extend_from_slice(haystack.get(line.clone()).unwrap_or_default());
                origin.extend(line.clone());
            }
            blocks.push(JoinedBlock { joined, origin });
        }
        index = end.max(index + 1);
    }
    blocks
}
