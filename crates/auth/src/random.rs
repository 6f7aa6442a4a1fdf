//! Random bytes from the operating system, and the length-prefixed encoding every MAC and hash
//! of this crate uses.

use crate::Error;

/// Fills an array with random bytes, or fails: a failed generator never yields a weak value.
pub(crate) fn random_bytes<const N: usize>(purpose: &'static str) -> Result<[u8; N], Error> {
    let mut bytes = [0_u8; N];
    getrandom::fill(&mut bytes).map_err(|source| Error::Randomness { purpose, source })?;
    Ok(bytes)
}

/// Appends one field as its length (u32, big-endian) followed by its bytes. With every field
/// prefixed so, no two different lists of fields encode alike ("ab" + "c" differs from
/// "a" + "bc"), so a MAC over the encoding binds each field separately.
pub(crate) fn push_length_prefixed(
    out: &mut Vec<u8>,
    field: &'static str,
    bytes: &[u8],
) -> Result<(), Error> {
    let length = u32::try_from(bytes.len()).map_err(|_| Error::FieldTooLong {
        field,
        length: bytes.len(),
    })?;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}
