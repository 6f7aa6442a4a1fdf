//! The compiled form of a run's secrets: one Aho-Corasick automaton over every form of every
//! value, prefilters that find where it needs to look, and the span logic shared by one-shot
//! and streaming scrubbing.
//!
//! Matching uses standard (not leftmost-longest) semantics with an overlapping search, and masks
//! the union of every match. Leftmost-longest resumes after each match, so a second secret that
//! starts inside the first match and ends after it would keep its tail visible; the union of all
//! overlapping matches masks everything leftmost-longest masks, and that tail too.
//!
//! Speed: with a thousand values (fifteen thousand forms) no automaton walks ordinary text
//! faster than about 400 MB/s, so the full automaton only searches candidate windows, found by
//! length tier:
//! - forms of 31 bytes or more: a [`BlockFilter`] over aligned 16-byte blocks;
//! - forms of 7 to 30 bytes: a [`BlockFilter`] over aligned 4-byte blocks;
//! - forms under 7 bytes (values under 7 bytes, scrubbed raw): a leftmost-first automaton over
//!   them alone, which gets aho-corasick's vectorised prefilter when they are few.

use std::ops::Range;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};

use crate::MASK;
use crate::block_filter::{BlockFilter, BlockSize};
use crate::error::Error;
use crate::patterns::{MIN_ENCODED_VALUE_BYTES, Pattern, patterns_for_value};

/// One automaton over all forms of a set of values, and its prefilters.
pub(crate) struct ScrubSet {
    /// Every form, standard semantics: the overlapping search that decides what is masked.
    all_forms: Option<AhoCorasick>,
    /// Forms too short for the 4-byte block filter, leftmost-first: only finds where to look.
    short_form_finder: Option<AhoCorasick>,
    longest_short_form_bytes: usize,
    /// Forms of 31 bytes or more, sampled in 16-byte blocks.
    long_form_filter: Option<BlockFilter>,
    /// Forms of 7 to 30 bytes, sampled in 4-byte blocks.
    middle_form_filter: Option<BlockFilter>,
    longest_pattern_bytes: usize,
    /// Every form, sorted: finds a tail that is the beginning of a form (text cut short).
    sorted_forms: Vec<Pattern>,
}

impl ScrubSet {
    /// Compiles every form of every value; `label` names the run in errors.
    pub(crate) fn build<'value>(
        label: &str,
        values: impl IntoIterator<Item = &'value str>,
    ) -> Result<Self, Error> {
        let mut patterns: Vec<Pattern> = values.into_iter().flat_map(patterns_for_value).collect();
        patterns.sort_unstable_by(|left, right| left.as_slice().cmp(right.as_slice()));
        patterns.dedup_by(|left, right| left.as_slice() == right.as_slice());
        let automaton_error = |source| Error::Automaton {
            label: label.to_owned(),
            source,
        };
        let longest_pattern_bytes = patterns
            .iter()
            .map(|pattern| pattern.len())
            .max()
            .unwrap_or(0);
        let all_forms = if patterns.is_empty() {
            None
        } else {
            // The full automaton only searches short windows, so the compact NFA (fast to build,
            // small) beats a DFA, whose table for fifteen thousand forms takes hundreds of MiB.
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(patterns.iter().map(|pattern| pattern.as_slice()))
                .map_err(automaton_error)?;
            Some(automaton)
        };
        let long_threshold = BlockSize::Sixteen.shortest_covered_form();
        let middle_threshold = BlockSize::Four.shortest_covered_form();
        let forms = || patterns.iter().map(|pattern| pattern.as_slice());
        let short_forms: Vec<&[u8]> = forms()
            .filter(|form| form.len() < middle_threshold)
            .collect();
        let longest_short_form_bytes = short_forms.iter().map(|form| form.len()).max().unwrap_or(0);
        let short_form_finder = if short_forms.is_empty() {
            None
        } else {
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(&short_forms)
                .map_err(automaton_error)?;
            Some(automaton)
        };
        let long_form_filter = BlockFilter::build(
            BlockSize::Sixteen,
            forms().filter(|form| form.len() >= long_threshold),
        );
        let middle_form_filter = BlockFilter::build(
            BlockSize::Four,
            forms().filter(|form| (middle_threshold..long_threshold).contains(&form.len())),
        );
        Ok(Self {
            all_forms,
            short_form_finder,
            longest_short_form_bytes,
            long_form_filter,
            middle_form_filter,
            longest_pattern_bytes,
            sorted_forms: patterns,
        })
    }

    /// The length of the longest searched form; a stream holds back one byte less than this.
    pub(crate) fn longest_pattern_bytes(&self) -> usize {
        self.longest_pattern_bytes
    }

    /// Whether any form of any value occurs in `haystack`.
    pub(crate) fn holds_secret(&self, haystack: &[u8]) -> bool {
        !self.masked_spans(haystack).is_empty()
    }

    /// Every masked span of `haystack`: overlapping and touching matches merged, in order;
    /// base64 wrapped over lines is searched with its lines joined, and text with `\u`
    /// escapes with its escapes decoded.
    pub(crate) fn masked_spans(&self, haystack: &[u8]) -> Vec<Range<usize>> {
        let mut spans = self.unwrapped_spans(haystack);
        let mut blocks = crate::wrapped::wrapped_blocks(haystack);
        blocks.extend(crate::escapes::decoded_block(haystack));
        if blocks.is_empty() {
            return spans;
        }
        for block in blocks {
            spans.extend(
                self.unwrapped_spans(&block.joined)
                    .iter()
                    .filter_map(|span| block.original(span)),
            );
        }
        merge_spans(spans)
    }

    /// The masked spans of `haystack` as it is, lines not joined.
    fn unwrapped_spans(&self, haystack: &[u8]) -> Vec<Range<usize>> {
        let mut spans: Vec<Range<usize>> = Vec::new();
        let Some(all_forms) = self.all_forms.as_ref() else {
            return spans;
        };
        let mut windows = Vec::new();
        for filter in [&self.long_form_filter, &self.middle_form_filter]
            .into_iter()
            .flatten()
        {
            filter.windows(haystack, &mut windows);
        }
        windows.extend(self.short_form_windows(haystack));
        windows.sort_unstable_by_key(|window| (window.start, window.end));
        let mut merged_windows: Vec<Range<usize>> = Vec::with_capacity(windows.len());
        for window in windows {
            match merged_windows.last_mut() {
                Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
                _ => merged_windows.push(window),
            }
        }
        let mut matches: Vec<Range<usize>> = Vec::new();
        for window in merged_windows {
            matches.extend(
                all_forms
                    .find_overlapping_iter(Input::new(haystack).range(window))
                    .map(|found| found.range()),
            );
        }
        // Overlapping matches are reported by end position, so sort and merge; matches are rare
        // in real output, so this is cheap.
        matches.sort_unstable_by_key(|span| (span.start, span.end));
        for span in matches {
            match spans.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => spans.push(span),
            }
        }
        spans
    }

    /// Where the longest tail of `haystack` starts that is the beginning of a form, at least
    /// [`MIN_ENCODED_VALUE_BYTES`] long: what is left of a value when something cut the text
    /// in the middle of it.
    pub(crate) fn dangling_form_start(&self, haystack: &[u8]) -> Option<usize> {
        let earliest = haystack
            .len()
            .saturating_sub(self.longest_pattern_bytes.saturating_sub(1));
        let latest = haystack.len().checked_sub(MIN_ENCODED_VALUE_BYTES)?;
        (earliest..=latest).find(|start| {
            let tail = haystack.get(*start..).unwrap_or_default();
            // The forms that begin with `tail` sort right at or after it.
            let first = self
                .sorted_forms
                .partition_point(|form| form.as_slice() < tail);
            self.sorted_forms
                .get(first)
                .is_some_and(|form| form.starts_with(tail))
        })
    }

    /// Windows that hold every occurrence of a short form: from the leftmost occurrence at or
    /// after `position`, `2 * longest_short` bytes; the next search starts `longest_short - 1`
    /// bytes before the window ends, because an occurrence starting earlier ends inside it.
    fn short_form_windows(&self, haystack: &[u8]) -> Vec<Range<usize>> {
        let mut windows = Vec::new();
        let Some(finder) = self.short_form_finder.as_ref() else {
            return windows;
        };
        let longest_short = self.longest_short_form_bytes.max(1);
        let mut position = 0;
        while position < haystack.len() {
            let Some(found) = finder.find(Input::new(haystack).range(position..)) else {
                break;
            };
            let window_end = (found.start() + 2 * longest_short).min(haystack.len());
            windows.push(found.start()..window_end);
            if window_end == haystack.len() {
                break;
            }
            position = window_end + 1 - longest_short;
        }
        windows
    }
}

