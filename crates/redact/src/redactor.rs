//! `Redactor`: scrubs text, JSON and streams with an account's values and a run's own.

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::live::{AccountSet, Built, OwnValues};
use crate::redacted::{Redacted, ScrubFields};
use crate::scope::Scope;
use crate::scrub_set::{SetList, char_aligned, replace_spans};
use crate::stream::StreamScrubber;
use crate::{CUT_MARK, MASK, UNREADABLE_MASK};
use ids::AccountId;

/// Scrubs with every value of one account (current, revoked, and superseded values the vault
/// keeps), checked against the vault's generation before each use, and, for a run, the run's
/// own values too. Cheap to clone; clones share the compiled sets.
///
/// There is no way to build one without its account's live set: a run redactor comes from
/// [`crate::RunSecrets::redactor`], an account redactor from [`crate::ScrubSets::for_account`].
#[derive(Clone)]
pub struct Redactor {
    scope: Scope,
    /// The run's own values (current and replaced on resume); `None` for an account redactor.
    own: Option<Arc<RwLock<Arc<OwnValues>>>>,
    account: Arc<AccountSet>,
}

impl Redactor {
    pub(crate) fn new(
        scope: Scope,
        own: Option<Arc<RwLock<Arc<OwnValues>>>>,
        account: Arc<AccountSet>,
    ) -> Self {
        Self {
            scope,
            own,
            account,
        }
    }

    /// The sets to scrub with now: the account's for its current generation, and the run's
    /// own unless the account's set already holds every one of them (the usual case: a value
    /// leaves the account's set only when the vault prunes it). `None` when the account's
    /// generation or values cannot be read: then everything is masked (fail closed).
    pub(crate) fn sets(&self) -> Option<SetList> {
        self.account
            .refreshed()
            .ok()
            .map(|account| self.sets_with(&account))
    }

    /// Checks that the account's values can be read now; a writer that can refuse calls this
    /// first, so a vault that cannot be read is an error instead of a record masked whole.
    pub fn ensure_current(&self) -> Result<(), Error> {
        self.account.refreshed().map(|_| ())
    }

    /// The sets as last built, without asking the source (logs, panic messages).
    pub(crate) fn cached_sets(&self) -> SetList {
        self.sets_with(&self.account.cached())
    }

    fn sets_with(&self, account: &Arc<Built>) -> SetList {
        let mut sets = vec![Arc::clone(&account.set)];
        if let Some(own) = &self.own {
            let own = Arc::clone(&own.read().unwrap_or_else(PoisonError::into_inner));
            if !own.covered_by(account) {
                sets.push(Arc::clone(&own.set));
            }
        }
        SetList(sets)
    }

    /// Whose records this redactor scrubs for.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The account whose values it scrubs.
    pub fn account_id(&self) -> &AccountId {
        self.account.account_id()
    }

    /// `text` with every form of every value replaced by [`MASK`].
    pub fn scrub(&self, text: &str) -> Redacted<String> {
        Redacted::scrubbed(self.scrub_to_string(text), self.scope.clone())
    }

    pub(crate) fn scrub_to_string(&self, text: &str) -> String {
        match self.sets() {
            Some(sets) => scrub_text(&sets, text),
            None => UNREADABLE_MASK.to_owned(),
        }
    }

    /// `value` with every free-text field scrubbed (see [`ScrubFields`]); every field masked
    /// whole when the account's values cannot be read.
    pub fn scrub_fields<T: ScrubFields>(&self, value: T) -> Redacted<T> {
        let scrubbed = match self.sets() {
            Some(sets) => value.scrub_fields(&|text: &str| scrub_text(&sets, text)),
            None => value.scrub_fields(&|_: &str| UNREADABLE_MASK.to_owned()),
        };
        Redacted::scrubbed(scrubbed, self.scope.clone())
    }

