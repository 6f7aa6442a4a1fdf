//! Random bearer tokens stored only as hashes: share links (G24), sessions, API keys (G26).
//!
//! Each token is random bytes from the operating system, shown once (in a URL, a cookie, or
//! the answer that creates an API key) and never stored: storage keeps the SHA-256 of a
//! domain label and the token's bytes, each length-prefixed (u32, big-endian). The tokens are
//! long enough that a plain hash is safe (there is nothing to brute-force), and a hash looks up
//! in an index; where a hash is compared rather than looked up, the comparison is constant-time.
//!
//! Token types derive nothing, are zeroized on drop, and give their text only once, by value,
//! through `reveal_once`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::random::random_bytes;
use crate::{Error, Principal, Role, can_grant};

/// A token or key text that is not of the expected shape (length or alphabet). One kind for
/// every shape failure, so a server answers them all alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {what} is malformed")]
pub struct Malformed {
    /// What was being parsed, e.g. "share token".
    pub what: &'static str,
}

/// A presented secret that does not match what is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {what} does not match")]
pub struct Mismatch {
    /// What was being checked, e.g. "API key".
    pub what: &'static str,
}

/// The SHA-256 of the label and each part, each as its length (u32, big-endian) followed by
/// its bytes, so that no two lists of parts hash alike.
fn labelled_hash(label: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in std::iter::once(&label).chain(parts) {
        // Every part hashed here is a constant label, a token of at most 32 bytes or a key id
        // of 16 characters, so its length always fits the 32-bit prefix.
        let length = u32::try_from(part.len()).unwrap_or(u32::MAX);
        hasher.update(length.to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

macro_rules! hash_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name([u8; 32]);

        impl $name {
            /// The stored bytes.
            pub fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            /// A hash read back from storage.
            pub fn from_bytes(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }

            /// The hash as 64 lowercase hexadecimal characters.
            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }

            /// Compares two hashes in constant time.
            pub fn matches(&self, other: &Self) -> bool {
                bool::from(self.0.ct_eq(&other.0))
            }
        }
    };
}

