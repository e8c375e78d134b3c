-- Every change to the directory that platform paths name (customers, domains, applications,
-- subscribers) is announced on channel keyplane_directory, whoever made it: each process forgets what
-- it had resolved of platform paths (src/services/path-scope-cache.ts). See docs/adr/0008-directory-cache.md.
--
-- Statement-level: one notification per statement and table, the cascade of a deleted customer
-- included, not one per row. The payload is the table's name, and PostgreSQL folds identical payloads
-- of one transaction into one. Users are left out: no platform path names a user.
CREATE FUNCTION directory_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('keyplane_directory', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER customers_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON customers
  FOR EACH STATEMENT EXECUTE FUNCTION directory_notify();
CREATE TRIGGER domains_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON domains
  FOR EACH STATEMENT EXECUTE FUNCTION directory_notify();
CREATE TRIGGER applications_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON applications
  FOR EACH STATEMENT EXECUTE FUNCTION directory_notify();
CREATE TRIGGER subscribers_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON subscribers
  FOR EACH STATEMENT EXECUTE FUNCTION directory_notify();
