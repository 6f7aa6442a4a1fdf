-- The vault's tables (owned by the `vault` crate's storage side). They hold ids, names,
-- versions, dates, nonces and ciphertexts: never a plaintext value, never an unwrapped key.
-- Rows are keyed by account id text without a foreign key to `accounts`, so the vault can
-- serve an account the moment it exists anywhere in the system.

-- Installation facts: `install_id` names the default root key file outside the data directory.
CREATE TABLE vault_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

-- The key check value: a fixed label encrypted under the root key (exactly one row).
CREATE TABLE vault_key_check (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    root_key_id  TEXT NOT NULL,
    nonce        BLOB NOT NULL,
    ciphertext   BLOB NOT NULL,
    created_at   INTEGER NOT NULL
);

-- Each account's current data key, wrapped under the root key.
CREATE TABLE vault_account_keys (
    account_id   TEXT PRIMARY KEY,
    key_version  INTEGER NOT NULL CHECK (key_version >= 1),
    root_key_id  TEXT NOT NULL,
    nonce        BLOB NOT NULL,
    wrapped_key  BLOB NOT NULL,
    created_at   INTEGER NOT NULL
);

-- Named items: secrets, connections, model keys.
CREATE TABLE vault_items (
    account_id  TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('secret', 'connection', 'model_key')),
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    revoked_at  INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (account_id, kind, name)
);

-- The encrypted values of each item (one per connection field; one with an empty field for
-- a secret or model key).
CREATE TABLE vault_values (
    account_id   TEXT NOT NULL,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    field        TEXT NOT NULL,
    key_version  INTEGER NOT NULL CHECK (key_version >= 1),
    nonce        BLOB NOT NULL,
    ciphertext   BLOB NOT NULL,
    PRIMARY KEY (account_id, kind, name, field),
    FOREIGN KEY (account_id, kind, name)
        REFERENCES vault_items (account_id, kind, name) ON DELETE CASCADE
);
