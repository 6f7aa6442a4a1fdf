//! Passwords: argon2id hashes in PHC string format, and the length rule for new passwords.
//!
//! Parameters (the OWASP recommendation for argon2id, and the `argon2` crate's defaults, set
//! here explicitly so a change of the crate's defaults changes nothing): memory 19 MiB
//! (`m = 19456` KiB), 2 passes (`t = 2`), 1 lane (`p = 1`), 32-byte output, 16-byte random
//! salt, version 0x13. Stored as `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`; verification
//! reads the parameters from the stored string, so hashes made with older parameters still
//! verify after a change here.
//!
//! Length rule: at least [`MIN_PASSWORD_CHARS`] characters (counted as Unicode scalar values,
//! not bytes), at most [`MAX_PASSWORD_CHARS`] (which bounds the work one sign-in can cost). No
//! composition rules: length is what makes a password strong.

use argon2::password_hash::{PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::Error;
use crate::random::random_bytes;

/// The fewest characters a new password may have.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The most characters a new password may have.
pub const MAX_PASSWORD_CHARS: usize = 1024;

const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
const LANES: u32 = 1;
const OUTPUT_BYTES: usize = 32;

/// A stored password hash: an argon2id PHC string. Holds no secret a person typed, so it may be
/// cloned and stored, but it is still not shown.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("PasswordHash(argon2id)")
    }
}

impl PasswordHash {
    /// The PHC string to store.
    pub fn as_phc_str(&self) -> &str {
        &self.0
    }

    /// A hash read back from storage. Its shape is checked when it is verified.
    pub fn from_phc_string(text: String) -> PasswordHash {
        PasswordHash(text)
    }
}

fn hasher() -> Result<Argon2<'static>, Error> {
    let params = Params::new(MEMORY_KIB, PASSES, LANES, Some(OUTPUT_BYTES)).map_err(|source| {
        Error::PasswordHashing {
            source: source.into(),
        }
    })?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Checks the length rule for a new password.
pub fn check_new_password(password: &str) -> Result<(), Error> {
    let actual = password.chars().count();
    if actual < MIN_PASSWORD_CHARS {
        return Err(Error::PasswordTooShort {
            minimum: MIN_PASSWORD_CHARS,
            actual,
        });
    }
    if actual > MAX_PASSWORD_CHARS {
        return Err(Error::PasswordTooLong {
            maximum: MAX_PASSWORD_CHARS,
            actual,
        });
    }
    Ok(())
}

/// Hashes a new password (after [`check_new_password`]) with argon2id and a fresh salt.
pub fn hash_password(password: &str) -> Result<PasswordHash, Error> {
    check_new_password(password)?;
    let salt_bytes: [u8; 16] = random_bytes("a password salt")?;
    let salt =
        SaltString::encode_b64(&salt_bytes).map_err(|source| Error::PasswordHashing { source })?;
    let hash = hasher()?
        .hash_password(password.as_bytes(), &salt)
        .map_err(|source| Error::PasswordHashing { source })?;
    Ok(PasswordHash(hash.to_string()))
}

/// Checks a candidate password against a stored hash, in constant time (argon2's output
/// comparison). Only argon2id hashes are accepted. A wrong password is
/// [`Error::PasswordMismatch`]; the candidate's length is not checked, so a person whose
/// password predates a change of the rule can still sign in.
pub fn verify_password(candidate: &str, stored: &PasswordHash) -> Result<(), Error> {
    let parsed = argon2::password_hash::PasswordHash::new(&stored.0)
        .map_err(|source| Error::PasswordHashUnusable { source })?;
    if parsed.algorithm != Algorithm::Argon2id.ident() {
        return Err(Error::PasswordHashAlgorithm {
            algorithm: parsed.algorithm.to_string(),
        });
    }
    if candidate.chars().count() > MAX_PASSWORD_CHARS {
        return Err(Error::PasswordMismatch);
    }
    match hasher()?.verify_password(candidate.as_bytes(), &parsed) {
        Ok(()) => Ok(()),
        Err(argon2::password_hash::Error::Password) => Err(Error::PasswordMismatch),
        Err(source) => Err(Error::PasswordHashUnusable { source }),
    }
}

/// Spends the time a verification takes, for a sign-in naming no known person, so that the
/// answer's timing does not tell which people exist. Always [`Error::PasswordMismatch`] (or a
/// hashing failure).
pub fn verify_password_for_unknown_person(candidate: &str) -> Result<(), Error> {
    let salt =
        SaltString::encode_b64(&[0_u8; 16]).map_err(|source| Error::PasswordHashing { source })?;
    let bounded: String = candidate.chars().take(MAX_PASSWORD_CHARS).collect();
    hasher()?
        .hash_password(bounded.as_bytes(), &salt)
        .map_err(|source| Error::PasswordHashing { source })?;
    Err(Error::PasswordMismatch)
}
