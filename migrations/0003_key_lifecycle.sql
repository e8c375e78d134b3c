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

-- A key's scope is checked without locking its parents (docs/adr/0007-provisioning-cost.md). A foreign
-- key locks the parent row (FOR KEY SHARE) for every key inserted under it: all the keys of one
-- customer queue on one row, and concurrent lockers make a new MultiXact each time, holding every
-- locker so far. Parents are never removed (soft deletion, enforced below) and their ids never change,
-- so a check that the scope exists when a key is written holds for good.
ALTER TABLE api_keys
  DROP CONSTRAINT api_keys_tenant_id_fkey,
  DROP CONSTRAINT api_keys_domain_id_tenant_id_fkey,
  DROP CONSTRAINT api_keys_application_id_domain_id_fkey,
  DROP CONSTRAINT api_keys_subscriber_id_domain_id_fkey;
CREATE FUNCTION api_keys_scope_exists() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM customers WHERE id = NEW.tenant_id)
     OR (NEW.domain_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM domains WHERE id = NEW.domain_id AND tenant_id = NEW.tenant_id))
     OR (NEW.application_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM applications WHERE id = NEW.application_id AND domain_id = NEW.domain_id))
     OR (NEW.subscriber_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM subscribers WHERE id = NEW.subscriber_id AND domain_id = NEW.domain_id))
  THEN
    RAISE foreign_key_violation USING MESSAGE = format('api_keys: no scope customer %s / domain %s / application %s / subscriber %s',
      NEW.tenant_id, NEW.domain_id, NEW.application_id, NEW.subscriber_id);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER api_keys_scope_exists BEFORE INSERT OR UPDATE OF tenant_id, domain_id, application_id, subscriber_id ON api_keys
  FOR EACH ROW EXECUTE FUNCTION api_keys_scope_exists();

CREATE FUNCTION keyplane_soft_delete_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are deleted by setting deleted_at, never removed', TG_TABLE_NAME;
END $$;
CREATE TRIGGER customers_soft_delete_only BEFORE DELETE OR TRUNCATE ON customers FOR EACH STATEMENT EXECUTE FUNCTION keyplane_soft_delete_only();
CREATE TRIGGER domains_soft_delete_only BEFORE DELETE OR TRUNCATE ON domains FOR EACH STATEMENT EXECUTE FUNCTION keyplane_soft_delete_only();
CREATE TRIGGER applications_soft_delete_only BEFORE DELETE OR TRUNCATE ON applications FOR EACH STATEMENT EXECUTE FUNCTION keyplane_soft_delete_only();
CREATE TRIGGER subscribers_soft_delete_only BEFORE DELETE OR TRUNCATE ON subscribers FOR EACH STATEMENT EXECUTE FUNCTION keyplane_soft_delete_only();
CREATE TRIGGER api_keys_soft_delete_only BEFORE DELETE OR TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION keyplane_soft_delete_only();

-- Customer-level keys have no domain: they need no entry in the index that finds a domain's keys.
DROP INDEX api_keys_domain_live;
CREATE INDEX api_keys_domain_live ON api_keys (domain_id, id) WHERE deleted_at IS NULL AND domain_id IS NOT NULL;