macro_rules! random_token {
    (
        $(#[$meta:meta])* $name:ident, $hash:ident, $bytes:literal, $text_length:literal,
        $label:literal, $what:literal
    ) => {
        $(#[$meta])*
        pub struct $name {
            bytes: Zeroizing<[u8; $bytes]>,
        }

        impl $name {
            /// A new random token, and the hash to store for it.
            pub fn generate() -> Result<($name, $hash), Error> {
                let token = $name {
                    bytes: Zeroizing::new(random_bytes($what)?),
                };
                let hash = token.hash();
                Ok((token, hash))
            }

            /// Parses a presented token: exactly the unpadded base64url of the token's bytes.
            /// Every wrong length or alphabet is the same [`Malformed`].
            pub fn parse(text: &str) -> Result<$name, Malformed> {
                let malformed = Malformed { what: $what };
                if text.len() != $text_length {
                    return Err(malformed);
                }
                let decoded = Zeroizing::new(URL_SAFE_NO_PAD.decode(text).map_err(|_| malformed)?);
                let bytes: [u8; $bytes] = decoded.as_slice().try_into().map_err(|_| malformed)?;
                Ok($name {
                    bytes: Zeroizing::new(bytes),
                })
            }

            /// The hash storage keeps and looks the token up by.
            pub fn hash(&self) -> $hash {
                $hash(labelled_hash($label, &[self.bytes.as_slice()]))
            }

            /// The token's text, to show once; the token is consumed.
            pub fn reveal_once(self) -> String {
                URL_SAFE_NO_PAD.encode(self.bytes.as_slice())
            }
        }
    };
}

hash_type!(
    /// The stored SHA-256 of a [`ShareToken`].
    ShareTokenHash
);
random_token!(
    /// A share link's token: 24 random bytes, 32 base64url characters in `/s/{token}`.
    ShareToken, ShareTokenHash, 24, 32, b"stepward/share-token/v1", "share token"
);

hash_type!(
    /// The stored SHA-256 of a [`SessionToken`].
    SessionTokenHash
);
random_token!(
    /// A session's token: 32 random bytes, 43 base64url characters in the session cookie.
    SessionToken, SessionTokenHash, 32, 43, b"stepward/session-token/v1", "session token"
);

hash_type!(
    /// The stored SHA-256 of a [`SignInLinkToken`].
    SignInLinkTokenHash
);
random_token!(
    /// The token of a one-time sign-in link (`/welcome/{token}`), printed for a new account's
    /// owner or made by an admin for an invited person, who sets a password with it: 32 random
    /// bytes, 43 base64url characters. Storage keeps its hash with an expiry and deletes it on
    /// first use.
    SignInLinkToken, SignInLinkTokenHash, 32, 43, b"stepward/sign-in-link/v1", "sign-in link token"
);

/// How long a session lives: it ends after `idle_millis` without a request, and after
/// `absolute_millis` in any case. Revocation ends it at once, whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLifetime {
    /// The longest time between two requests.
    pub idle_millis: u64,
    /// The longest time from sign-in.
    pub absolute_millis: u64,
}

impl SessionLifetime {
    /// Twelve hours idle, seven days in all.
    pub const DEFAULT: SessionLifetime = SessionLifetime {
        idle_millis: 12 * 60 * 60 * 1000,
        absolute_millis: 7 * 24 * 60 * 60 * 1000,
    };

    /// Whether a session created at `created_millis` and last used at `last_used_millis` is
    /// still live at `now_millis` (all from the same clock, e.g. Unix milliseconds). A time in
    /// the future (a clock that went backwards) counts as no time passed.
    pub fn state(
        &self,
        created_millis: u64,
        last_used_millis: u64,
        now_millis: u64,
    ) -> SessionState {
        if now_millis.saturating_sub(created_millis) >= self.absolute_millis {
            SessionState::Expired
        } else if now_millis.saturating_sub(last_used_millis) >= self.idle_millis {
            SessionState::IdleExpired
        } else {
            SessionState::Live
        }
    }
}

/// Whether a session may still be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// It may.
    Live,
    /// No request came for longer than the idle limit.
    IdleExpired,
    /// It is older than the absolute limit.
    Expired,
}

/// The body of every failed share-link fetch (unknown, expired, revoked, malformed, wrong
/// length): one constant, so every failure answers the same bytes. Served with
/// [`SHARE_NOT_FOUND_CONTENT_TYPE`] and status 404.
pub const SHARE_NOT_FOUND_BODY: &str = "<!doctype html>\n<html lang=\"en\">\n<head><meta \
     charset=\"utf-8\"><title>Not found</title></head>\n<body><h1>Not found</h1>\n<p>There is \
     nothing at this address. The link may be mistyped, expired or revoked.</p></body>\n\
     </html>\n";

/// The content type of [`SHARE_NOT_FOUND_BODY`].
pub const SHARE_NOT_FOUND_CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// Whether the server is reached over TLS; decides the cookie's `Secure` attribute and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Served over HTTPS (directly or behind a TLS-terminating proxy).
    Tls,
    /// Plain HTTP, e.g. on loopback during development.
    PlainHttp,
}

/// The name of the session cookie. Over TLS it carries the `__Host-` prefix, which browsers
/// accept only with `Secure`, `Path=/` and no `Domain`, so no subdomain can plant or shadow it.
pub fn session_cookie_name(tls: TlsMode) -> &'static str {
    match tls {
        TlsMode::Tls => "__Host-stepward_session",
        TlsMode::PlainHttp => "stepward_session",
    }
}

/// The `Set-Cookie` value that carries a new session: HttpOnly (no script reads it),
/// SameSite=Strict (no other site's request carries it), Path=/, and Secure over TLS. No
/// `Max-Age`: the cookie lives as long as the browser session, and the server expires and
/// revokes the session itself.
pub fn session_cookie(token: &SessionToken, tls: TlsMode) -> String {
    let value = URL_SAFE_NO_PAD.encode(token.bytes.as_slice());
    cookie_with_value(&value, tls, "")
}

