//! Approve links (G24): a token derived from the gate it decides, never stored.
//!
//! The token is `v1.<key id>.<mac>` where `<key id>` is the signing key's id (16 hex) and
//! `<mac>` is the unpadded base64url of HMAC-SHA256, under the approve-link signing key, over
//! these fields, each as its length (u32, big-endian) followed by its bytes:
//! `("stepward/approve-link/v1", account, run, step, attempt as u32 big-endian)`.
//! The length prefixes make the encoding unambiguous ("ab" + "c" is not "a" + "bc"), the label
//! keeps these MACs apart from every other MAC of the system.
//!
//! The fields are one [`storage::GateRef`], the gate as the engine derives it (its account,
//! run, step and the attempt its decision is recorded against), never four loose strings.
//!
//! The signing key is an [`ApproveLinkKey`], its own type with its own key file, never a vault
//! key. The server holds the current key in a [`KeyRing`]; rotating the ring drops the old key,
//! so every link made under it stops verifying. Nothing here returns anything to store: the
//! server recomputes the token from the gate when it sends a link, and checks a presented one
//! with [`verify_approve_token`], in constant time.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use storage::GateRef;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::Error;
use crate::keys::{KeyId, SecretKey};
use crate::random::push_length_prefixed;

const TOKEN_VERSION: &str = "v1";
const MAC_LABEL: &[u8] = b"stepward/approve-link/v1";
const KEY_FILE_LABEL: &str = "stepward-approve-link-key-v1";
/// 32 MAC bytes in unpadded base64url.
const MAC_TEXT_LENGTH: usize = 43;

/// The signing key of approve links: 32 random bytes and a public id. Derives nothing; zeroized
/// on drop; kept apart from the vault's keys, in its own file.
pub struct ApproveLinkKey {
    secret: SecretKey,
}

impl ApproveLinkKey {
    /// A new random key with a new random id.
    pub fn generate() -> Result<ApproveLinkKey, Error> {
        Ok(ApproveLinkKey {
            secret: SecretKey::generate("an approve-link signing key")?,
        })
    }

    /// The key's public id, carried in every token it signs.
    pub fn key_id(&self) -> KeyId {
        self.secret.key_id
    }

    /// The text of this key's own key file (write it with mode 0600). The only way the key's
    /// bytes leave this type.
    pub fn dangerously_encode_key_file(&self) -> Zeroizing<String> {
        self.secret.encode_key_file(KEY_FILE_LABEL)
    }

    /// Reads a key back from the text [`ApproveLinkKey::dangerously_encode_key_file`] wrote.
    pub fn decode_key_file(text: &str) -> Result<ApproveLinkKey, Error> {
        Ok(ApproveLinkKey {
            secret: SecretKey::decode_key_file(text, KEY_FILE_LABEL, "approve-link")?,
        })
    }
}

/// The approve-link keys that verify: only the current one. Rotating replaces it, so links made
/// under the old key die at once.
pub struct KeyRing {
    current: ApproveLinkKey,
}

impl KeyRing {
    /// A ring holding `current`.
    pub fn new(current: ApproveLinkKey) -> KeyRing {
        KeyRing { current }
    }

    /// The key new links are made with.
    pub fn current(&self) -> &ApproveLinkKey {
        &self.current
    }

    /// Replaces the key with `new_key` and drops (zeroizes) the old one: every link made under
    /// the old key stops verifying.
    pub fn rotate(&mut self, new_key: ApproveLinkKey) {
        self.current = new_key;
    }

    fn find(&self, key_id: KeyId) -> Option<&ApproveLinkKey> {
        (self.current.key_id() == key_id).then_some(&self.current)
    }
}

/// Why an approve-link token does not verify. The server answers every one of them with the
/// same not-found page; the variants are for its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Not a token of this format (version, key id, MAC length or alphabet).
    #[error("the approve link is malformed")]
    Malformed,
    /// Signed by a key the ring no longer holds: the key was rotated.
    #[error("the approve link was signed by a key that has been rotated out")]
    UnknownKey,
    /// The MAC does not match this gate: tampered, or for another account, run, step or attempt.
    #[error("the approve link does not match this gate")]
    Mismatch,
}

fn compute_mac(key: &ApproveLinkKey, gate: &GateRef) -> Result<[u8; 32], Error> {
    let (account, run, step) = (gate.account.as_str(), gate.run.as_str(), gate.step.as_str());
    let mut message = Vec::with_capacity(64 + account.len() + run.len() + step.len());
    push_length_prefixed(&mut message, "label", MAC_LABEL)?;
    push_length_prefixed(&mut message, "account id", account.as_bytes())?;
    push_length_prefixed(&mut message, "run id", run.as_bytes())?;
    push_length_prefixed(&mut message, "step id", step.as_bytes())?;
    push_length_prefixed(&mut message, "attempt", &gate.attempt.to_be_bytes())?;
    let mut mac = key.secret.mac();
    mac.update(&message);
    Ok(mac.finalize().into_bytes().into())
}

/// The approve-link token of one attempt at one gate (as the engine derives it), under `key`.
/// Fails only when a field is longer than 4 GiB.
pub fn approve_token(key: &ApproveLinkKey, gate: &GateRef) -> Result<String, Error> {
    let mac = compute_mac(key, gate)?;
    Ok(format!(
        "{TOKEN_VERSION}.{}.{}",
        key.key_id().to_hex(),
        URL_SAFE_NO_PAD.encode(mac)
    ))
}

/// Checks a presented token against the gate the request names, in constant time.
pub fn verify_approve_token(keys: &KeyRing, token: &str, gate: &GateRef) -> Result<(), LinkError> {
    let mut parts = token.split('.');
    let (Some(TOKEN_VERSION), Some(key_id), Some(mac_text), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(LinkError::Malformed);
    };
    let key_id = KeyId::from_hex(key_id).ok_or(LinkError::Malformed)?;
    if mac_text.len() != MAC_TEXT_LENGTH {
        return Err(LinkError::Malformed);
    }
    // The decoder rejects non-zero trailing bits, so each MAC has exactly one spelling.
    let presented: [u8; 32] = URL_SAFE_NO_PAD
        .decode(mac_text)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(LinkError::Malformed)?;
    let key = keys.find(key_id).ok_or(LinkError::UnknownKey)?;
    // A field too long to encode cannot have been signed, so it is a mismatch.
    let expected = compute_mac(key, gate).map_err(|_| LinkError::Mismatch)?;
    if bool::from(expected.ct_eq(&presented)) {
        Ok(())
    } else {
        Err(LinkError::Mismatch)
    }
}
