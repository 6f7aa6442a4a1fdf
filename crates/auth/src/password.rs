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
//!
//! Working memory: each hash needs its 19 MiB. [`PasswordMemory`] holds it so that a thread
//! doing many checks reuses one buffer instead of allocating 19 MiB each time (the allocator
//! keeps freed buffers of that size per thread arena, so fresh ones add up; the server runs its
//! checks on a few threads, each with its own [`PasswordMemory`]). The `*_with` functions take
//! it; the plain ones make a fresh one per call.

use argon2::password_hash::{Output, ParamsString, Salt, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};

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

/// The working memory of argon2id, reused from one hash to the next. Holds no secret after a
/// hash has returned that outlives the next hash (each hash overwrites the blocks it uses).
#[derive(Default)]
pub struct PasswordMemory {
    blocks: Vec<Block>,
}

impl std::fmt::Debug for PasswordMemory {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "PasswordMemory({} blocks)", self.blocks.len())
    }
}

impl PasswordMemory {
    /// No memory yet; the first hash allocates it.
    pub fn new() -> PasswordMemory {
        PasswordMemory::default()
    }

    /// The blocks `params` need: the buffer kept, or a new one when the size differs (a hash
    /// stored with other parameters).
    fn blocks_for(&mut self, params: &Params) -> &mut [Block] {
        let needed = params.block_count();
        if self.blocks.len() != needed {
            self.blocks = vec![Block::default(); needed];
        }
        &mut self.blocks
    }
}

/// argon2 of `password` under `salt`, in `memory`, as argon2's own `PasswordHasher` computes it
/// (the salt's decoded bytes, the parameters' output length).
fn raw_hash(
    argon: &Argon2<'_>,
    memory: &mut PasswordMemory,
    password: &[u8],
    salt: Salt<'_>,
) -> Result<Output, Error> {
    let mut salt_buffer = [0_u8; 64];
    let salt_bytes = salt
        .decode_b64(&mut salt_buffer)
        .map_err(|source| Error::PasswordHashing { source })?;
    let length = argon
        .params()
        .output_len()
        .unwrap_or(Params::DEFAULT_OUTPUT_LEN);
    let blocks = memory.blocks_for(argon.params());
    Output::init_with(length, |out| {
        argon
            .hash_password_into_with_memory(password, salt_bytes, out, &mut *blocks)
            .map_err(Into::into)
    })
    .map_err(|source| Error::PasswordHashing { source })
}

/// Hashes a new password (after [`check_new_password`]) with argon2id and a fresh salt.
pub fn hash_password(password: &str) -> Result<PasswordHash, Error> {
    hash_password_with(&mut PasswordMemory::new(), password)
}

/// As [`hash_password`], in `memory`.
pub fn hash_password_with(
    memory: &mut PasswordMemory,
    password: &str,
) -> Result<PasswordHash, Error> {
    check_new_password(password)?;
    let salt_bytes: [u8; 16] = random_bytes("a password salt")?;
    let salt =
        SaltString::encode_b64(&salt_bytes).map_err(|source| Error::PasswordHashing { source })?;
    let argon = hasher()?;
    let output = raw_hash(&argon, memory, password.as_bytes(), salt.as_salt())?;
    let hash = argon2::password_hash::PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon.params())
            .map_err(|source| Error::PasswordHashing { source })?,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(PasswordHash(hash.to_string()))
}

/// Checks a candidate password against a stored hash, in constant time (argon2's output
/// comparison). Only argon2id hashes are accepted. A wrong password is
/// [`Error::PasswordMismatch`]; the candidate's length is not checked, so a person whose
/// password predates a change of the rule can still sign in.
pub fn verify_password(candidate: &str, stored: &PasswordHash) -> Result<(), Error> {
    verify_password_with(&mut PasswordMemory::new(), candidate, stored)
}

/// As [`verify_password`], in `memory`.
pub fn verify_password_with(
    memory: &mut PasswordMemory,
    candidate: &str,
    stored: &PasswordHash,
) -> Result<(), Error> {
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
    let unusable = |source| Error::PasswordHashUnusable { source };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(unusable(argon2::password_hash::Error::PhcStringField));
    };
    // The parameters (the output length included) and the version are the stored hash's.
    let params = Params::try_from(&parsed).map_err(unusable)?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(|source| unusable(source.into()))?
        .unwrap_or_default();
    let argon = Argon2::new(Algorithm::Argon2id, version, params);
    let computed = raw_hash(&argon, memory, candidate.as_bytes(), salt)?;
    // `Output`'s equality is constant-time.
    if computed == expected {
        Ok(())
    } else {
        Err(Error::PasswordMismatch)
    }
}

/// Spends the time a verification takes, for a sign-in naming no known person, so that the
/// answer's timing does not tell which people exist. Always [`Error::PasswordMismatch`] (or a
/// hashing failure).
pub fn verify_password_for_unknown_person(candidate: &str) -> Result<(), Error> {
    verify_password_for_unknown_person_with(&mut PasswordMemory::new(), candidate)
}

/// As [`verify_password_for_unknown_person`], in `memory`.
pub fn verify_password_for_unknown_person_with(
    memory: &mut PasswordMemory,
    candidate: &str,
) -> Result<(), Error> {
    let salt =
        SaltString::encode_b64(&[0_u8; 16]).map_err(|source| Error::PasswordHashing { source })?;
    let bounded: String = candidate.chars().take(MAX_PASSWORD_CHARS).collect();
    raw_hash(&hasher()?, memory, bounded.as_bytes(), salt.as_salt())?;
    Err(Error::PasswordMismatch)
}
