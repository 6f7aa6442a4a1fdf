//! Base64 wrapped over lines (MIME's 76 columns, PEM's and `openssl base64`'s 64): a value's
//! base64 forms cannot match across a line break, and a form for every place a break could
//! fall would multiply the automaton by the form's length. So the lines of a wrapped block are
//! joined first, searched, and each match mapped back onto the original text (the breaks
//! inside it masked too).
//!
//! A block's first line may have other text before its base64 (`print("mime", encoded)`), and
//! its last line other text after it: the base64 at the end of the first line and at the
//! start of the last are what is joined.
//!
//! Cheap on ordinary text: only a line that ends in 64 or 76 base64 characters followed by
//! another line that starts with base64 makes a block.

use std::ops::Range;

/// The lengths of a full line of wrapped base64.
const WRAP_WIDTHS: [usize; 2] = [64, 76];

/// A block of the text read another way (lines joined, escapes decoded): its bytes, and where
/// each came from in the original text (a decoded escape comes from all its bytes).
pub(crate) struct JoinedBlock {
    pub(crate) joined: Vec<u8>,
    origin: Vec<Range<usize>>,
}

impl JoinedBlock {
    pub(crate) fn new(joined: Vec<u8>, origin: Vec<Range<usize>>) -> JoinedBlock {
        JoinedBlock { joined, origin }
    }

    /// A span of `joined` as a span of the original text (covering the breaks and escapes
    /// inside it).
    pub(crate) fn original(&self, span: &Range<usize>) -> Option<Range<usize>> {
        let start = self.origin.get(span.start)?.start;
        let end = self.origin.get(span.end.checked_sub(1)?)?.end;
        Some(start..end)
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
    let mut blocks = Vec::new();
    // One pass per width: a line of 80 base64 characters ends in a first line of either.
    for width in WRAP_WIDTHS {
        blocks_of_width(haystack, width, &mut blocks);
    }
    blocks
}

fn blocks_of_width(haystack: &[u8], width: usize, blocks: &mut Vec<JoinedBlock>) {
    let all_base64 = |line: &Range<usize>| {
        haystack
            .get(line.clone())
            .is_some_and(|bytes| !bytes.is_empty() && bytes.iter().all(|byte| is_base64(*byte)))
    };
    // The lines of the block being gathered.
    let mut block: Vec<Range<usize>> = Vec::new();
    let mut finish = |block: &mut Vec<Range<usize>>| {
        if block.len() >= 2 {
            let bytes: usize = block.iter().map(ExactSizeIterator::len).sum();
            let mut joined = Vec::with_capacity(bytes);
            let mut origin = Vec::with_capacity(bytes);
            for line in block.iter() {
                joined.extend_from_slice(haystack.get(line.clone()).unwrap_or_default());
                origin.extend(line.clone().map(|at| at..at + 1));
            }
            blocks.push(JoinedBlock { joined, origin });
        }
        block.clear();
    };
    // The base64 a line starts with: up to the first byte that is not base64.
    let leading_base64 = |line: &Range<usize>| {
        let bytes = haystack.get(line.clone()).unwrap_or_default();
        let run = bytes.iter().take_while(|byte| is_base64(**byte)).count();
        line.start..line.start + run
    };
    // The `width` characters a line ends with, when all are base64: a block's first line (an
    // encoder wraps every `width` characters, so whatever stands before them on the line, these
    // are the encoding's first line).
    let first_line = |line: &Range<usize>| {
        let run = line.end.checked_sub(width)?..line.end;
        (run.start >= line.start && all_base64(&run)).then_some(run)
    };
    for line in lines(haystack) {
        if !block.is_empty() {
            if line.len() == width && all_base64(&line) {
                block.push(line);
                continue;
            }
            // The block's last line: the rest of the encoding, shorter, perhaps with other
            // text after it.
            let rest = leading_base64(&line);
            if !rest.is_empty() && rest.len() < width {
                block.push(rest);
                finish(&mut block);
                continue;
            }
            finish(&mut block);
        }
        if let Some(run) = first_line(&line) {
            block.push(run);
        }
    }
    finish(&mut block);
}
