-- The outbox of approve-link mail (issue 41): parking a run at a gate writes one row in the
-- park's transaction, one per run, gate and attempt. A process started with --smtp claims due
-- rows for a while (claimed_by, claimed_until), sends, and records the outcome; a claim that
-- ran out is due again. The content is the workflow's and the step's names and the step's
-- explanation, scrubbed; the link is derived when the mail is sent and never stored.
-- `delivered`: who already got the mail now due, so a retry mails only the others.
CREATE TABLE gate_mail (
    id INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    content TEXT NOT NULL,
    people TEXT NOT NULL,
    remind_after_secs INTEGER,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    due_at INTEGER,
    mails_sent INTEGER NOT NULL DEFAULT 0,
    tries INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until INTEGER,
    last_sent_at INTEGER,
    last_recipients TEXT NOT NULL DEFAULT '[]',
    delivered TEXT NOT NULL DEFAULT '[]',
    last_try_at INTEGER,
    last_error TEXT,
    note TEXT,
    UNIQUE (run_id, step_id, attempt)
);
CREATE INDEX gate_mail_due ON gate_mail (status, due_at);
