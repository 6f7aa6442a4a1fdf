-- Share links (G24, issue 16 §5): whether the person who made the link ticked "include tool
-- results". Without it a share page shows each agent tool call's name, path and outcome, but
-- no result or file contents. Links made before this column existed never included them.
ALTER TABLE share_links ADD COLUMN include_tool_results INTEGER NOT NULL DEFAULT 0
    CHECK (include_tool_results IN (0, 1));
