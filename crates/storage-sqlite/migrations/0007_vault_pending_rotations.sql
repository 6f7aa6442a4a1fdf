-- Account keys still to rotate after a root-key rotation (G20). Rotating the root key rewraps
-- every account key and lists every account here in the same transaction; each account's own
-- key rotation (a new data key, every value re-encrypted) takes its row out in its own
-- transaction. A rotation that dies half-way leaves every value readable with the new root
-- key, and the accounts still listed are rotated when it is run again.
CREATE TABLE vault_pending_rotations (
    account_id        TEXT PRIMARY KEY,
    since_root_key_id TEXT NOT NULL
);
