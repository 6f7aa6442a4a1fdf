//! The one error type of the vault. No variant ever carries a secret value: names, ids, paths
//! and causes only.

use std::path::PathBuf;

use storage::AccountId;

/// What a vault call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neither `$XDG_CONFIG_HOME` nor `$HOME` says where the default root key file lives.
    #[error(
        "cannot find the user's configuration directory for the vault's root key: set \
         $XDG_CONFIG_HOME or $HOME, or give the root key as a file or an environment variable"
    )]
    NoConfigDirectory,
    /// The root key is not where the configuration says.
    #[error(
        "the root key at {location} is missing, so this data directory's secrets cannot be \
         opened; {hint}"
    )]
    RootKeyMissing {
        location: String,
        hint: &'static str,
    },
    /// The root key file exists but cannot be read.
    #[error("the root key at {location} cannot be read")]
    RootKeyUnreadable {
        location: String,
        #[source]
        source: std::io::Error,
    },
    /// The root key is not 64 hexadecimal characters.
    #[error(
        "the root key at {location} is malformed: expected 64 hexadecimal characters (32 bytes)"
    )]
    RootKeyMalformed { location: String },
    /// The root key opens a key check value, but not this vault's.
    #[error(
        "the root key at {location} does not open this data directory: it is not the key the \
         data directory was sealed with"
    )]
    RootKeyWrong { location: String },
    /// The new root key of a rotation is the current one.
    #[error(
        "the root key file {} is inside the data directory {}: a copy of the data directory \
         would then open every secret in it; keep the key outside it (set --root-key-file, or \
         XDG_CONFIG_HOME to a folder outside it), or in a key manager (--root-key-env)",
        path.display(),
        data_dir.display()
    )]
    RootKeyInsideDataDir { path: PathBuf, data_dir: PathBuf },
    #[error("cannot tell where the root key file {} is", path.display())]
    RootKeyUnresolvable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file a rotation was told to read the new root key from does not exist.
    #[error("the new root key file {} does not exist", path.display())]
    NewRootKeyMissing { path: PathBuf },
    /// A new root key was to be generated into a file that already exists.
    #[error(
        "the file {} already exists, and a generated root key never replaces a file",
        path.display()
    )]
    NewRootKeyExists { path: PathBuf },
    #[error("the new root key at {location} is the current root key; rotation needs a new key")]
    RootKeyUnchanged { location: String },
    /// Writing a generated root key failed.
    #[error("cannot write the root key file {path}")]
    RootKeyWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another process rotated the root key since this vault was opened.
    #[error("the vault's root key was rotated by another process; open the vault again")]
    RootKeyChangedElsewhere,
    /// The stored install id is not one this crate generated (the database was edited).
    #[error("the vault's stored install id `{install_id}` is malformed")]
    InstallIdMalformed { install_id: String },
    /// An account key does not unwrap under the root key: it was tampered with or moved.
    #[error(
        "the key of account {account_id} (version {key_version}) does not unwrap under the root \
         key: the stored key was altered or moved"
    )]
    AccountKeyTampered {
        account_id: AccountId,
        key_version: u32,
    },
    /// A stored value does not open: its ciphertext, nonce or associated data was altered, or
    /// it was moved from another name, account or version.
    #[error(
        "the stored value of {kind} {name:?} (field {field:?}) of account {account_id} does \
         not open: it was altered or moved"
    )]
    ValueTampered {
        account_id: AccountId,
        kind: &'static str,
        name: String,
        field: String,
    },
    /// A name that the vault does not accept.
    #[error("{kind} name `{name}` is invalid: {rule}")]
    InvalidName {
        kind: &'static str,
        name: String,
        rule: &'static str,
    },
    /// An empty value; an empty credential would make scrubbing meaningless.
    #[error("the value of {kind} `{name}` (field `{field}`) is empty")]
    EmptyValue {
        kind: &'static str,
        name: String,
        field: String,
    },
    /// A value shorter than [`crate::MIN_VALUE_BYTES`]: every value joins the account's scrub
    /// set and the workspace write screen, so a short one (`1`, `true`) would match ordinary
    /// text and be masked, and block writes, everywhere. The value itself is not kept.
    #[error(
        "the value of {kind} {name:?} (field {field:?}) is too short: the vault needs a value of \
         at least {min_bytes} bytes: shorter ones match ordinary text and would be masked \
         everywhere; keep non-secret settings such as a region in the step's inputs"
    )]
    ValueTooShort {
        kind: &'static str,
        name: String,
        field: String,
        min_bytes: usize,
    },
    /// A connection with no fields.
    #[error("connection `{alias}` needs at least one field")]
    NoFields { alias: String },
    /// Two fields of one connection that are the same or reach a step as the same variable.
    #[error("connection `{alias}`: fields `{first}` and `{second}` would both be {variable}")]
    DuplicateField {
        alias: String,
        first: String,
        second: String,
        variable: String,
    },
    /// The item does not exist. The message leaves the name out: a name that names nothing
    /// may be anything someone typed or pasted (even a value), and this message is logged.
    #[error("account {account_id} has no {kind} of the name given")]
    NotFound {
        account_id: AccountId,
        kind: &'static str,
        name: String,
    },
    /// Rotating the key of an account that has never stored anything.
    #[error("account {account_id} has no key yet: it has never stored a secret")]
    NoAccountKey { account_id: AccountId },
    /// Other writers kept changing the same item; the write was not applied.
    #[error("gave up writing {kind} `{name}` of account {account_id} after repeated conflicts")]
    Contention {
        account_id: AccountId,
        kind: &'static str,
        name: String,
    },
    /// A stored value is not UTF-8 (the contract's values are strings).
    #[error("the stored value of {kind} `{name}` of account {account_id} is not UTF-8")]
    NotUtf8 {
        account_id: AccountId,
        kind: &'static str,
        name: String,
    },
    /// The operating system's random source failed.
    #[error("the operating system's random source failed: {detail}")]
    Random { detail: String },
    /// The cipher refused to encrypt (only for inputs beyond its size limit).
    #[error("encryption failed")]
    Encrypt,
    /// The storage backend failed.
    #[error(
        "the root key was rotated and every value opens with the new key, but the data keys of \
         {} account(s) are still to rotate ({}): run `stepward keys rotate-root` again to finish",
        left.len(),
        left.iter().map(AccountId::as_str).collect::<Vec<_>>().join(", ")
    )]
    RotationUnfinished {
        left: Vec<AccountId>,
        #[source]
        source: Box<Error>,
    },
    #[error("vault storage failed")]
    Store {
        #[from]
        source: storage::Error,
    },
}
