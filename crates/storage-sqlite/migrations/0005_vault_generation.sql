-- The vault's generation per account (G16): a counter that every change of an account's items,
-- values or superseded values moves, in the same transaction as the change (triggers, so no
-- writer can forget it). A process that compiled an account's scrub set checks the counter
-- before each write and rebuilds the set when it moved, so a value set by another process (a
-- `stepward secrets set` while `serve` runs) is scrubbed from that process's next write on.
CREATE TABLE vault_generations (
    account_id  TEXT PRIMARY KEY,
    generation  INTEGER NOT NULL
);

CREATE TRIGGER vault_items_insert_generation AFTER INSERT ON vault_items
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_items_update_generation AFTER UPDATE ON vault_items
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_items_delete_generation AFTER DELETE ON vault_items
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (OLD.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_values_insert_generation AFTER INSERT ON vault_values
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_values_update_generation AFTER UPDATE ON vault_values
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_values_delete_generation AFTER DELETE ON vault_values
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (OLD.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_value_history_insert_generation AFTER INSERT ON vault_value_history
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_value_history_update_generation AFTER UPDATE ON vault_value_history
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (NEW.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vault_value_history_delete_generation AFTER DELETE ON vault_value_history
BEGIN
    INSERT INTO vault_generations (account_id, generation) VALUES (OLD.account_id, 1)
        ON CONFLICT(account_id) DO UPDATE SET generation = generation + 1;
END;
