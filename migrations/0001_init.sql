-- keyplane's schema: the directory of the platform's entities and the API keys.
-- Rows are deleted softly (deleted_at); uniqueness holds among live rows, through partial indexes.

CREATE TABLE customers (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$' AND name !~ '^[0-9]+$' AND lower(name) <> 'self'),
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  modified_at timestamptz NOT NULL,
  deleted_at  timestamptz
);
CREATE UNIQUE INDEX customers_name_live ON customers (lower(name)) WHERE deleted_at IS NULL;

CREATE TABLE domains (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  tenant_id   integer NOT NULL REFERENCES customers (id),
  domain      text NOT NULL CHECK (domain = lower(domain) AND char_length(domain) <= 253),
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  modified_at timestamptz NOT NULL,
  deleted_at  timestamptz,
  UNIQUE (id, tenant_id)
);
CREATE UNIQUE INDEX domains_domain_live ON domains (domain) WHERE deleted_at IS NULL;
CREATE INDEX domains_tenant ON domains (tenant_id);

CREATE TABLE applications (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  tenant_id   integer NOT NULL,
  domain_id   integer NOT NULL,
  name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$' AND name !~ '^[0-9]+$' AND lower(name) <> 'self'),
  url         text,
  method      text NOT NULL DEFAULT 'POST' CHECK (method IN ('GET', 'POST')),
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  modified_at timestamptz NOT NULL,
  deleted_at  timestamptz,
  FOREIGN KEY (domain_id, tenant_id) REFERENCES domains (id, tenant_id),
  UNIQUE (id, domain_id)
);
CREATE UNIQUE INDEX applications_name_live ON applications (domain_id, lower(name)) WHERE deleted_at IS NULL;
CREATE INDEX applications_tenant ON applications (tenant_id);

CREATE TABLE subscribers (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  tenant_id   integer NOT NULL,
  domain_id   integer NOT NULL,
  msisdn      text NOT NULL CHECK (msisdn ~ '^\+?[0-9]{3,15}$'),
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  modified_at timestamptz NOT NULL,
  deleted_at  timestamptz,
  FOREIGN KEY (domain_id, tenant_id) REFERENCES domains (id, tenant_id),
  UNIQUE (id, domain_id)
);
CREATE UNIQUE INDEX subscribers_msisdn_live ON subscribers (domain_id, msisdn) WHERE deleted_at IS NULL;
CREATE INDEX subscribers_tenant ON subscribers (tenant_id);

CREATE TABLE users (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  tenant_id   integer NOT NULL REFERENCES customers (id),
  domain_id   integer,
  email       text NOT NULL CHECK (char_length(email) <= 254 AND email LIKE '%_@_%'),
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  modified_at timestamptz NOT NULL,
  deleted_at  timestamptz,
  FOREIGN KEY (domain_id, tenant_id) REFERENCES domains (id, tenant_id)
);
CREATE UNIQUE INDEX users_email_live ON users (lower(email)) WHERE deleted_at IS NULL;
CREATE INDEX users_tenant ON users (tenant_id);

CREATE TABLE api_keys (
  id             integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- SHA-256 of the token, for look-up; the token itself only sealed (AES-256-GCM, master key).
  token_hash     bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
  token_sealed   bytea NOT NULL,
  name           text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
  active         boolean NOT NULL,
  type           text NOT NULL,
  tenant_id      integer NOT NULL REFERENCES customers (id),
  domain_id      integer,
  application_id integer,
  subscriber_id  integer,
  user_id        integer REFERENCES users (id),
  -- "namespace/name" of the ApiKey resource that manages this key, if any.
  managed_by     text,
  created_at     timestamptz NOT NULL,
  modified_at    timestamptz NOT NULL,
  deleted_at     timestamptz,
  active_at      timestamptz,
  FOREIGN KEY (domain_id, tenant_id) REFERENCES domains (id, tenant_id),
  FOREIGN KEY (application_id, domain_id) REFERENCES applications (id, domain_id),
  FOREIGN KEY (subscriber_id, domain_id) REFERENCES subscribers (id, domain_id),
  CHECK (domain_id IS NOT NULL OR (application_id IS NULL AND subscriber_id IS NULL)),
  CHECK (application_id IS NULL OR subscriber_id IS NULL),
  CHECK (user_id IS NULL OR (application_id IS NULL AND subscriber_id IS NULL)),
  CHECK (type = CASE
    WHEN user_id IS NOT NULL THEN 'user'
    WHEN application_id IS NOT NULL THEN 'application'
    WHEN subscriber_id IS NOT NULL THEN 'subscriber'
    ELSE 'customer' END)
);
-- A live key's identity is its scope and name (users' keys aside): what makes provisioning idempotent.
CREATE UNIQUE INDEX api_keys_identity_live ON api_keys
  (tenant_id, coalesce(domain_id, 0), coalesce(application_id, 0), coalesce(subscriber_id, 0), name)
  WHERE deleted_at IS NULL AND user_id IS NULL;
CREATE UNIQUE INDEX api_keys_user_live ON api_keys (user_id) WHERE deleted_at IS NULL AND user_id IS NOT NULL;
CREATE INDEX api_keys_tenant_live ON api_keys (tenant_id, id) WHERE deleted_at IS NULL;
CREATE INDEX api_keys_domain_live ON api_keys (domain_id, id) WHERE deleted_at IS NULL;
CREATE INDEX api_keys_managed_by ON api_keys (managed_by) WHERE managed_by IS NOT NULL;

-- Every change to a key is announced on channel keyplane_keys, whoever made it: each process drops the
-- key from its verification cache, and the operator requeues the ApiKey that manages it.
CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('keyplane_keys', json_build_object(
    'id', NEW.id, 'hash', encode(NEW.token_hash, 'hex'), 'managedBy', NEW.managed_by)::text);
  RETURN NULL;
END $$;
CREATE TRIGGER api_keys_changed AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active
                  OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
                  OR OLD.name IS DISTINCT FROM NEW.name)
  EXECUTE FUNCTION api_keys_notify();
