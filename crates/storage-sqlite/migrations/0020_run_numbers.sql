-- Each run's short number within its workflow (issue 42, point 3): people say "ledger #12",
-- not a run id. The store gives the number in the run's own transaction from a counter per
-- account and workflow (an upsert that returns the new value, the same statement on SQLite and
-- Postgres), so concurrent starts on any store get each number once, and a run that is not
-- created gives none away. Existing runs are numbered here in the order they started (the
-- order they were written breaks a tie, as in the runs list), in one pass over the table, and
-- the counters start after them.
ALTER TABLE runs ADD COLUMN number INTEGER;

UPDATE runs SET number = numbered.n
FROM (
    SELECT id, ROW_NUMBER() OVER (
        PARTITION BY account_id, workflow_name ORDER BY created_at, rowid
    ) AS n
    FROM runs
) AS numbered
WHERE numbered.id = runs.id;

CREATE UNIQUE INDEX runs_by_workflow_number ON runs (account_id, workflow_name, number);

CREATE TABLE run_numbers (
    account_id TEXT NOT NULL,
    workflow_name TEXT NOT NULL,
    last_number INTEGER NOT NULL,
    PRIMARY KEY (account_id, workflow_name)
) WITHOUT ROWID;

INSERT INTO run_numbers (account_id, workflow_name, last_number)
    SELECT account_id, workflow_name, MAX(number) FROM runs GROUP BY account_id, workflow_name;
