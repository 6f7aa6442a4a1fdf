-- The core schema: accounts, runs, step attempts, the event log, decisions, parked state and
-- the audit log. Times are milliseconds since the Unix epoch; JSON columns hold serde_json text.

CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE runs (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts(id),
    status              TEXT NOT NULL,
    workflow_name       TEXT NOT NULL,
    workflow_file_name  TEXT NOT NULL,
    workflow_source     TEXT NOT NULL,
    workflow_hash       TEXT NOT NULL,
    inputs              TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX runs_by_account ON runs(account_id, created_at);
CREATE INDEX runs_by_status ON runs(status);

CREATE TABLE attempts (
    run_id               TEXT NOT NULL REFERENCES runs(id),
    step_id              TEXT NOT NULL,
    attempt              INTEGER NOT NULL,
    network              TEXT NOT NULL,
    status               TEXT NOT NULL,
    inputs               TEXT NOT NULL,
    started_at           INTEGER NOT NULL,
    finished_at          INTEGER,
    interpreter_version  TEXT,
    backend              TEXT,
    isolation_notes      TEXT,
    output               TEXT,
    reason               TEXT,
    PRIMARY KEY (run_id, step_id, attempt)
);
CREATE INDEX attempts_running ON attempts(status) WHERE status = 'running';

-- The event log is append-only: no row is ever changed or removed.
CREATE TABLE events (
    run_id   TEXT NOT NULL REFERENCES runs(id),
    seq      INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    payload  TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TRIGGER events_are_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_are_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE decisions (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    step_id     TEXT,
    attempt     INTEGER,
    kind        TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    actor_name  TEXT NOT NULL,
    door        TEXT NOT NULL,
    note        TEXT NOT NULL,
    at          INTEGER NOT NULL
);
-- A gate is decided exactly once, even when two people press at the same moment.
CREATE UNIQUE INDEX decisions_one_per_gate ON decisions(run_id, step_id, attempt)
    WHERE kind IN ('approve', 'reject');

CREATE TABLE parked (
    run_id     TEXT PRIMARY KEY REFERENCES runs(id),
    step_id    TEXT NOT NULL,
    state      TEXT NOT NULL,
    parked_at  INTEGER NOT NULL
);

CREATE TABLE audit_log (
    seq         INTEGER PRIMARY KEY,
    account_id  TEXT NOT NULL,
    run_id      TEXT,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    actor_name  TEXT NOT NULL,
    action      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    at          INTEGER NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
