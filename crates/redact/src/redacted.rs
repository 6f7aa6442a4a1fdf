//! `Redacted<T>`: a value that went through a run's redactor, and can only be made by one.

use std::fmt;
use std::sync::Arc;

use crate::error::Error;

/// Only made by scrubbing; cannot be built, mutated or re-wrapped from outside.
///
/// Deliberately absent: a public constructor, `Deserialize`, `Default`, `DerefMut`, `From<T>`,
/// and any `get_mut`/`map`: once unwrapped with [`Redacted::into_inner`] a value cannot come back.
#[derive(Clone, Debug, PartialEq)]
pub struct Redacted<T> {
    value: T,
    run_id: Arc<str>,
}

impl<T> Redacted<T> {
    /// Crate-private on purpose: the only callers are the scrubbing functions.
    pub(crate) fn scrubbed(value: T, run_id: Arc<str>) -> Self {
        Self { value, run_id }
    }

    /// The scrubbed value.
    pub fn get(&self) -> &T {
        &self.value
    }

    /// The run whose redactor scrubbed this value (`account:<id>` for account redactors).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Gives the value up; there is no way to wrap it again without scrubbing it again.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The value, if it was scrubbed for `expected_run_id`; a writer for one run calls this so a
    /// value scrubbed with another run's secrets is an error instead of a silent leak.
    pub fn check_run(&self, expected_run_id: &str) -> Result<&T, Error> {
        if &*self.run_id == expected_run_id {
            Ok(&self.value)
        } else {
            Err(Error::ForeignRun {
                expected: expected_run_id.to_owned(),
                found: self.run_id.to_string(),
            })
        }
    }
}

impl Redacted<String> {
    /// The scrubbed text.
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl<T: fmt::Display> fmt::Display for Redacted<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(formatter)
    }
}

/// Serializing only writes out what was already scrubbed (API responses, event payloads);
/// the reverse (`Deserialize`) is deliberately absent.
impl<T: serde::Serialize> serde::Serialize for Redacted<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}
