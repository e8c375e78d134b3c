-- Only the keys a restricted key made have ancestors (0008); every other key's array is empty, and
-- the GIN index api_keys_ancestors held an entry for each of them: the largest single cost of inserting
-- a key (of 39 µs a row for 100,000 rows with all of api_keys' indexes, 16 were this index's;
-- docs/migration.md, "Cost"). It now holds the keys with ancestors alone; the conditions that ask it
-- (store/directory/scope-sql.ts, withinLineage, and the trigger function below) say `ancestors <> '{}'`
-- so that the planner may use it.
DROP INDEX api_keys_ancestors;
CREATE INDEX api_keys_ancestors ON api_keys USING gin (ancestors) WHERE ancestors <> '{}';

CREATE OR REPLACE FUNCTION api_keys_lineage_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM api_keys c WHERE c.ancestors <> '{}' AND c.ancestors @> ARRAY[coalesce(NEW.lineage, NEW.id)]) THEN
    PERFORM pg_notify('keyplane_directory', TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END $$;
