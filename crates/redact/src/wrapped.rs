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

/// The lines of `haystack`, each as a range without its line break (`\n` or `\r\n`), found
/// lazily: most text is never looked at beyond its line breaks.
fn lines(haystack: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    let mut newlines = memchr::memchr_iter(b'\n', haystack);
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match newlines.next() {
            Some(newline) => {
                let end = if newline > start && haystack.get(newline - 1) == Some(&b'\r') {
                    newline - 1
                } else {
                    newline
                };
                let line = start..end;
                start = newline + 1;
                Some(line)
            }
            None => {
                done = true;
                Some(start..haystack.len())
            }
        }
    })
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
    let mut blocks = Vec::new();
    // The lines of the block being gathered, and their width.
    let mut block: Vec<Range<usize>> = Vec::new();
    let mut width = 0;
    let mut finish = |block: &mut Vec<Range<usize>>| {
        if block.len() >= 2 {
            let bytes: usize = block.iter().map(ExactSizeIterator::len).sum();
            let mut joined = Vec::with_capacity(bytes);
            let mut origin = Vec::with_capacity(bytes);
            for line in block.iter() {
                joined.extend_from_slice(haystack.get(line.clone()).unwrap_or_default());
                origin.extend(line.clone());
            }
            blocks.push(JoinedBlock { joined, origin });
        }
        block.clear();
    };
    for line in lines(haystack) {
        if !block.is_empty() {
            if line.len() == width && all_base64(&line) {
                block.push(line);
                continue;
            }
            // The block's last line may be shorter (the rest of the encoding).
            let ends_block = line.len() < width && all_base64(&line);
            if ends_block {
                block.push(line);
                finish(&mut block);
                continue;
            }
            finish(&mut block);
        }
        if WRAP_WIDTHS.contains(&line.len()) && all_base64(&line) {
            width = line.len();
            block.push(line);
        }
    }
    finish(&mut block);
    blocks
}
