-- People, their sessions and API keys, one-time sign-in links and share links (owned by the
-- `server` work). No secret is stored: passwords are argon2id PHC strings and every token is
-- kept only as its 32-byte SHA-256 (computed by the `auth` crate).

CREATE TABLE people (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts(id),
    display_name   TEXT NOT NULL,
    email          TEXT NOT NULL,
    role           TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin', 'owner')),
    password_hash  TEXT,
    created_at     INTEGER NOT NULL,
    UNIQUE (account_id, email)
);
-- A backstop for the rule checked in every transaction that changes roles: never two owners.
CREATE UNIQUE INDEX people_one_owner ON people(account_id) WHERE role = 'owner';

CREATE TABLE sign_in_links (
    token_hash  BLOB PRIMARY KEY CHECK (length(token_hash) = 32),
    person_id   TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    token_hash    BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    person_id     TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER NOT NULL,
    revoked_at    INTEGER
);
CREATE INDEX sessions_by_person ON sessions(person_id);

CREATE TABLE api_keys (
    key_id        TEXT PRIMARY KEY,
    token_hash    BLOB NOT NULL CHECK (length(token_hash) = 32),
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    name          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    revoked_at    INTEGER
);
CREATE INDEX api_keys_by_account ON api_keys(account_id);

CREATE TABLE share_links (
    id          TEXT PRIMARY KEY,
    token_hash  BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    run_id      TEXT NOT NULL REFERENCES runs(id),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX share_links_by_account ON share_links(account_id, created_at);
