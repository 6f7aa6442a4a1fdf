-- Tool tests (issue 40): a person ran one custom tool of an agent in a fresh sandbox, with or
-- without the agent's secrets. Every text is scrubbed of the account's values before it is
-- written; the audit entry of each test is written in the same transaction.
CREATE TABLE tool_tests (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    revision TEXT,
    script_sha256 TEXT NOT NULL,
    with_secrets INTEGER NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    actor_name TEXT NOT NULL,
    at INTEGER NOT NULL,
    arguments TEXT NOT NULL,
    outcome TEXT NOT NULL,
    result TEXT,
    error TEXT,
    printed TEXT NOT NULL,
    truncated INTEGER NOT NULL
);
CREATE INDEX tool_tests_by_tool ON tool_tests (account_id, agent, tool, at DESC);