    /// Scrubs first, then cuts to at most `max_bytes` on a character boundary, so a cut can
    /// never leave the first half of a value that scrubbing would have recognised whole. A cut
    /// that would fall inside a mask drops the whole mask instead of leaving `[REDA`.
    pub fn scrub_truncated(&self, text: &str, max_bytes: usize) -> Redacted<String> {
        let Some(sets) = self.sets() else {
            return self.unreadable();
        };
        let spans = sets.masked_spans(text.as_bytes());
        truncate_masked(text, &spans, max_bytes, self.scope.clone())
    }

    /// For text that something before the redactor may have cut at its end (a sandbox's cap on
    /// printed output): as [`Redactor::scrub_truncated`], and a tail that is the beginning of a
    /// form of a value (at least [`crate::MIN_ENCODED_VALUE_BYTES`] long) is masked too, so a
    /// value cut in half upstream leaves no half behind.
    pub fn scrub_cut_truncated(&self, text: &str, max_bytes: usize) -> Redacted<String> {
        let Some(sets) = self.sets() else {
            return self.unreadable();
        };
        let mut spans = sets.masked_spans(text.as_bytes());
        if let Some(start) = sets.dangling_form_start(text.as_bytes())
            && text.is_char_boundary(start)
        {
            // Spans are sorted and merged: the tail joins the last one or comes after it.
            match spans.last_mut() {
                Some(last) if start <= last.end => last.end = text.len(),
                _ => spans.push(start..text.len()),
            }
        }
        truncate_masked(text, &spans, max_bytes, self.scope.clone())
    }

    /// What a program printed, as raw bytes that something before the redactor may have cut at
    /// any byte (a sandbox's cap on printed output): scrubbed on the bytes themselves (so a form
    /// that is not UTF-8, or a value cut inside a multi-byte character, is still found), a tail
    /// that is the beginning of a form masked, an incomplete character at the end dropped, then
    /// decoded (invalid bytes shown as U+FFFD) and cut to `max_bytes` with [`CUT_MARK`] at the
    /// end of a cut text, so a cut never joins the next chunk into a value.
    pub fn scrub_printed(&self, bytes: &[u8], max_bytes: usize) -> Redacted<String> {
        let Some(sets) = self.sets() else {
            return self.unreadable();
        };
        let mut spans = sets.masked_spans(bytes);
        let end = complete_utf8_end(bytes);
        let cut_upstream = end < bytes.len();
        if let Some(start) = sets.dangling_form_start(bytes) {
            match spans.last_mut() {
                Some(last) if start <= last.end => last.end = bytes.len(),
                _ => spans.push(start..bytes.len()),
            }
        }
        // Decode piece by piece around the masks; the incomplete character a cut left at the
        // very end is dropped (it is shown as nothing rather than as U+FFFD).
        let mut decoded = String::with_capacity(bytes.len());
        let mut decoded_spans = Vec::with_capacity(spans.len());
        let mut copied_up_to = 0;
        for span in &spans {
            let piece = bytes.get(copied_up_to..span.start).unwrap_or_default();
            decoded.push_str(&String::from_utf8_lossy(piece));
            let start = decoded.len();
            decoded.push_str(MASK);
            decoded_spans.push(start..decoded.len());
            copied_up_to = span.end;
        }
        if copied_up_to < end {
            let piece = bytes.get(copied_up_to..end).unwrap_or_default();
            decoded.push_str(&String::from_utf8_lossy(piece));
        }
        // `decoded` holds the masks already: cut it with the masks as its spans, which
        // replaces each mask by itself.
        let mut kept = truncate_masked(&decoded, &decoded_spans, max_bytes, self.scope.clone());
        if cut_upstream && !kept.get().ends_with(CUT_MARK) {
            kept = Redacted::scrubbed(format!("{}{CUT_MARK}", kept.get()), self.scope.clone());
        }
        kept
    }

