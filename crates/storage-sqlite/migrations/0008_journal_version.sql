-- The journal schema version of each event's payload (issue 18): the engine reads a payload
-- in the shape of the version it was written in. Every event written before this column
-- existed is version 1, the shape of the first typed journal.
ALTER TABLE events ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
