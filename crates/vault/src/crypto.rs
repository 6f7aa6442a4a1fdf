//! The AEAD layer: random bytes, 32-byte keys that zeroize and derive nothing, sealing and
//! opening under XChaCha20-Poly1305 with length-prefixed associated data.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

use crate::error::Error;

/// Length of every key of the scheme.
pub(crate) const KEY_LEN: usize = 32;
/// Length of an XChaCha20-Poly1305 nonce.
pub(crate) const NONCE_LEN: usize = 24;

/// Labels that start every associated data, one per layer (see the crate docs).
pub(crate) const KEY_CHECK_LABEL: &[u8] = b"stepward/vault/key-check/v1";
pub(crate) const ACCOUNT_KEY_LABEL: &[u8] = b"stepward/vault/account-key/v1";
pub(crate) const VALUE_LABEL: &[u8] = b"stepward/vault/value/v1";
/// The plaintext of the key check value.
pub(crate) const KEY_CHECK_PLAINTEXT: &[u8] = b"stepward vault root key check v1";

/// Fills a buffer from the operating system's random source.
pub(crate) fn random_bytes(buffer: &mut [u8]) -> Result<(), Error> {
    getrandom::fill(buffer).map_err(|source| Error::Random {
        detail: source.to_string(),
    })
}

/// A random id as 32 lower-case hexadecimal characters (16 random bytes).
pub(crate) fn random_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// Encodes associated data: each part as its length (u64, big-endian) then its bytes.
pub(crate) fn associated_data(parts: &[&[u8]]) -> Vec<u8> {
    let total: usize = parts.iter().map(|part| 8 + part.len()).sum();
    let mut encoded = Vec::with_capacity(total);
    for part in parts {
        encoded.extend_from_slice(&(part.len() as u64).to_be_bytes());
        encoded.extend_from_slice(part);
    }
    encoded
}

/// A nonce and the ciphertext (with its tag) it produced.
pub(crate) struct Sealed {
    pub(crate) nonce: Vec<u8>,
    pub(crate) ciphertext: Vec<u8>,
}

/// A 32-byte symmetric key (root key or account key). Derives nothing and zeroizes on drop.
pub(crate) struct KeyBytes {
    bytes: Zeroizing<[u8; KEY_LEN]>,
}

impl KeyBytes {
    /// A fresh random key.
    pub(crate) fn generate() -> Result<KeyBytes, Error> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        random_bytes(bytes.as_mut())?;
        Ok(KeyBytes { bytes })
    }

    /// A key from exactly 32 bytes.
    pub(crate) fn from_slice(slice: &[u8]) -> Option<KeyBytes> {
        if slice.len() != KEY_LEN {
            return None;
        }
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        bytes.copy_from_slice(slice);
        Some(KeyBytes { bytes })
    }

    /// The key as 64 lower-case hexadecimal characters, the format of key files.
    pub(crate) fn dangerously_to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.bytes.as_ref()))
    }

    /// The raw key bytes, for wrapping this key under another.
    pub(crate) fn dangerously_as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// Whether two keys are equal, in time independent of where they differ.
    pub(crate) fn same_key_as(&self, other: &KeyBytes) -> bool {
        let difference = self
            .bytes
            .iter()
            .zip(other.bytes.iter())
            .fold(0u8, |accumulated, (left, right)| {
                accumulated | (left ^ right)
            });
        difference == 0
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(Key::from_slice(self.bytes.as_ref()))
    }

    /// Encrypts `plaintext` under a fresh random nonce, binding `associated_data`.
    pub(crate) fn seal(&self, plaintext: &[u8], associated_data: &[u8]) -> Result<Sealed, Error> {
        let mut nonce = [0u8; NONCE_LEN];
        random_bytes(&mut nonce)?;
        let ciphertext = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: associated_data,
                },
            )
            .map_err(|_| Error::Encrypt)?;
        Ok(Sealed {
            nonce: nonce.to_vec(),
            ciphertext,
        })
    }

    /// Decrypts and authenticates; `None` when the key, nonce, ciphertext or associated data
    /// is not the one it was sealed with.
    pub(crate) fn open(
        &self,
        nonce: &[u8],
        ciphertext: &[u8],
        associated_data: &[u8],
    ) -> Option<Zeroizing<Vec<u8>>> {
        if nonce.len() != NONCE_LEN {
            return None;
        }
        self.cipher()
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: associated_data,
                },
            )
            .ok()
            .map(Zeroizing::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g20_associated_data_is_length_prefixed_so_parts_cannot_shift() {
        let split_one = associated_data(&[b"ab", b"c"]);
        let split_two = associated_data(&[b"a", b"bc"]);
        assert_ne!(split_one, split_two);
    }

    #[test]
    fn g20_open_refuses_other_associated_data_and_other_keys() {
        let key = KeyBytes::generate().unwrap();
        let other = KeyBytes::generate().unwrap();
        let sealed = key.seal(b"value", b"here").unwrap();
        assert_eq!(
            key.open(&sealed.nonce, &sealed.ciphertext, b"here")
                .unwrap()
                .as_slice(),
            b"value"
        );
        assert!(
            key.open(&sealed.nonce, &sealed.ciphertext, b"there")
                .is_none()
        );
        assert!(
            other
                .open(&sealed.nonce, &sealed.ciphertext, b"here")
                .is_none()
        );
        assert!(
            key.open(&sealed.nonce[..12], &sealed.ciphertext, b"here")
                .is_none()
        );
        assert!(key.same_key_as(&KeyBytes::from_slice(key.bytes.as_ref()).unwrap()));
        assert!(!key.same_key_as(&other));
    }

    #[test]
    fn g20_every_seal_uses_a_fresh_nonce() {
        let key = KeyBytes::generate().unwrap();
        let first = key.seal(b"same", b"ad").unwrap();
        let second = key.seal(b"same", b"ad").unwrap();
        assert_ne!(first.nonce, second.nonce);
        assert_ne!(first.ciphertext, second.ciphertext);
    }
}
