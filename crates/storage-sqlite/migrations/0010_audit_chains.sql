-- One audit chain per account (issue 11, finding 7), tallied entries (findings 2 and 6), and
-- indexes that serve a page of an account's log, newest first, with each filter, by reading
-- no more rows than the page shows (issue 14).
--
-- Entries written before this version keep what their hash covers: their number in the one
-- chain the log had (`legacy_seq`), their `prev_hash` (the hash of the entry before them in
-- that chain, whichever account it was) and their `hash`. Each gets its number in its
-- account's chain (`seq`, 1.. in their old order); the first entry an account writes after
-- this version points at its last old one. `stepward audit verify` checks both: every
-- account's chain, and the old shared chain link by link.
DROP TRIGGER audit_is_append_only_update;
DROP TRIGGER audit_is_append_only_delete;
ALTER TABLE audit_log RENAME TO audit_log_shared_chain;

CREATE TABLE audit_log (
    account_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    run_id      TEXT,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    actor_name  TEXT NOT NULL,
    action      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    at          INTEGER NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    legacy_seq  INTEGER,
    -- A tallied entry's key (what it counts, and its window); NULL for every other entry.
    tally_key   TEXT,
    -- How many uses a tallied entry counts, and the last one; not covered by the hash.
    count       INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
    last_at     INTEGER NOT NULL,
    PRIMARY KEY (account_id, seq)
);

INSERT INTO audit_log (account_id, seq, run_id, actor_kind, actor_id, actor_name, action,
                       detail, at, prev_hash, hash, legacy_seq, tally_key, count, last_at)
SELECT account_id,
       ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY seq),
       run_id, actor_kind, actor_id, actor_name, action, detail, at, prev_hash, hash,
       seq, NULL, 1, at
FROM audit_log_shared_chain
ORDER BY seq;

DROP TABLE audit_log_shared_chain;

CREATE UNIQUE INDEX audit_legacy_order ON audit_log(legacy_seq) WHERE legacy_seq IS NOT NULL;
CREATE UNIQUE INDEX audit_tallies ON audit_log(account_id, tally_key) WHERE tally_key IS NOT NULL;
CREATE INDEX audit_newest ON audit_log(account_id, at, seq);
CREATE INDEX audit_newest_by_action ON audit_log(account_id, action, at, seq);
CREATE INDEX audit_newest_by_actor ON audit_log(account_id, actor_kind, actor_id, at, seq);
CREATE INDEX audit_newest_by_actor_action
    ON audit_log(account_id, actor_kind, actor_id, action, at, seq);

CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE OF account_id, seq, run_id,
    actor_kind, actor_id, actor_name, action, detail, at, prev_hash, hash, legacy_seq,
    tally_key ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_tallies_only_count_up BEFORE UPDATE OF count, last_at ON audit_log
WHEN OLD.tally_key IS NULL OR NEW.count < OLD.count OR NEW.last_at < OLD.last_at
BEGIN SELECT RAISE(ABORT, 'only a tallied entry counts, and only up'); END;