    /// `bytes` (a written file, output that is not UTF-8) with every form of every value
    /// replaced by [`MASK`]; the bytes around the matches are kept as they are.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Redacted<Vec<u8>> {
        let Some(sets) = self.sets() else {
            return Redacted::scrubbed(UNREADABLE_MASK.as_bytes().to_vec(), self.scope.clone());
        };
        let spans = sets.masked_spans(bytes);
        let mut scrubbed = Vec::with_capacity(bytes.len());
        let mut copied_up_to = 0;
        for span in &spans {
            scrubbed.extend_from_slice(bytes.get(copied_up_to..span.start).unwrap_or_default());
            scrubbed.extend_from_slice(MASK.as_bytes());
            copied_up_to = span.end;
        }
        scrubbed.extend_from_slice(bytes.get(copied_up_to..).unwrap_or_default());
        Redacted::scrubbed(scrubbed, self.scope.clone())
    }

    /// Every key and every string, recursively; a number whose text holds a value becomes the
    /// string [`MASK`]. Strings are scrubbed after JSON parsing, so a value written with escapes
    /// (`\u0041`, `\/`) in the original document is matched in its decoded form. Two keys that
    /// scrub to the same text are kept apart with a `#2`, `#3`... suffix rather than merged.
    pub fn scrub_json(&self, value: &Value) -> Redacted<Value> {
        let scrubbed = match self.sets() {
            Some(sets) => scrub_json_value(&sets, value),
            None => Value::String(UNREADABLE_MASK.to_owned()),
        };
        Redacted::scrubbed(scrubbed, self.scope.clone())
    }

    /// A JSON document as a program wrote it, parsed and scrubbed as [`Redactor::scrub_json`]
    /// does, after every number whose digits as written hold a value was made the string
    /// [`MASK`]: parsing first would turn a 23-digit numeric credential into a float that keeps
    /// 16 of its digits, which no form matches any more.
    pub fn scrub_json_text(&self, text: &str) -> Result<Redacted<Value>, serde_json::Error> {
        let Some(sets) = self.sets() else {
            return Ok(Redacted::scrubbed(
                Value::String(UNREADABLE_MASK.to_owned()),
                self.scope.clone(),
            ));
        };
        let without_numbers = mask_number_tokens(&sets, text);
        let value: Value = serde_json::from_str(&without_numbers)?;
        Ok(Redacted::scrubbed(
            scrub_json_value(&sets, &value),
            self.scope.clone(),
        ))
    }

    /// Where the first form of any value occurs in `bytes` (positions only), so a refusal can
    /// say where without repeating what; `Some(0..0)` when the account's values cannot be read
    /// (a screen refuses what it cannot check).
    pub fn find_secret(&self, bytes: &[u8]) -> Option<std::ops::Range<usize>> {
        match self.sets() {
            Some(sets) => sets.masked_spans(bytes).into_iter().next(),
            None => Some(0..0),
        }
    }

    /// Whether any form of any value occurs in `bytes`; `true` when the account's values
    /// cannot be read (a screen refuses what it cannot check).
    pub fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.sets().is_none_or(|sets| sets.holds_secret(bytes))
    }

    /// A scrubber for output that arrives in chunks; it uses the values known now (none
    /// readable: it masks every chunk whole).
    pub fn stream(&self) -> StreamScrubber {
        StreamScrubber::new(self.sets(), self.scope.clone())
    }

    fn unreadable(&self) -> Redacted<String> {
        Redacted::scrubbed(UNREADABLE_MASK.to_owned(), self.scope.clone())
    }
}

/// `text` (JSON) with every number token outside a string whose text holds a value replaced
/// by the string [`MASK`]; everything else is left as it is.
fn mask_number_tokens(sets: &SetList, text: &str) -> String {
    let bytes = text.as_bytes();
    let mut masked = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    let mut index = 0;
    let mut in_string = false;
    while let Some(&byte) = bytes.get(index) {
        if in_string {
            match byte {
                b'\\' => index += 1,
                b'"' => in_string = false,
                _ => {}
            }
            index += 1;
            continue;
        }
        if byte == b'"' {
            in_string = true;
            index += 1;
            continue;
        }
        if byte == b'-' || byte.is_ascii_digit() {
            let start = index;
            while bytes
                .get(index)
                .is_some_and(|next| next.is_ascii_digit() || b"+-.eE".contains(next))
            {
                index += 1;
            }
            let token = text.get(start..index).unwrap_or_default();
            let digits: String = token.chars().filter(char::is_ascii_digit).collect();
            if sets.holds_secret(token.as_bytes()) || sets.holds_secret(digits.as_bytes()) {
                masked.push_str(text.get(copied_up_to..start).unwrap_or_default());
                masked.push('"');
                masked.push_str(MASK);
                masked.push('"');
                copied_up_to = index;
            }
            continue;
        }
        index += 1;
    }
    masked.push_str(text.get(copied_up_to..).unwrap_or_default());
    masked
}

