-- The supervisor (issue 17, G15): how many times an account's supervisor may retry one step
-- of one run. No row, or NULL: the engine's default (2). At most 5, held here and in the
-- engine.
CREATE TABLE account_supervisor_settings (
    account_id TEXT PRIMARY KEY NOT NULL REFERENCES accounts(id),
    supervisor_retries INTEGER CHECK (supervisor_retries BETWEEN 0 AND 5)
);
