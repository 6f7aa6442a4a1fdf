-- The runs list (issue 14): who started each run, as its own columns so the list can filter
-- by it, and indexes that serve a page of newest-first runs (by creation time, then id) with
-- each filter by reading no more than the page's rows.
ALTER TABLE runs ADD COLUMN started_by_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN started_by_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN started_by_name TEXT NOT NULL DEFAULT '';

-- Runs created before this version: who started them is in their `run.created` event.
UPDATE runs SET
    started_by_kind = COALESCE((SELECT json_extract(e.payload, '$.started_by.kind')
        FROM events e WHERE e.run_id = runs.id AND e.kind = 'run.created'), 'engine'),
    started_by_id = COALESCE((SELECT json_extract(e.payload, '$.started_by.id')
        FROM events e WHERE e.run_id = runs.id AND e.kind = 'run.created'), ''),
    started_by_name = COALESCE((SELECT json_extract(e.payload, '$.started_by.name')
        FROM events e WHERE e.run_id = runs.id AND e.kind = 'run.created'), '');

DROP INDEX runs_by_account;
CREATE INDEX runs_newest ON runs(account_id, created_at DESC, id DESC);
CREATE INDEX runs_newest_by_status ON runs(account_id, status, created_at DESC, id DESC);
CREATE INDEX runs_newest_by_workflow ON runs(account_id, workflow_name, created_at DESC, id DESC);
CREATE INDEX runs_newest_by_starter
    ON runs(account_id, started_by_kind, started_by_id, created_at DESC, id DESC);
