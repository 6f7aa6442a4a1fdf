-- The recovery of interrupted workspace writes reads the entries of a few actions at every
-- start (issue 37): through this index, not a scan of the whole log.
CREATE INDEX audit_by_action ON audit_log(action);
