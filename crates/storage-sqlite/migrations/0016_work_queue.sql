-- The run queue (issue 38): one row a job (today: a step attempt), claimed by a worker under a
-- lease whose end is the store's clock (milliseconds since the epoch). `claims` counts the
-- claims: with the attempt it fences off a worker whose lease was taken from it. The holder
-- names its host, the host's boot and its process (pid and start time), so a process on the
-- same host can prove it dead. A run, step and attempt is queued once.
CREATE TABLE work_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    run_id TEXT NOT NULL REFERENCES runs(id),
    step TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    slot TEXT NOT NULL,
    state TEXT NOT NULL,
    claims INTEGER NOT NULL DEFAULT 0,
    holder_host TEXT,
    holder_boot TEXT,
    holder_pid INTEGER,
    holder_start INTEGER,
    lease_until INTEGER,
    enqueued_at INTEGER NOT NULL,
    UNIQUE (run_id, step, attempt)
);
-- The claim takes the oldest queued job of a slot kind; the reaper reads the held ones.
CREATE INDEX work_queue_waiting ON work_queue (state, slot, id);
