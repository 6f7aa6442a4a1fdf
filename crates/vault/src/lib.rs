//! Envelope encryption of each account's secrets and connections; names-only listing; rotation.
//!
//! # The scheme
//!
//! Three layers of keys, each 32 bytes, and one cipher: XChaCha20-Poly1305 (an AEAD) with a
//! fresh random 24-byte nonce for every encryption. Every encryption binds *associated data*:
//! bytes that are authenticated but not stored inside the ciphertext. Associated data is always
//! a list of parts, each written as its length (8 bytes, big-endian) followed by its bytes, and
//! the first part is a label naming the layer and the scheme version, so that no ciphertext of
//! one layer can be passed off as one of another and no two different lists encode alike.
//!
//! 1. **The root key** comes from one of the sources of [`RootKeySource`]: a file, an environment
//!    variable, or (the embedded default) a file generated on first start, mode 0600, in the
//!    user's configuration directory (`$XDG_CONFIG_HOME`, else `$HOME/.config`):
//!    `stepward/root-keys/<install-id>.key`. The install id is a random id stored in the
//!    database, so the key lives *outside* the data directory and a copy or backup of the data
//!    directory alone opens nothing. A key file or variable holds the key as 64 hexadecimal
//!    characters. [`Vault::open`] returns a [`Notice`] when it generated a key, saying where it
//!    is and how to move it to a key manager.
//! 2. **The key check value**: the fixed label `stepward vault root key check v1` encrypted
//!    under the root key, associated data `("stepward/vault/key-check/v1", root key id)`,
//!    stored in the database with a random root key id. Opening the vault opens the check first,
//!    so a wrong key gives "the root key at X does not open this data directory" and a missing
//!    key gives "the root key at X is missing", never garbage.
//! 3. **Account keys**: each account has its own random data key, stored only wrapped
//!    (encrypted) under the root key with associated data
//!    `("stepward/vault/account-key/v1", account id, key version, root key id)`. A wrapped key
//!    copied to another account or version does not unwrap.
//! 4. **Values**: each value of a secret, a connection field or a model key is encrypted under
//!    its account's key, with associated data
//!    `("stepward/vault/value/v1", account id, kind, name, field, version, key version)`, where
//!    kind is `secret`, `connection` or `model_key`, field is empty for single-valued items and
//!    version is the item's version (1, then one more at each change of value). A ciphertext
//!    moved to another account, kind, name, field or version fails to open.
//!
//! Superseded values: when a value is replaced (a new version) or its item removed, the store
//! moves its ciphertext, unchanged, into a history with the time it stopped being current; it
//! still opens with its own associated data (its own item version). A run resumed in another
//! process asks [`redact::SecretSource::superseded_values`] for the values of its names
//! superseded since it started (a revoked item's values count as superseded at revocation),
//! and scrubs them (G16). History is kept for [`Vault::superseded_retention`] (default
//! [`DEFAULT_SUPERSEDED_RETENTION`]), pruned on every write, never listed, re-encrypted by
//! [`Vault::rotate_account_key`] and, like every value, untouched by a root rotation (which
//! rewraps the account keys it is sealed under).
//!
//! Rotation: [`Vault::rotate_root`] rewraps every account key under a new root key and replaces
//! the key check, in one storage transaction, without touching any value;
//! [`Vault::rotate_account_key`] re-encrypts every value of one account under a new account key,
//! in one storage transaction. A rotation that dies half-way leaves the old state. For the
//! default key file, the new key is first written beside the old one (`<install-id>.key.next`)
//! and renamed over it only after the transaction committed; until then both files exist, and
//! opening the vault tries the new file when the old one no longer opens the key check, which
//! finishes an interrupted switch.
//!
//! Plaintext never leaves this crate except as a [`redact::SecretValue`] (which derives nothing
//! and zeroizes on drop), returned by [`redact::SecretSource::resolve`], by
//! [`redact::SecretSource::current_values`] and by the `dangerously_`-named calls. Listings
//! return names, versions and dates only. Keys are held in memory in zeroizing buffers of types
//! that derive nothing.

#![forbid(unsafe_code)]

mod crypto;
mod error;
mod items;
mod names;
mod root_key;
mod rotation;
mod source;
mod vault;

pub use crate::error::Error;
pub use crate::items::{ConnectionInfo, Connections, ItemAudit, ModelKeys, SecretInfo, Secrets};
pub use crate::root_key::{Notice, RootKeySource, VaultOptions, user_config_dir};
pub use crate::vault::{DEFAULT_SUPERSEDED_RETENTION, Vault};

/// The fewest bytes a stored value may have (counted as given, nothing trimmed). Every value
/// joins its account's scrub set and the workspace write screen, so a shorter one (`1`, `e`,
/// `true`) would match ordinary text: records would be masked and workspace writes refused
/// almost everywhere. Settings that are not secret (a region) belong in a step's inputs.
pub const MIN_VALUE_BYTES: usize = 8;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
