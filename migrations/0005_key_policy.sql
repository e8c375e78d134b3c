-- Key policy (docs/api.md, "Key policy"): restrictions, rate limits and credits, on a key and on every
-- directory entity above it. A policy is kept as the JSON the API took (validated there); its credits'
-- `remaining` is the balance it starts with, and policy_balances the live one.
ALTER TABLE api_keys ADD COLUMN policy jsonb;
ALTER TABLE customers ADD COLUMN policy jsonb;
ALTER TABLE domains ADD COLUMN policy jsonb;
ALTER TABLE applications ADD COLUMN policy jsonb;
ALTER TABLE subscribers ADD COLUMN policy jsonb;

-- A change of a key's policy drops the key from every process's cache, as its other changes do.
-- (Entities' policy changes are announced on keyplane_directory by 0004's statement triggers.)
DROP TRIGGER api_keys_changed ON api_keys;
CREATE TRIGGER api_keys_changed AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active
                  OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
                  OR OLD.name IS DISTINCT FROM NEW.name
                  OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
                  OR OLD.replaced_by IS DISTINCT FROM NEW.replaced_by
                  OR OLD.policy IS DISTINCT FROM NEW.policy)
  EXECUTE FUNCTION api_keys_notify();

-- The counting of docs/adr/0013-policy-counting.md. A holder is the level and id that carries a policy:
-- 'key:17', 'customer:3', 'domain:5', 'application:8', 'subscriber:9'.
--
-- A fixed window's units handed out to processes as leases: never more than the limit.
CREATE TABLE policy_windows (
  holder       text NOT NULL,
  name         text NOT NULL,
  -- Seconds since 1970-01-01T00:00:00Z: a multiple of the limit's windowSeconds.
  window_start bigint NOT NULL,
  granted      bigint NOT NULL CHECK (granted >= 0),
  PRIMARY KEY (holder, name, window_start)
);
-- A holder's credits that no process holds. `generation` moves when the balance is set or refilled:
-- units taken under an older one are void, and never come back into the balance.
CREATE TABLE policy_balances (
  holder      text PRIMARY KEY,
  remaining   bigint NOT NULL CHECK (remaining >= 0),
  refilled_at timestamptz NOT NULL,
  generation  integer NOT NULL DEFAULT 0
);