/// The compiled sets one redactor scrubs with (its run's own values, its account's values):
/// every question is answered for their union.
#[derive(Clone)]
pub(crate) struct SetList(pub(crate) Vec<Arc<ScrubSet>>);

impl SetList {
    /// The longest searched form of any set.
    pub(crate) fn longest_pattern_bytes(&self) -> usize {
        self.0
            .iter()
            .map(|set| set.longest_pattern_bytes())
            .max()
            .unwrap_or(0)
    }

    /// Whether any form of any value of any set occurs in `haystack`.
    pub(crate) fn holds_secret(&self, haystack: &[u8]) -> bool {
        self.0.iter().any(|set| set.holds_secret(haystack))
    }

    /// The masked spans of every set, merged and in order.
    pub(crate) fn masked_spans(&self, haystack: &[u8]) -> Vec<Range<usize>> {
        let mut all: Vec<Range<usize>> = Vec::new();
        for set in &self.0 {
            all.extend(set.masked_spans(haystack));
        }
        merge_spans(all)
    }

    /// The earliest start of a dangling form over every set.
    pub(crate) fn dangling_form_start(&self, haystack: &[u8]) -> Option<usize> {
        self.0
            .iter()
            .filter_map(|set| set.dangling_form_start(haystack))
            .min()
    }
}

/// Sorts spans and merges the overlapping and touching ones.
pub(crate) fn merge_spans(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_unstable_by_key(|span| (span.start, span.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each span replaced by one [`MASK`].
///
/// A span that starts or ends inside a character (a form that is not UTF-8 on its own, such as
/// a UTF-16 encoding, matched across a character) is widened to whole characters first, so
/// nothing of a value is kept and the text stays valid.
pub(crate) fn replace_spans(text: &str, spans: &[Range<usize>]) -> String {
    let spans = char_aligned(text, spans);
    let mut scrubbed = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    for span in &spans {
        scrubbed.push_str(text.get(copied_up_to..span.start).unwrap_or_default());
        scrubbed.push_str(MASK);
        copied_up_to = span.end;
    }
    scrubbed.push_str(text.get(copied_up_to..).unwrap_or_default());
    scrubbed
}

/// `spans` widened to character boundaries of `text`, then merged again.
pub(crate) fn char_aligned(text: &str, spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let widened = spans
        .iter()
        .map(|span| {
            let mut start = span.start.min(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = span.end.min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            start..end
        })
        .collect();
    merge_spans(widened)
}
