-- Restricted keys and lineage (docs/api.md, "Restricted keys"). A key made through the key paths
-- records the key that made it (parent_id); a key is bound by its own policy and by its ancestors'.
--
-- lineage: the id of the first key of a key's rotation chain, carried by every rotation (NULL for that
-- first key itself: its own id). A key's own counters are held by `key:<lineage>`, so a rotated key
-- continues its predecessor's windows and balance, and during a grace period both tokens count
-- against the same ones.
-- ancestors: the lineages of the key's parent, its parent's parent, ..., outermost first: what binds
-- the key, and, by the GIN index, "the descendants of K" in one indexed condition.
-- Existing keys have no parent and no ancestors, and are their own lineage: they behave as before.
ALTER TABLE api_keys ADD COLUMN parent_id integer;
ALTER TABLE api_keys ADD COLUMN lineage integer;
ALTER TABLE api_keys ADD COLUMN ancestors integer[] NOT NULL DEFAULT '{}';
CREATE INDEX api_keys_lineage ON api_keys (lineage) WHERE lineage IS NOT NULL;
CREATE INDEX api_keys_ancestors ON api_keys USING gin (ancestors);

-- A change of a key's policy, or its rotation, changes the chains of its descendants: when it has
-- any, every process forgets the policies it resolved, as for a change of the directory (0004).
CREATE FUNCTION api_keys_lineage_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM api_keys c WHERE c.ancestors @> ARRAY[coalesce(NEW.lineage, NEW.id)]) THEN
    PERFORM pg_notify('keyplane_directory', TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER api_keys_lineage_changed AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN (OLD.policy IS DISTINCT FROM NEW.policy OR OLD.replaced_by IS DISTINCT FROM NEW.replaced_by)
  EXECUTE FUNCTION api_keys_lineage_notify();
