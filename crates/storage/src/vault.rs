//! The vault's rows and the trait its backends implement: ciphertext, nonces and names only.
//!
//! Nothing in this module ever holds a plaintext secret: the `vault` crate encrypts before it
//! calls a store and decrypts after it reads one. A backend stores these rows verbatim and
//! enforces the few rules that must hold under concurrency (version checks, one current account
//! key, all-or-nothing rotation), so that two writers cannot lose each other's work and a
//! rotation that dies half-way leaves the old state intact.

use crate::error::Error;
use crate::records::NewAuditEntry;
use crate::types::{AccountId, Timestamp, UnknownName};

/// What a vault item is. The kind is part of every value's associated data, so a ciphertext
/// cannot be moved from a connection to a secret of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    /// An agent secret (`secrets: [GITHUB_TOKEN]`): one value.
    Secret,
    /// A connection (`connections: [payments]`): one value per named field.
    Connection,
    /// The account's key for a model provider: one value.
    ModelKey,
}

impl ItemKind {
    /// The stable name stored in rows and bound into associated data.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Secret => "secret",
            ItemKind::Connection => "connection",
            ItemKind::ModelKey => "model_key",
        }
    }

    /// Reads a stored kind name back.
    pub fn parse(name: &str) -> Result<ItemKind, UnknownName> {
        match name {
            "secret" => Ok(ItemKind::Secret),
            "connection" => Ok(ItemKind::Connection),
            "model_key" => Ok(ItemKind::ModelKey),
            other => Err(UnknownName {
                vocabulary: "vault item kind",
                name: other.to_owned(),
            }),
        }
    }
}

/// Proof of which root key this vault was sealed with: a fixed label encrypted under the root
/// key. A wrong key fails to open it, which turns "wrong key" into a clear error instead of
/// garbage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCheck {
    /// A random id of the root key; changes at every root rotation.
    pub root_key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
    pub created_at: Timestamp,
}

/// An account's data key, encrypted (wrapped) under the root key. Only the current version of
/// each account's key is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedAccountKey {
    pub account_id: AccountId,
    pub key_version: u32,
    /// The root key this wrap was made with ([`KeyCheck::root_key_id`]).
    pub root_key_id: String,
    pub nonce: Vec<u8>,
    pub wrapped_key: Vec<u8>,
    pub created_at: Timestamp,
}

/// One encrypted value of an item. A secret has one value with an empty field name; a
/// connection has one per field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedValue {
    pub field: String,
    /// The account key version this value is encrypted under.
    pub key_version: u32,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// A named vault item with its encrypted values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedItem {
    pub account_id: AccountId,
    pub kind: ItemKind,
    pub name: String,
    /// Starts at 1 and grows by one each time the value changes.
    pub version: u64,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub values: Vec<SealedValue>,
}

/// A value an item no longer holds, because a newer version replaced it or the item was
/// removed. The backend copies it from the item's values verbatim (same nonce, ciphertext, key
/// version, and the item version it was sealed under), so it opens with the same associated
/// data as before. It is kept for a bounded time so that a run resumed in another process can
/// still scrub a value it may have seen before the change (G16); it is never listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupersededValue {
    /// The backend's id of this row; identifies it during a key rotation.
    pub history_id: i64,
    pub account_id: AccountId,
    pub kind: ItemKind,
    pub name: String,
    /// The item version this value belonged to (bound into its associated data).
    pub version: u64,
    pub field: String,
    /// The account key version this value is encrypted under.
    pub key_version: u32,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
    /// When the value stopped being current.
    pub superseded_at: Timestamp,
}

/// What a write that may supersede values does with the superseded-value history: the time
/// it records for the values it replaces or removes, and the age past which kept values are
/// deleted (retention is enforced on every such write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryWrite {
    pub superseded_at: Timestamp,
    /// Kept values superseded before this time are deleted, of every account.
    pub prune_before: Timestamp,
}

