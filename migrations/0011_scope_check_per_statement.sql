-- A key's scope is checked once per statement that inserts keys, not once per key (docs/migration.md,
-- "Cost"): the row trigger of 0003 ran its plpgsql for every row, more than half of what inserting a
-- key costs the server, and an import inserts a thousand keys a statement. The check is the same
-- (docs/adr/0007-provisioning-cost.md: no parent row is locked, and a parent is never removed), made
-- on the statement's new rows together; it still refuses the statement with foreign_key_violation.
-- A change of a key's scope columns is still checked row by row (0003): a transition table cannot
-- be limited to some columns' updates, and such updates are rare.
CREATE FUNCTION api_keys_inserted_scope_exists() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  k record;
BEGIN
  SELECT n.tenant_id, n.domain_id, n.application_id, n.subscriber_id INTO k
    FROM inserted_keys n
   WHERE NOT EXISTS (SELECT 1 FROM customers WHERE id = n.tenant_id)
      OR (n.domain_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM domains WHERE id = n.domain_id AND tenant_id = n.tenant_id))
      OR (n.application_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM applications WHERE id = n.application_id AND domain_id = n.domain_id))
      OR (n.subscriber_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM subscribers WHERE id = n.subscriber_id AND domain_id = n.domain_id))
   LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING MESSAGE = format('api_keys: no scope customer %s / domain %s / application %s / subscriber %s',
      k.tenant_id, k.domain_id, k.application_id, k.subscriber_id);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER api_keys_scope_exists ON api_keys;
CREATE TRIGGER api_keys_scope_exists BEFORE UPDATE OF tenant_id, domain_id, application_id, subscriber_id ON api_keys
  FOR EACH ROW EXECUTE FUNCTION api_keys_scope_exists();
CREATE TRIGGER api_keys_inserted_scope_exists AFTER INSERT ON api_keys REFERENCING NEW TABLE AS inserted_keys
  FOR EACH STATEMENT EXECUTE FUNCTION api_keys_inserted_scope_exists();