/// Where the last complete UTF-8 character of `bytes` ends: an incomplete sequence at the very
/// end (a cut inside a character) is left out; invalid bytes elsewhere stay.
fn complete_utf8_end(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for start in (len.saturating_sub(3)..len).rev() {
        let Some(&byte) = bytes.get(start) else {
            break;
        };
        if byte < 0x80 {
            return len;
        }
        if byte >= 0xC0 {
            // A lead byte: how long its character is.
            let needed = if byte >= 0xF0 {
                4
            } else if byte >= 0xE0 {
                3
            } else {
                2
            };
            return if len - start < needed { start } else { len };
        }
        // A continuation byte: its lead byte is further back.
    }
    len
}

/// `text` with `spans` masked, then cut to at most `max_bytes` on a character boundary and
/// never inside a mask; a text that was cut ends with [`CUT_MARK`] (counted in `max_bytes`
/// when it fits), so what is kept never joins the next chunk into a value.
fn truncate_masked(
    text: &str,
    spans: &[std::ops::Range<usize>],
    max_bytes: usize,
    scope: Scope,
) -> Redacted<String> {
    let spans = char_aligned(text, spans);
    let mut scrubbed = replace_spans(text, &spans);
    if scrubbed.len() > max_bytes {
        let mut cut = max_bytes.saturating_sub(CUT_MARK.len());
        while !scrubbed.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(mask_start) = mask_starts_in_output(&spans)
            .into_iter()
            .find(|mask_start| *mask_start < cut && cut < mask_start + MASK.len())
        {
            cut = mask_start;
        }
        scrubbed.truncate(cut);
        scrubbed.push_str(CUT_MARK);
    }
    Redacted::scrubbed(scrubbed, scope)
}

/// Where each mask starts in the output of `replace_spans(text, spans)`: each earlier span
/// removed its own length and added the mask's.
fn mask_starts_in_output(spans: &[std::ops::Range<usize>]) -> Vec<usize> {
    let mut removed = 0_usize;
    let mut added = 0_usize;
    let mut starts = Vec::with_capacity(spans.len());
    for span in spans {
        starts.push(span.start + added - removed);
        removed += span.len();
        added += MASK.len();
    }
    starts
}

fn scrub_text(set: &SetList, text: &str) -> String {
    let spans = set.masked_spans(text.as_bytes());
    if spans.is_empty() {
        text.to_owned()
    } else {
        replace_spans(text, &spans)
    }
}

fn scrub_json_value(set: &SetList, value: &Value) -> Value {
    match value {
        Value::Null | Value::Bool(_) => value.clone(),
        Value::Number(number) => {
            if set.holds_secret(number.to_string().as_bytes()) {
                Value::String(MASK.to_owned())
            } else {
                value.clone()
            }
        }
        Value::String(text) => Value::String(scrub_text(set, text)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| scrub_json_value(set, item))
                .collect(),
        ),
        Value::Object(entries) => {
            let mut scrubbed = Map::new();
            for (key, item) in entries {
                let mut scrubbed_key = scrub_text(set, key);
                if scrubbed.contains_key(&scrubbed_key) {
                    let base = scrubbed_key.clone();
                    let mut suffix = 2_usize;
                    while scrubbed.contains_key(&scrubbed_key) {
                        scrubbed_key = format!("{base}#{suffix}");
                        suffix += 1;
                    }
                }
                scrubbed.insert(scrubbed_key, scrub_json_value(set, item));
            }
            Value::Object(scrubbed)
        }
    }
}
