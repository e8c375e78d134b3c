-- Lifecycle webhooks (docs/webhooks.md). A message is written in the same transaction as what it
-- tells of: for a key event, by the trigger below on key_events, whoever recorded the event and
-- whatever its action (a new action reaches the webhooks that subscribe to `key.<action>` with no
-- code of its own); for a notice that is not an event (key.expiring, key.usage_exceeded), with the
-- record that it was sent. Senders in any process claim due deliveries with FOR UPDATE SKIP LOCKED.

CREATE TABLE webhooks (
  id             integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- It gets the messages of the keys inside this scope; no customer: of every key (the admin's).
  tenant_id      integer REFERENCES customers (id),
  domain_id      integer,
  application_id integer,
  subscriber_id  integer,
  url            text NOT NULL CHECK (char_length(url) <= 2048),
  events         text[] NOT NULL,
  description    text,
  active         boolean NOT NULL,
  -- The signing secret, sealed as tokens are (AES-256-GCM under the master key), bound to the row's id.
  secret_sealed  bytea NOT NULL,
  created_at     timestamptz NOT NULL,
  modified_at    timestamptz NOT NULL,
  FOREIGN KEY (domain_id, tenant_id) REFERENCES domains (id, tenant_id),
  FOREIGN KEY (application_id, domain_id) REFERENCES applications (id, domain_id),
  FOREIGN KEY (subscriber_id, domain_id) REFERENCES subscribers (id, domain_id),
  CHECK (tenant_id IS NOT NULL OR domain_id IS NULL),
  CHECK (domain_id IS NOT NULL OR (application_id IS NULL AND subscriber_id IS NULL)),
  CHECK (application_id IS NULL OR subscriber_id IS NULL)
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, id);
CREATE INDEX webhooks_active ON webhooks (tenant_id) WHERE active;

-- The active webhooks that subscribe to `type` and whose scope contains the given one (docs/api.md's
-- "may manage", with a webhook of no customer containing every scope): the one definition of who gets
-- a message, used by the trigger and by the notices alike.
CREATE FUNCTION webhooks_for(type text, tenant integer, domain integer, application integer, subscriber integer)
RETURNS TABLE (id integer) LANGUAGE sql STABLE AS $$
  SELECT w.id FROM webhooks w
   WHERE w.active AND type = ANY (w.events)
     AND (w.tenant_id IS NULL OR (w.tenant_id = tenant
          AND (w.domain_id IS NULL OR w.domain_id = domain)
          AND (w.application_id IS NULL OR w.application_id = application)
          AND (w.subscriber_id IS NULL OR w.subscriber_id = subscriber)))
$$;

-- The outbox: one row per message and webhook, due at `next_attempt_at`. A claim holds it until
-- `lease_until`: a process killed mid-attempt leaves it to be claimed again then (its attempt recorded
-- as abandoned). `claim` moves at each claim, so that only the claimant's result is written. A claim
-- changes no indexed column, so that PostgreSQL can update the row in place (HOT, room left by the
-- fill factor): a message costs its insert and the write of its outcome, not a third set of index entries.
--
-- No foreign key to webhooks: its check would lock the webhook's row (FOR KEY SHARE) in every
-- transaction that writes a message, and the concurrent provisionings of one customer would all queue
-- on it, making a new MultiXact each time (docs/adr/0007-provisioning-cost.md). A webhook's deletion
-- deletes its deliveries; one written meanwhile for the deleted webhook fails when claimed.
CREATE TABLE webhook_deliveries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id      integer NOT NULL,
  type            text NOT NULL,
  -- The key event it tells of (no foreign key either: the event is written in the same statement); for
  -- a notice, `payload`, the body's data.event as JSON text.
  event_id        bigint,
  payload         json,
  -- The message's time: the body's `timestamp`.
  created_at      timestamptz NOT NULL,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  -- [{at, status, error, durationMs}], oldest first: at most eight.
  attempts        jsonb NOT NULL DEFAULT '[]',
  next_attempt_at timestamptz,
  claim           integer NOT NULL DEFAULT 0,
  -- While an attempt is under way: when it began, and until when it is the claimant's.
  claimed_at      timestamptz,
  lease_until     timestamptz,
  CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL)),
  CHECK (event_id IS NOT NULL OR payload IS NOT NULL)
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000);
-- (Every message leaves dead versions behind: vacuumed after every 5,000, not after a fifth of the
-- table, so that claims do not walk ever more dead entries of webhook_deliveries_due.)
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);

-- A message for each active webhook that wants it, in the transaction that records the events.
-- Statement-level: one call for all the events of a statement (a batch of provisioned keys, a
-- customer's deletion), whichever of its parts inserted them.
CREATE FUNCTION key_events_to_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- While no webhook is active (the usual case), this is one probe of an index.
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE active) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_deliveries (webhook_id, type, event_id, created_at, next_attempt_at)
  SELECT w.id, 'key.' || e.action, e.id, e.at, e.at
    FROM recorded e CROSS JOIN LATERAL webhooks_for('key.' || e.action, e.tenant_id, e.domain_id, e.application_id, e.subscriber_id) w
   ORDER BY e.id;
  RETURN NULL;
END $$;
CREATE TRIGGER key_events_to_webhooks AFTER INSERT ON key_events
  REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION key_events_to_webhooks();

-- Until when some sender is busy: each claim that finds work, and each outcome written, moves it a
-- second ahead (src/store/webhook-deliveries.ts). One row, read by every writer of messages.
CREATE TABLE webhook_senders (busy_until timestamptz NOT NULL);
INSERT INTO webhook_senders VALUES ('-infinity');

-- New messages wake the senders of every process, unless one is busy: a busy sender looks for new
-- messages every 100 ms, and PostgreSQL serialises the commits of every transaction that notifies (one
-- lock, held through the commit's WAL flush), which under a stream of provisionings would make them
-- commit one at a time. A wake-up only: each sender also looks for due messages now and then
-- (src/services/webhook-sender.ts).
CREATE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM queued)
     AND NOT EXISTS (SELECT 1 FROM webhook_senders s WHERE s.busy_until > (SELECT max(created_at) FROM queued)) THEN
    PERFORM pg_notify('keyplane_webhooks', '');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_queued AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS queued FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_notify();

-- key.expiring: when a key got its current expiry (the change's time, the service's clock: its
-- modified_at), so that a notice whose time had passed by then is not sent. NULL: since its creation.
ALTER TABLE api_keys ADD COLUMN expiry_set_at timestamptz;
CREATE FUNCTION api_keys_expiry_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.expiry_set_at := NEW.modified_at;
  RETURN NEW;
END $$;
CREATE TRIGGER api_keys_expiry_set BEFORE UPDATE OF expires_at ON api_keys
  FOR EACH ROW WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at) EXECUTE FUNCTION api_keys_expiry_set();

-- Each notice sent, once: per key, expiry and notice (seconds before it); per balance and generation
-- (a refill or a set starts a new one: docs/adr/0013).
CREATE TABLE expiry_notices (
  key_id     integer NOT NULL,
  expires_at timestamptz NOT NULL,
  seconds    integer NOT NULL,
  sent_at    timestamptz NOT NULL,
  PRIMARY KEY (key_id, expires_at, seconds)
);
CREATE TABLE usage_notices (
  holder     text NOT NULL,
  generation integer NOT NULL,
  sent_at    timestamptz NOT NULL,
  PRIMARY KEY (holder, generation)
);
