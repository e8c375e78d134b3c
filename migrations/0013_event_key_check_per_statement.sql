-- An event's key is checked once per statement that records events, not by a foreign key (docs/migration.md,
-- "Cost"). The foreign key's check ran a query for every event and locked the key's row (FOR KEY SHARE:
-- a WAL record, and the row's page written again) for it: for an imported key, two of the twelve WAL
-- records and some 5 µs of the server's time. Keys are never removed (0003) and their ids never
-- change, so a check that the key exists when its event is written holds for good, as the scope's
-- check of 0011 does (docs/adr/0007-provisioning-cost.md). It refuses the statement with
-- foreign_key_violation, as the foreign key did.
ALTER TABLE key_events DROP CONSTRAINT key_events_key_id_fkey;
CREATE FUNCTION key_events_key_exists() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing integer;
BEGIN
  SELECT e.key_id INTO missing
    FROM recorded e
   WHERE e.key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = e.key_id)
   LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING MESSAGE = format('key_events: no key %s', missing);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER key_events_key_exists AFTER INSERT ON key_events REFERENCING NEW TABLE AS recorded
  FOR EACH STATEMENT EXECUTE FUNCTION key_events_key_exists();
