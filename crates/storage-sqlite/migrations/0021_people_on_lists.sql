-- People and places on the console's lists, not ids (issue 42, point 6). A session keeps the
-- browser it signed in with, in words ("Chrome 131 on Linux", read from the User-Agent within a
-- bound, never the header itself), and the address it signed in from; a share link keeps who
-- made it, as a run keeps who started it (kind, id, and the name then, so a person removed
-- since still reads by name). Rows from before hold none of it, and say so.
ALTER TABLE sessions ADD COLUMN browser TEXT;
ALTER TABLE sessions ADD COLUMN address TEXT;
ALTER TABLE share_links ADD COLUMN created_by_kind TEXT;
ALTER TABLE share_links ADD COLUMN created_by_id TEXT;
ALTER TABLE share_links ADD COLUMN created_by_name TEXT;
