-- Who created each API key (issue 11, finding 5): the person's id. Removing that person
-- revokes their keys, demoting them revokes those above the new role, so the keys of a person
-- are found by this column.
ALTER TABLE api_keys ADD COLUMN created_by TEXT;

-- Keys created before this version: their creator is the person of their `api_key.create`
-- audit entry (a key made by a key, which is no longer allowed, keeps no creator).
UPDATE api_keys SET created_by = (
    SELECT a.actor_id FROM audit_log a
    WHERE a.action = 'api_key.create' AND a.actor_kind = 'person'
      AND a.account_id = api_keys.account_id
      AND json_extract(a.detail, '$.key') = api_keys.key_id
    ORDER BY a.seq LIMIT 1);

CREATE INDEX api_keys_by_creator ON api_keys(created_by) WHERE created_by IS NOT NULL;
