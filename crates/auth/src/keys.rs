//! The 32-byte server keys of this crate (the approve-link signing key and the CSRF key): held
//! in zeroizing memory, deriving nothing, written to and read from their own key files.
//!
//! A key file is one line: `<label> <key id, 16 hex> <key, 64 hex>`. Each kind of key has its
//! own label, so a CSRF key file cannot be loaded as an approve-link key and neither can be
//! mistaken for a vault key.

use hmac::Hmac;
use hmac::digest::KeyInit;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::Error;
use crate::random::random_bytes;

/// A key's public id, carried in what the key signs, so that a rotated-out key is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; 8]);

impl KeyId {
    /// The id as 16 lowercase hexadecimal characters.
    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }

    /// Parses 16 lowercase hexadecimal characters (only one spelling per id, so a token has
    /// only one spelling too).
    pub fn from_hex(text: &str) -> Option<KeyId> {
        let is_lower_hex = text
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        if text.len() != 16 || !is_lower_hex {
            return None;
        }
        let mut bytes = [0_u8; 8];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(KeyId(bytes))
    }
}

/// The secret half of a server key. Derives nothing; zeroized on drop.
pub(crate) struct SecretKey {
    pub(crate) key_id: KeyId,
    bytes: Zeroizing<[u8; 32]>,
}

impl SecretKey {
    pub(crate) fn generate(purpose: &'static str) -> Result<SecretKey, Error> {
        Ok(SecretKey {
            key_id: KeyId(random_bytes(purpose)?),
            bytes: Zeroizing::new(random_bytes(purpose)?),
        })
    }

    /// A fresh HMAC-SHA256 keyed with this key. HMAC pads a key shorter than the hash's
    /// 64-byte block with zeros, so keying it with the 64-byte zero-padded key is the same
    /// function, and this way cannot fail (a unit test compares both).
    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        let mut block = Zeroizing::new([0_u8; 64]);
        block[..32].copy_from_slice(self.bytes.as_slice());
        <Hmac<Sha256> as KeyInit>::new(&(*block).into())
    }

    pub(crate) fn encode_key_file(&self, label: &str) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "{label} {} {}\n",
            self.key_id.to_hex(),
            hex::encode(self.bytes.as_slice())
        ))
    }

    pub(crate) fn decode_key_file(
        text: &str,
        label: &str,
        kind: &'static str,
    ) -> Result<SecretKey, Error> {
        let malformed = |reason| Error::KeyFileMalformed { kind, reason };
        let mut parts = text.trim_end_matches('\n').split(' ');
        if parts.next() != Some(label) {
            return Err(malformed("it does not start with this kind of key's label"));
        }
        let key_id = parts
            .next()
            .and_then(KeyId::from_hex)
            .ok_or_else(|| malformed("the key id is not 16 hexadecimal characters"))?;
        let key_hex = parts
            .next()
            .ok_or_else(|| malformed("the key is missing"))?;
        if parts.next().is_some() {
            return Err(malformed("there is text after the key"));
        }
        let mut bytes = Zeroizing::new([0_u8; 32]);
        if key_hex.len() != 64 || hex::decode_to_slice(key_hex, bytes.as_mut_slice()).is_err() {
            return Err(malformed("the key is not 64 hexadecimal characters"));
        }
        Ok(SecretKey { key_id, bytes })
    }
}

#[cfg(test)]
mod tests {
    use hmac::Mac;

    use super::*;

    #[test]
    fn padded_key_gives_the_same_mac_as_the_plain_key() {
        let key = SecretKey::generate("a test key").unwrap();
        let mut padded = key.mac();
        padded.update(b"message");
        let mut plain = <Hmac<Sha256> as Mac>::new_from_slice(key.bytes.as_slice()).unwrap();
        plain.update(b"message");
        assert_eq!(
            padded.finalize().into_bytes(),
            plain.finalize().into_bytes()
        );
    }

    #[test]
    fn key_file_round_trips_and_labels_do_not_mix() {
        let key = SecretKey::generate("a test key").unwrap();
        let text = key.encode_key_file("label-one");
        let back = SecretKey::decode_key_file(&text, "label-one", "test").unwrap();
        assert_eq!(back.key_id, key.key_id);
        assert_eq!(*back.bytes, *key.bytes);
        assert!(SecretKey::decode_key_file(&text, "label-two", "test").is_err());
    }
}
