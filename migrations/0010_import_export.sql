-- Import and export of keys (docs/migration.md).
--
-- Exports: each is an event in the admin's trail, action `exported`, about
-- no one key, with the number of keys it gave (`count`). It has no key and no scope, so no scope's
-- events list it, only the admin's (GET /admin/events), and no webhook gets it (no webhook asks for
-- `key.exported`). Never a token: the event says how many, not which.
ALTER TABLE key_events ADD COLUMN count integer;
ALTER TABLE key_events
  ALTER COLUMN key_id DROP NOT NULL,
  ALTER COLUMN key_name DROP NOT NULL,
  ALTER COLUMN key_type DROP NOT NULL,
  ALTER COLUMN tenant_id DROP NOT NULL;
ALTER TABLE key_events DROP CONSTRAINT key_events_action_check;
ALTER TABLE key_events ADD CONSTRAINT key_events_action_check
  CHECK (action IN ('created', 'updated', 'rotated', 'deleted', 'expired', 'leaked', 'exported'));
ALTER TABLE key_events ADD CONSTRAINT key_events_about_a_key CHECK (CASE WHEN action = 'exported'
  THEN key_id IS NULL AND tenant_id IS NULL AND count IS NOT NULL
  ELSE key_id IS NOT NULL AND key_name IS NOT NULL AND key_type IS NOT NULL AND tenant_id IS NOT NULL AND count IS NULL END);

-- Imported keys send no webhook messages (docs/migration.md): their events are history brought over,
-- not news. The rest as in 0006.
CREATE OR REPLACE FUNCTION key_events_to_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- While no webhook is active (the usual case), this is one probe of an index.
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE active) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_deliveries (webhook_id, type, event_id, created_at, next_attempt_at)
  SELECT w.id, 'key.' || e.action, e.id, e.at, e.at
    FROM recorded e CROSS JOIN LATERAL webhooks_for('key.' || e.action, e.tenant_id, e.domain_id, e.application_id, e.subscriber_id) w
   WHERE e.actor->>'type' <> 'import'
   ORDER BY e.id;
  RETURN NULL;
END $$;
