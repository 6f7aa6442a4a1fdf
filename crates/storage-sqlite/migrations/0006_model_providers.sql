-- The model providers an account configured (not secret: the key is the vault model key of
-- the same name). At most one default per account, enforced by the partial unique index.
CREATE TABLE model_providers (
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    name             TEXT NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('anthropic', 'openai')),
    base_url         TEXT,
    assistant_model  TEXT,
    is_default       INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (account_id, name)
);

CREATE UNIQUE INDEX model_providers_one_default ON model_providers (account_id)
    WHERE is_default = 1;
