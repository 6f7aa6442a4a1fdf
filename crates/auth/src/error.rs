//! The one error type of the auth crate. No variant ever carries a secret: no password, token,
//! key or MAC, only what failed and why.
//!
//! Outcomes that are *answers* rather than failures have their own small types, because the
//! server maps each of them to one HTTP answer: [`crate::Denied`] (a role rule says no),
//! [`crate::LinkError`] (an approve link does not verify), [`crate::Malformed`] (a token is not
//! of the expected shape). Each converts into
//! [`Error`] where a caller wants one type.

/// What an auth call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system's random number generator failed; nothing was generated, so no
    /// weak token, key or salt can come out of this crate.
    #[error("the system random number generator failed while generating {purpose}")]
    Randomness {
        purpose: &'static str,
        #[source]
        source: getrandom::Error,
    },
    /// A field bound into a MAC is longer than its 32-bit length prefix can say.
    #[error("the {field} is {length} bytes long, more than a 32-bit length prefix can encode")]
    FieldTooLong { field: &'static str, length: usize },
    /// A new password is shorter than the minimum.
    #[error(
        "a password needs at least {minimum} characters; this one has {actual}. A longer \
         phrase of ordinary words is easier to remember and harder to guess"
    )]
    PasswordTooShort { minimum: usize, actual: usize },
    /// A new password is longer than the maximum (which bounds the hashing work per request).
    #[error("a password can have at most {maximum} characters; this one has {actual}")]
    PasswordTooLong { maximum: usize, actual: usize },
    /// The password does not match the stored hash (or there was no person to match).
    #[error("the password does not match")]
    PasswordMismatch,
    /// A stored password hash is not an argon2id PHC string this crate can check.
    #[error("the stored password hash cannot be used")]
    PasswordHashUnusable {
        #[source]
        source: argon2::password_hash::Error,
    },
    /// A stored password hash uses another algorithm than argon2id.
    #[error("the stored password hash uses the algorithm `{algorithm}`, not argon2id")]
    PasswordHashAlgorithm { algorithm: String },
    /// Hashing a password failed inside argon2 (invalid parameters or salt).
    #[error("hashing the password failed")]
    PasswordHashing {
        #[source]
        source: argon2::password_hash::Error,
    },
    /// A key file's text is not the format this crate writes.
    #[error("the {kind} key file is malformed: {reason}")]
    KeyFileMalformed {
        kind: &'static str,
        reason: &'static str,
    },
    /// A role rule refused the operation.
    #[error(transparent)]
    Denied(#[from] crate::Denied),
    /// An approve link did not verify.
    #[error(transparent)]
    Link(#[from] crate::LinkError),
    /// A token or key text is not of the expected shape.
    #[error(transparent)]
    Malformed(#[from] crate::Malformed),
}