/// What a listing returns: names, versions and dates, never a ciphertext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemSummary {
    pub account_id: AccountId,
    pub kind: ItemKind,
    pub name: String,
    pub version: u64,
    /// Field names in ascending order (one empty name for a single-valued item).
    pub fields: Vec<String>,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The result of [`VaultStore::insert_account_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertKeyOutcome {
    /// The key was stored; it is the account's key now.
    Inserted,
    /// Another writer stored a key first; use this one.
    Existing(WrappedAccountKey),
    /// The key was wrapped under a root key that is no longer the vault's (a root rotation
    /// committed in between).
    RootKeyChanged { current_root_key_id: Option<String> },
}

/// The result of [`VaultStore::put_item`] and of the rotations: a conflict means "read again and
/// retry", never "partly written".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    Written,
    /// The stored item's version is not the one the writer read.
    VersionConflict {
        stored_version: Option<u64>,
    },
    /// The account's current key is not the one the values are sealed with (or, for a
    /// rotation, not the one it rotates from).
    KeyConflict {
        current_key_version: Option<u32>,
    },
    /// The vault's root key is not the one the rotation started from.
    RootKeyConflict {
        current_root_key_id: Option<String>,
    },
}

/// Reseals one item during [`VaultStore::rotate_account_key`]; an error aborts the rotation.
pub type ResealItem<'a> = dyn FnMut(&SealedItem) -> Result<SealedItem, Error> + 'a;

/// Reseals one superseded value during [`VaultStore::rotate_account_key`]; an error aborts the
/// rotation.
pub type ResealSuperseded<'a> = dyn FnMut(&SupersededValue) -> Result<SupersededValue, Error> + 'a;

/// Rewraps one account key during [`VaultStore::rotate_root`]; an error aborts the rotation.
pub type RewrapKey<'a> = dyn FnMut(&WrappedAccountKey) -> Result<WrappedAccountKey, Error> + 'a;

/// The storage side of the vault. Synchronous; every method is atomic on its own.
pub trait VaultStore: Send + Sync {
    /// Stores `candidate` as this installation's id unless one is stored already; returns the
    /// stored id either way.
    fn ensure_install_id(&self, candidate: &str) -> Result<String, Error>;

    /// The stored key check value, if the vault was ever opened.
    fn key_check(&self) -> Result<Option<KeyCheck>, Error>;

    /// Stores `check` unless a key check is stored already; returns the stored one either way.
    fn init_key_check(&self, check: &KeyCheck) -> Result<KeyCheck, Error>;

    /// The account's current wrapped key.
    fn account_key(&self, account_id: &AccountId) -> Result<Option<WrappedAccountKey>, Error>;

    /// Stores the account's first key, unless one exists or the root key changed.
    fn insert_account_key(&self, key: &WrappedAccountKey) -> Result<InsertKeyOutcome, Error>;

    /// Every item of the account, names only, ordered by kind then name.
    fn list_items(&self, account_id: &AccountId) -> Result<Vec<ItemSummary>, Error>;

    /// One item with its ciphertexts.
    fn item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
    ) -> Result<Option<SealedItem>, Error>;

    /// Every item of the account with its ciphertexts, ordered by kind then name.
    fn items(&self, account_id: &AccountId) -> Result<Vec<SealedItem>, Error>;

    /// Creates or replaces an item (all its values) if the stored version is still
    /// `expected_version` (`None`: absent) and every value is sealed under the account's current
    /// key. Clears `revoked_at`; keeps the stored `created_at` of an existing item. The values
    /// it replaces move, as they are, to the superseded-value history at
    /// `history.superseded_at`, and history older than `history.prune_before` is deleted, in
    /// the same transaction.
    ///
    /// `audit`, when given, is appended to the audit log in the same transaction when the item
    /// is written: when it cannot be appended nothing is written and the error is returned, so
    /// a change never stands without its entry. A conflict writes neither.
    fn put_item(
        &self,
        item: &SealedItem,
        expected_version: Option<u64>,
        history: &HistoryWrite,
        audit: Option<&NewAuditEntry>,
    ) -> Result<WriteOutcome, Error>;

    /// Marks an item revoked; false if it does not exist. `audit` is appended in the same
    /// transaction when the item exists (as for [`VaultStore::put_item`]).
    fn revoke_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        revoked_at: Timestamp,
        audit: Option<&NewAuditEntry>,
    ) -> Result<bool, Error>;

    /// Deletes an item and its values; false if it does not exist. The values move, as they
    /// are, to the superseded-value history (as for [`VaultStore::put_item`]). `audit` is
    /// appended in the same transaction when an item was deleted.
    fn remove_item(
        &self,
        account_id: &AccountId,
        kind: ItemKind,
        name: &str,
        history: &HistoryWrite,
        audit: Option<&NewAuditEntry>,
    ) -> Result<bool, Error>;

    /// The account's superseded values that stopped being current at or after `since`, with
    /// their ciphertexts, oldest first.
    fn superseded_values(
        &self,
        account_id: &AccountId,
        since: Timestamp,
    ) -> Result<Vec<SupersededValue>, Error>;

    /// The accounts whose data key a root-key rotation left to rotate (listed by
    /// [`VaultStore::rotate_root`], taken out by [`VaultStore::rotate_account_key`]).
    fn pending_account_rotations(&self) -> Result<Vec<AccountId>, Error>;

    /// The account's vault generation: a number that every change of its items, values or
    /// superseded values moves, in the same transaction (0 before the first change).
    fn generation(&self, account_id: &AccountId) -> Result<u64, Error>;

    /// In one transaction: replaces the account's key by `new_key` (whose version must be the
    /// stored one plus one, under the same root key), every item of the account by what
    /// `reseal` returns for it, and every superseded value of the account kept after
    /// `prune_superseded_before` by what `reseal_superseded` returns for it (older ones are
    /// deleted first). Any error, from the backend or from a callback, rolls everything back.
    /// `audit`, when given, is appended in the same transaction when the rotation is written;
    /// an entry that cannot be appended rolls the rotation back too.
    fn rotate_account_key(
        &self,
        new_key: &WrappedAccountKey,
        reseal: &mut ResealItem<'_>,
        reseal_superseded: &mut ResealSuperseded<'_>,
        prune_superseded_before: Timestamp,
        audit: Option<&NewAuditEntry>,
    ) -> Result<WriteOutcome, Error>;

    /// In one transaction: checks that the stored key check is for `current_root_key_id`,
    /// replaces every account key by what `rewrap` returns for it, lists every account as
    /// pending an account key rotation, and stores `new_check`. Any error rolls everything back.
    fn rotate_root(
        &self,
        current_root_key_id: &str,
        new_check: &KeyCheck,
        rewrap: &mut RewrapKey<'_>,
    ) -> Result<WriteOutcome, Error>;
}
