//! `Redactor`: scrubs text, JSON and streams with one run's secret set.

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::redacted::Redacted;
use crate::scrub_set::{ScrubSet, replace_spans};
use crate::secret::{SecretSource, SourceError};
use crate::stream::StreamScrubber;
use crate::{ACCOUNT_RUN_ID_PREFIX, MASK};

/// Scrubs with one run's secrets. Cheap to clone; every clone sees values added when the run's
/// secrets are refreshed on resume (the set only ever grows).
#[derive(Clone)]
pub struct Redactor {
    run_id: Arc<str>,
    set: Arc<RwLock<Arc<ScrubSet>>>,
}

impl Redactor {
    pub(crate) fn from_set(run_id: Arc<str>, set: ScrubSet) -> Self {
        Self {
            run_id,
            set: Arc::new(RwLock::new(Arc::new(set))),
        }
    }

    /// Swaps in a set built from more values; only `RunSecrets::refresh` calls this.
    pub(crate) fn replace_set(&self, set: ScrubSet) {
        let mut guard = self.set.write().unwrap_or_else(PoisonError::into_inner);
        *guard = Arc::new(set);
    }

    pub(crate) fn current_set(&self) -> Arc<ScrubSet> {
        Arc::clone(&self.set.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn run_id_arc(&self) -> Arc<str> {
        Arc::clone(&self.run_id)
    }

    /// A redactor for records not tied to a run (the audit of a vault write, a sign-in), built
    /// from every current value of the account; its run id is `account:<id>`.
    pub fn for_account(account_id: &str, source: &dyn SecretSource) -> Result<Redactor, Error> {
        let run_id = format!("{ACCOUNT_RUN_ID_PREFIX}{account_id}");
        let values = source
            .current_values(account_id)
            .map_err(|source: SourceError| Error::Source {
                run_id: run_id.clone(),
                account_id: account_id.to_owned(),
                source,
            })?;
        let set = ScrubSet::build(
            &run_id,
            values.iter().map(|value| value.dangerously_expose()),
        )?;
        Ok(Self::from_set(Arc::from(run_id), set))
    }

    /// The run this redactor scrubs for (`account:<id>` for an account redactor).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `text` with every form of every value replaced by [`MASK`].
    pub fn scrub(&self, text: &str) -> Redacted<String> {
        Redacted::scrubbed(self.scrub_to_string(text), self.run_id_arc())
    }

    pub(crate) fn scrub_to_string(&self, text: &str) -> String {
        scrub_text(&self.current_set(), text)
    }

    /// Scrubs first, then cuts to at most `max_bytes` on a character boundary, so a cut can
    /// never leave the first half of a value that scrubbing would have recognised whole. A cut
    /// that would fall inside a mask drops the whole mask instead of leaving `[REDA`.
    pub fn scrub_truncated(&self, text: &str, max_bytes: usize) -> Redacted<String> {
        let spans = self.current_set().masked_spans(text.as_bytes());
        truncate_masked(text, &spans, max_bytes, self.run_id_arc())
    }

    /// For text that something before the redactor may have cut at its end (a sandbox's cap on
    /// printed output): as [`Redactor::scrub_truncated`], and a tail that is the beginning of a
    /// form of a value (at least [`crate::MIN_ENCODED_VALUE_BYTES`] long) is masked too, so a
    /// value cut in half upstream leaves no half behind.
    pub fn scrub_cut_truncated(&self, text: &str, max_bytes: usize) -> Redacted<String> {
        let set = self.current_set();
        let mut spans = set.masked_spans(text.as_bytes());
        if let Some(start) = set.dangling_form_start(text.as_bytes())
            && text.is_char_boundary(start)
        {
            // Spans are sorted and merged: the tail joins the last one or comes after it.
            match spans.last_mut() {
                Some(last) if start <= last.end => last.end = text.len(),
                _ => spans.push(start..text.len()),
            }
        }
        truncate_masked(text, &spans, max_bytes, self.run_id_arc())
    }

    /// `bytes` (a written file, output that is not UTF-8) with every form of every value
    /// replaced by [`MASK`]; the bytes around the matches are kept as they are.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Redacted<Vec<u8>> {
        let spans = self.current_set().masked_spans(bytes);
        let mut scrubbed = Vec::with_capacity(bytes.len());
        let mut copied_up_to = 0;
        for span in &spans {
            scrubbed.extend_from_slice(bytes.get(copied_up_to..span.start).unwrap_or_default());
            scrubbed.extend_from_slice(MASK.as_bytes());
            copied_up_to = span.end;
        }
        scrubbed.extend_from_slice(bytes.get(copied_up_to..).unwrap_or_default());
        Redacted::scrubbed(scrubbed, self.run_id_arc())
    }

    /// Every key and every string, recursively; a number whose text holds a value becomes the
    /// string [`MASK`]. Strings are scrubbed after JSON parsing, so a value written with escapes
    /// (`\u0041`, `\/`) in the original document is matched in its decoded form. Two keys that
    /// scrub to the same text are kept apart with a `#2`, `#3`... suffix rather than merged.
    pub fn scrub_json(&self, value: &Value) -> Redacted<Value> {
        let set = self.current_set();
        Redacted::scrubbed(scrub_json_value(&set, value), self.run_id_arc())
    }

    /// Whether any form of any value occurs in `bytes`.
    pub fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.current_set().holds_secret(bytes)
    }

    /// A scrubber for output that arrives in chunks; it uses the values known now.
    pub fn stream(&self) -> StreamScrubber {
        StreamScrubber::new(self.current_set(), self.run_id_arc())
    }
}

/// `text` with `spans` masked, then cut to at most `max_bytes` on a character boundary and
/// never inside a mask.
fn truncate_masked(
    text: &str,
    spans: &[std::ops::Range<usize>],
    max_bytes: usize,
    run_id: Arc<str>,
) -> Redacted<String> {
    let mut scrubbed = replace_spans(text, spans);
    if scrubbed.len() > max_bytes {
        let mut cut = max_bytes;
        while !scrubbed.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(mask_start) = mask_starts_in_output(spans)
            .into_iter()
            .find(|mask_start| *mask_start < cut && cut < mask_start + MASK.len())
        {
            cut = mask_start;
        }
        scrubbed.truncate(cut);
    }
    Redacted::scrubbed(scrubbed, run_id)
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

fn scrub_text(set: &ScrubSet, text: &str) -> String {
    let spans = set.masked_spans(text.as_bytes());
    if spans.is_empty() {
        text.to_owned()
    } else {
        replace_spans(text, &spans)
    }
}

fn scrub_json_value(set: &ScrubSet, value: &Value) -> Value {
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
