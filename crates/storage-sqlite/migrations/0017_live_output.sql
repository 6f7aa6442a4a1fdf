-- What a running step printed so far (issue 38): the run page's live view while the step runs,
-- scrubbed and bounded as the record is, replaced as it grows and removed when the attempt
-- ends. The record keeps what the step printed, at its end, as events.
CREATE TABLE live_output (
    run_id TEXT NOT NULL REFERENCES runs(id),
    step TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    stdout TEXT NOT NULL,
    stderr TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, step, attempt)
);
