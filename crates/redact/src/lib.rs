//! The per-run secret set, scrubbing of every encoding, and `Redacted<T>` (guarantees G16, G17).
//!
//! A run's credentials are collected once into [`RunSecrets`], which can only be built from a
//! [`SecretSource`] (the vault) and carries the run's id. Its [`Redactor`] scrubs with the run's
//! own values and with every value of the run's account ([`ScrubSets`], checked against the
//! vault's generation before each use, so a value set by another process is scrubbed from the
//! next write on). It removes every value in every form a program is likely to print it in (raw,
//! base64 at every byte alignment, hex, URL-encoding, JSON escaping, each line of a multi-line
//! value, split across stream chunks).
//! What comes out is a [`Redacted<T>`], which nothing outside this crate can build, so a durable
//! writer that takes `Redacted<T>` cannot be handed text that skipped scrubbing.
//!
//! The types are defined in modules and re-exported here because the cross-crate contract names
//! them at the crate root (`redact::Redactor`, `redact::Redacted`, ...).

#![forbid(unsafe_code)]

mod block_filter;
mod error;
mod escapes;
mod formats;
mod live;
mod logging;
mod patterns;
mod redacted;
mod redactor;
mod run_secrets;
mod scope;
mod scrub_set;
mod secret;
mod stream;
#[cfg(feature = "testing")]
pub mod testing;
mod wrapped;

pub use crate::error::Error;
pub use crate::live::ScrubSets;
pub use crate::logging::{
    ScrubRegistration, ScrubRegistry, ScrubbingLogWriter, ScrubbingWriter, install_panic_hook,
    install_panic_hook_with_sink,
};
pub use crate::patterns::{MIN_ENCODED_VALUE_BYTES, MIN_LINE_BYTES};
pub use crate::redacted::{Redacted, ScrubFields};
pub use crate::redactor::Redactor;
pub use crate::run_secrets::RunSecrets;
pub use crate::scope::Scope;
pub use crate::secret::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};
pub use crate::stream::StreamScrubber;

/// What every scrubbed value is replaced with.
pub const MASK: &str = "[REDACTED]";

/// What ends a text that was cut, so that it never joins what follows into a value.
pub const CUT_MARK: &str = "[cut]";

/// What a whole text is replaced with when the account's values cannot be read to scrub it
/// (fail closed: nothing unchecked is written).
pub const UNREADABLE_MASK: &str = "[REDACTED: the vault could not be read to scrub this]";