/// The `Set-Cookie` value that removes the session cookie (at sign-out).
pub fn clear_session_cookie(tls: TlsMode) -> String {
    cookie_with_value("", tls, "; Max-Age=0")
}

fn cookie_with_value(value: &str, tls: TlsMode, extra: &str) -> String {
    let name = session_cookie_name(tls);
    let secure = match tls {
        TlsMode::Tls => "; Secure",
        TlsMode::PlainHttp => "",
    };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict{secure}{extra}")
}

hash_type!(
    /// The stored SHA-256 of an API key's id and secret.
    ApiKeyHash
);

const API_KEY_PREFIX: &str = "sw_";
const API_KEY_LABEL: &[u8] = b"stepward/api-key/v1";
const API_KEY_ID_LENGTH: usize = 16;
const API_KEY_SECRET_LENGTH: usize = 64;

/// What storage keeps for an API key: its id, role and hash. Never the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredApiKey {
    /// The key's public id (16 hex), also in its text, to find its row.
    pub key_id: String,
    /// The role the key carries.
    pub role: Role,
    /// The hash its text is checked against.
    pub hash: ApiKeyHash,
}

/// An API key's secret text, `sw_<key id: 16 hex>_<secret: 64 hex>` (32 random bytes). Derives
/// nothing; zeroized on drop.
pub struct ApiKeySecret {
    key_id: String,
    secret: Zeroizing<[u8; 32]>,
}

impl ApiKeySecret {
    /// Creates a key with `role` on behalf of `creator`, who must be allowed to grant that role
    /// ([`can_grant`]: an admin or the owner, never above their own role, so a key never
    /// creates a key above its own). Returns the secret, to show once, and what to store.
    pub fn generate(
        creator: &Principal,
        role: Role,
    ) -> Result<(ApiKeySecret, StoredApiKey), Error> {
        can_grant(creator, role)?;
        let key_id = hex::encode(random_bytes::<8>("an API key id")?);
        let secret = ApiKeySecret {
            key_id,
            secret: Zeroizing::new(random_bytes("an API key secret")?),
        };
        let stored = StoredApiKey {
            key_id: secret.key_id.clone(),
            role,
            hash: secret.hash(),
        };
        Ok((secret, stored))
    }

    /// Parses a presented key text. Every wrong prefix, length or alphabet is the same
    /// [`Malformed`].
    pub fn parse(text: &str) -> Result<ApiKeySecret, Malformed> {
        let malformed = Malformed { what: "API key" };
        let rest = text.strip_prefix(API_KEY_PREFIX).ok_or(malformed)?;
        let (key_id, secret_hex) = rest.split_once('_').ok_or(malformed)?;
        let is_lower_hex = |text: &str| {
            text.bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        };
        if key_id.len() != API_KEY_ID_LENGTH
            || secret_hex.len() != API_KEY_SECRET_LENGTH
            || !is_lower_hex(key_id)
            || !is_lower_hex(secret_hex)
        {
            return Err(malformed);
        }
        let mut secret = Zeroizing::new([0_u8; 32]);
        hex::decode_to_slice(secret_hex, secret.as_mut_slice()).map_err(|_| malformed)?;
        Ok(ApiKeySecret {
            key_id: key_id.to_owned(),
            secret,
        })
    }

    /// The key's public id, to find its stored row.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Checks this key against its stored hash, in constant time.
    pub fn verify(&self, stored: &ApiKeyHash) -> Result<(), Mismatch> {
        if self.hash().matches(stored) {
            Ok(())
        } else {
            Err(Mismatch { what: "API key" })
        }
    }

    /// The key's text, to show once; the key is consumed.
    pub fn reveal_once(self) -> String {
        format!(
            "{API_KEY_PREFIX}{}_{}",
            self.key_id,
            hex::encode(self.secret.as_slice())
        )
    }

    fn hash(&self) -> ApiKeyHash {
        ApiKeyHash(labelled_hash(
            API_KEY_LABEL,
            &[self.key_id.as_bytes(), self.secret.as_slice()],
        ))
    }
}
