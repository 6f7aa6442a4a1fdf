-- Superseded vault values (G16): when an item's value is replaced by a new version, or the
-- item is removed, its values move here exactly as they were stored (same nonce, ciphertext,
-- key version and item version, so they open with the same associated data), together with
-- the time they stopped being current. A run that resumes in another process asks for the
-- values of its names superseded since the run started, so that an old value the run saw and
-- prints again is still scrubbed. Rows are kept for a bounded time and deleted on later
-- writes; they are never listed and hold no plaintext.
--
-- There is no foreign key to `vault_items`: removing an item must keep its values here. The
-- row id (not the item identity) is the key, because an item removed and added again starts
-- at version 1 again.
CREATE TABLE vault_value_history (
    history_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id     TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('secret', 'connection', 'model_key')),
    name           TEXT NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    field          TEXT NOT NULL,
    key_version    INTEGER NOT NULL CHECK (key_version >= 1),
    nonce          BLOB NOT NULL,
    ciphertext     BLOB NOT NULL,
    superseded_at  INTEGER NOT NULL
);

-- Reads are per account and time; pruning is by time alone.
CREATE INDEX vault_value_history_by_account ON vault_value_history (account_id, superseded_at);
CREATE INDEX vault_value_history_by_time ON vault_value_history (superseded_at);
