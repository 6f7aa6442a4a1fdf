//! CSRF protection of the console's forms: a token bound to the session, HMAC-SHA256 of the
//! session's stored hash under a server key, checked in constant time.
//!
//! The MAC covers `("stepward/csrf/v1", session token hash)`, each length-prefixed (u32,
//! big-endian). The server puts the token in a hidden field of every form and checks it on
//! every POST; a page of another site cannot read it, and a token of one session is worth
//! nothing in another. Rotating the CSRF key only invalidates forms that are open.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::keys::{KeyId, SecretKey};
use crate::{Error, Mismatch, SessionTokenHash};

const MAC_LABEL: &[u8] = b"stepward/csrf/v1";
const KEY_FILE_LABEL: &str = "stepward-csrf-key-v1";

/// The server's CSRF key: 32 random bytes. Derives nothing; zeroized on drop; in its own file.
pub struct CsrfKey {
    secret: SecretKey,
}

impl CsrfKey {
    /// A new random key.
    pub fn generate() -> Result<CsrfKey, Error> {
        Ok(CsrfKey {
            secret: SecretKey::generate("a CSRF key")?,
        })
    }

    /// The key's public id.
    pub fn key_id(&self) -> KeyId {
        self.secret.key_id
    }

    /// The text of this key's own key file (write it with mode 0600).
    pub fn dangerously_encode_key_file(&self) -> Zeroizing<String> {
        self.secret.encode_key_file(KEY_FILE_LABEL)
    }

    /// Reads a key back from the text [`CsrfKey::dangerously_encode_key_file`] wrote.
    pub fn decode_key_file(text: &str) -> Result<CsrfKey, Error> {
        Ok(CsrfKey {
            secret: SecretKey::decode_key_file(text, KEY_FILE_LABEL, "CSRF")?,
        })
    }

    fn mac_of(&self, session: &SessionTokenHash) -> [u8; 32] {
        let mut mac = self.secret.mac();
        for part in [MAC_LABEL, session.as_bytes().as_slice()] {
            // A constant label and a 32-byte hash: both lengths fit the 32-bit prefix.
            let length = u32::try_from(part.len()).unwrap_or(u32::MAX);
            mac.update(&length.to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

/// A CSRF token for one session, to put in a form's hidden field. It is not a secret on its
/// own (it is useless in any other session), so it may be shown and cloned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsrfToken(String);

impl CsrfToken {
    /// The token of the session whose stored hash is `session`.
    pub fn for_session(key: &CsrfKey, session: &SessionTokenHash) -> CsrfToken {
        CsrfToken(URL_SAFE_NO_PAD.encode(key.mac_of(session)))
    }

    /// The token's text (43 base64url characters).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks a submitted CSRF token against the session's, in constant time. Any malformed token
/// is a mismatch.
pub fn verify_csrf(
    key: &CsrfKey,
    session: &SessionTokenHash,
    submitted: &str,
) -> Result<(), Mismatch> {
    let mismatch = Mismatch { what: "CSRF token" };
    let presented: [u8; 32] = URL_SAFE_NO_PAD
        .decode(submitted)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(mismatch)?;
    if bool::from(key.mac_of(session).ct_eq(&presented)) {
        Ok(())
    } else {
        Err(mismatch)
    }
}
