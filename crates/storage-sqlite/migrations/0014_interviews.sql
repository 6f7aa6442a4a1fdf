-- The interviews in progress (the assistant interviewing a person about a workflow), kept in
-- the store instead of one server's memory: per account, per person, bounded in count and in
-- bytes by the store (storage::interviews::InterviewQuota). `state` is the interview's whole
-- state as JSON, scrubbed with the account's values before it was written.
CREATE TABLE interviews (
    id TEXT PRIMARY KEY NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    person TEXT NOT NULL,
    state TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_used INTEGER NOT NULL
);
CREATE INDEX interviews_by_account ON interviews (account_id, person, last_used);
