-- The key lifecycle (docs/api.md, "Lifecycle"): expiry, rotation, last use, and the events of every change.
ALTER TABLE api_keys
  ADD COLUMN expires_at timestamptz,
  -- Written in batches, at most once a minute per key and process: never on a request's path.
  ADD COLUMN last_used_at timestamptz,
  -- The key that replaced this one in a rotation; from then on the name belongs to that key.
  ADD COLUMN replaced_by integer REFERENCES api_keys (id),
  -- When keyplane recorded the key's expiry (its `expired` event): the periodic sweep does, and so does a
  -- provisioning or a rename that needs the key's name first. An index predicate cannot look at the
  -- clock, so until then an expired key keeps its place in api_keys_identity_live.
  ADD COLUMN expiry_recorded_at timestamptz;

-- A name belongs to the live key that holds it: not deleted, not replaced, not recorded as expired.
DROP INDEX api_keys_identity_live;
CREATE UNIQUE INDEX api_keys_identity_live ON api_keys
  (tenant_id, coalesce(domain_id, 0), coalesce(application_id, 0), coalesce(subscriber_id, 0), name)
  WHERE deleted_at IS NULL AND replaced_by IS NULL AND expiry_recorded_at IS NULL AND user_id IS NULL;
DROP INDEX api_keys_user_live;
CREATE UNIQUE INDEX api_keys_user_live ON api_keys (user_id)
  WHERE deleted_at IS NULL AND replaced_by IS NULL AND expiry_recorded_at IS NULL AND user_id IS NOT NULL;
-- What the sweep looks for: expiries not yet recorded.
CREATE INDEX api_keys_expiring ON api_keys (expires_at)
  WHERE expires_at IS NOT NULL AND expiry_recorded_at IS NULL AND deleted_at IS NULL;

-- Other processes drop a changed key from their caches: announce changes of expiry and rotation too.
-- (last_used_at is left out on purpose: it changes all the time and no answer depends on it.)
DROP TRIGGER api_keys_changed ON api_keys;
CREATE TRIGGER api_keys_changed AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active
                  OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
                  OR OLD.name IS DISTINCT FROM NEW.name
                  OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
                  OR OLD.replaced_by IS DISTINCT FROM NEW.replaced_by)
  EXECUTE FUNCTION api_keys_notify();

-- Every change to a key, written in the same statement or transaction as the change. The key's name,
-- type and scope are kept as they were, so an event reads the same after the key is gone, and a
-- caller's events are found by scope. No token, in any form.
CREATE TABLE key_events (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at             timestamptz NOT NULL,
  action         text NOT NULL CHECK (action IN ('created', 'updated', 'rotated', 'deleted', 'expired')),
  key_id         integer NOT NULL REFERENCES api_keys (id),
  key_name       text NOT NULL,
  key_type       text NOT NULL,
  tenant_id      integer NOT NULL,
  domain_id      integer,
  application_id integer,
  subscriber_id  integer,
  actor          jsonb NOT NULL CHECK (actor ? 'type'),
  changes        jsonb NOT NULL,
  request_id     text
);
CREATE INDEX key_events_key ON key_events (key_id, id);
CREATE INDEX key_events_tenant ON key_events (tenant_id, id);
CREATE INDEX key_events_domain ON key_events (domain_id, id) WHERE domain_id IS NOT NULL;

-- Append-only: history is not rewritten.
CREATE FUNCTION key_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'key_events is append-only';
END $$;
CREATE TRIGGER key_events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON key_events
  FOR EACH STATEMENT EXECUTE FUNCTION key_events_append_only();
