//! `Redacted<T>`: a value that went through a run's redactor, and can only be made by one.

use crate::error::Error;
use crate::scope::Scope;
use std::fmt;

/// Only made by scrubbing; cannot be built, mutated or re-wrapped from outside.
///
/// Deliberately absent: a public constructor, `Deserialize`, `Default`, `DerefMut`, `From<T>`,
/// and any `get_mut`/`map`: once unwrapped with [`Redacted::into_inner`] a value cannot come back.
#[derive(Clone, Debug, PartialEq)]
pub struct Redacted<T> {
    value: T,
    scope: Scope,
}

impl<T> Redacted<T> {
    /// Crate-private on purpose: the only callers are the scrubbing functions.
    pub(crate) fn scrubbed(value: T, scope: Scope) -> Self {
        Self { value, scope }
    }

    /// The scrubbed value.
    pub fn get(&self) -> &T {
        &self.value
    }

    /// Whose values this was scrubbed with: a run's, or an account's.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Gives the value up; there is no way to wrap it again without scrubbing it again.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The value, if it was scrubbed for `expected`; a writer for one run (or account) calls
    /// this so a value scrubbed for another is an error instead of a silent leak.
    pub fn check_scope(&self, expected: &Scope) -> Result<&T, Error> {
        if &self.scope == expected {
            Ok(&self.value)
        } else {
            Err(Error::ForeignScope {
                expected: expected.clone(),
                found: self.scope.clone(),
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

/// A record type with free-text fields (a person's display name inside an actor, say) that a
/// [`crate::Redactor`] can scrub: [`crate::Redactor::scrub_fields`] hands every text field to
/// `scrub` and wraps the result as `Redacted<Self>`. The one implementation sits beside the
/// type, so no writer decides which of its fields need scrubbing.
pub trait ScrubFields: Sized {
    /// `self` with every free-text field replaced by what `scrub` makes of it.
    fn scrub_fields(self, scrub: &dyn Fn(&str) -> String) -> Self;
}
