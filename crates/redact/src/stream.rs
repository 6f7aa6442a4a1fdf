//! `StreamScrubber`: scrubbing output that arrives in chunks, where a value may be split
//! across two or more chunks.
//!
//! A match that ends in a later chunk starts at most `longest - 1` bytes before the end of what
//! has arrived, so everything before that point is final: it is emitted (plain or masked) and
//! the rest is held back. The last `longest - 1` bytes already emitted stay as look-behind, so a
//! match that begins inside an emitted mask and ends in a new chunk is still found and its tail
//! masked; as a result a stream cut anywhere scrubs exactly like the whole text at once.

use crate::MASK;
use crate::escapes::{ESCAPE_EXPANSION, first_unicode_escape};
use crate::redacted::Redacted;
use crate::scope::Scope;
use crate::scrub_set::SetList;

/// Scrubs one stream (a step's stdout, say). `push` returns what can no longer be part of a
/// match; `finish` flushes the rest.
pub struct StreamScrubber {
    /// `None`: the account's values could not be read; every chunk is masked whole.
    set: Option<SetList>,
    scope: Scope,
    /// The last bytes already emitted, kept only to find matches that began in them.
    look_behind: Vec<u8>,
    /// Text received and not yet emitted.
    pending: String,
    /// Whether the last thing emitted was a mask, so a match continuing it is not masked twice.
    output_ends_masked: bool,
}

/// Whether more input may follow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    MoreMayFollow,
    Finished,
}

impl StreamScrubber {
    pub(crate) fn new(set: Option<SetList>, scope: Scope) -> Self {
        Self {
            set,
            scope,
            look_behind: Vec::new(),
            pending: String::new(),
            output_ends_masked: false,
        }
    }

    /// Takes the next chunk; returns the scrubbed text that is now final (possibly empty).
    pub fn push(&mut self, chunk: &str) -> Redacted<String> {
        self.pending.push_str(chunk);
        let emitted = self.emit(StreamEnd::MoreMayFollow);
        Redacted::scrubbed(emitted, self.scope.clone())
    }

    /// Ends the stream; returns everything still held back, scrubbed.
    pub fn finish(mut self) -> Redacted<String> {
        let emitted = self.emit(StreamEnd::Finished);
        Redacted::scrubbed(emitted, self.scope.clone())
    }

    /// How many bytes are held back right now: at most the longest form's length + 2, or six
    /// times as much while a `\u` escape is in the text held back.
    pub fn held_back_bytes(&self) -> usize {
        self.pending.len()
    }

    fn emit(&mut self, stream_end: StreamEnd) -> String {
        let Some(set) = self.set.clone() else {
            // Nothing can be checked: everything that arrived is masked whole, once.
            let had_pending = !self.pending.is_empty();
            self.pending.clear();
            if had_pending && !self.output_ends_masked {
                self.output_ends_masked = true;
                return crate::UNREADABLE_MASK.to_owned();
            }
            return String::new();
        };
        let look_behind_len = self.look_behind.len();
        let mut buffer = std::mem::take(&mut self.look_behind);
        buffer.extend_from_slice(self.pending.as_bytes());
        // Spans in the coordinates of `pending`; a span that began in the look-behind starts at 0.
        let spans: Vec<_> = set
            .masked_spans(&buffer)
            .into_iter()
            .filter(|span| span.end > look_behind_len)
            .map(|span| span.start.saturating_sub(look_behind_len)..span.end - look_behind_len)
            .collect();

        let mut emit_up_to = match stream_end {
            StreamEnd::Finished => self.pending.len(),
            StreamEnd::MoreMayFollow => {
                let longest = set.longest_pattern_bytes();
                let mut limit = (self.pending.len() + 1)
                    .saturating_sub(longest)
                    .min(self.pending.len());
                // A form written with `\u` escapes is up to six times as long: with one in
                // sight, nothing from a form's length before it on is final yet.
                let reach = longest.saturating_mul(ESCAPE_EXPANSION);
                let tail_start = self.pending.len().saturating_sub(reach);
                let tail = self
                    .pending
                    .as_bytes()
                    .get(tail_start..)
                    .unwrap_or_default();
                if let Some(escape) = first_unicode_escape(tail) {
                    limit =
                        limit.min((tail_start + escape).saturating_sub(longest.saturating_mul(2)));
                }
                while !self.pending.is_char_boundary(limit) {
                    limit -= 1;
                }
                limit
            }
        };
        // A known match that crosses the limit is emitted whole, as a mask.
        if let Some(crossing) = spans
            .iter()
            .find(|span| span.start < emit_up_to && span.end > emit_up_to)
        {
            emit_up_to = crossing.end;
        }

        let mut emitted = String::new();
        let mut copied_up_to = 0;
        let mut ends_masked = self.output_ends_masked;
        for span in spans.iter().filter(|span| span.start < emit_up_to) {
            emitted.push_str(
                self.pending
                    .get(copied_up_to..span.start)
                    .unwrap_or_default(),
            );
            let continues_emitted_mask = span.start == 0 && self.output_ends_masked;
            if !continues_emitted_mask {
                emitted.push_str(MASK);
            }
            copied_up_to = span.end;
            ends_masked = true;
        }
        if copied_up_to < emit_up_to {
            emitted.push_str(
                self.pending
                    .get(copied_up_to..emit_up_to)
                    .unwrap_or_default(),
            );
            ends_masked = false;
        }
        self.output_ends_masked = ends_masked;

        // Keep the last `longest - 1` bytes of everything scanned so far as look-behind
        let scanned_len = look_behind_len + emit_up_to;
        // (six times as much while a `\u` escape is among them).
        let longest = set.longest_pattern_bytes();
        let reach = longest.saturating_mul(ESCAPE_EXPANSION);
        let recent = buffer
            .get(scanned_len.saturating_sub(reach)..scanned_len)
            .unwrap_or_default();
        let keep = if first_unicode_escape(recent).is_some() {
            reach
        } else {
            longest
        }
        .saturating_sub(1)
        .min(scanned_len);
        buffer.truncate(scanned_len);
        buffer.drain(..scanned_len - keep);
        self.look_behind = buffer;
        self.pending.drain(..emit_up_to);
        emitted
    }
}
