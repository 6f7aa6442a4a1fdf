//! The per-run secret set, scrubbing of every encoding, Redacted<T>, forbidden input keys at run time.

#![forbid(unsafe_code)]
