import type { StoredKey } from "../../domain/model.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Queryable } from "../database.ts";
import { policyFromColumn } from "../policy/policies.ts";
import { KEY_SELECT, storedKeyFrom } from "../rows.ts";

// The webhook messages that are not key events (docs/webhooks.md): key.expiring and
// key.usage_exceeded. Each is recorded as sent (expiry_notices, usage_notices) in the statement that
// writes its messages, so that however many processes notice the same thing, it is sent once.

export interface DueNotice {
  keyId: number;
  expiresAt: Date;
  /** The notice: this many seconds before the expiry. */
  seconds: number;
}

const DUE = `
  SELECT k.id, k.expires_at, n.seconds
    FROM api_keys k CROSS JOIN unnest($2::integer[]) AS n(seconds)
   WHERE k.expires_at IS NOT NULL AND k.expiry_recorded_at IS NULL AND k.deleted_at IS NULL
     AND k.expires_at > $1::timestamptz AND k.expires_at <= $1::timestamptz + $5::integer * interval '1 second'
     AND k.expires_at - n.seconds * interval '1 second' <= $1::timestamptz
     AND k.expires_at - n.seconds * interval '1 second' > coalesce(k.expiry_set_at, k.created_at)
     AND ($3::timestamptz IS NULL OR k.expires_at - n.seconds * interval '1 second' > $3::timestamptz)
     AND NOT EXISTS (SELECT 1 FROM expiry_notices x WHERE x.key_id = k.id AND x.expires_at = k.expires_at AND x.seconds = n.seconds)
   ORDER BY k.expires_at, n.seconds DESC
   LIMIT $4`;

/**
 * The notices due at `now` and not sent yet: of live keys not yet expired, whose notice time has come
 * and had not passed when the key got its expiry. `since` narrows it to notice times after it (what
 * an earlier look at `since` has seen already), so a look every few seconds reads few rows.
 */
export async function expiryNoticesDue(q: Queryable, now: Date, notices: readonly number[], since: Date | null, limit: number): Promise<DueNotice[]> {
  if (notices.length === 0) return [];
  const rows = await q.query(DUE, [now, notices, since, limit, Math.max(...notices)]);
  return rows.map((row) => ({ keyId: row.id as number, expiresAt: row.expires_at as Date, seconds: row.seconds as number }));
}

/** The keys of notices, as they are now, with their directory objects: what a notice shows. */
export async function noticeKeys(q: Queryable, ids: readonly number[]): Promise<StoredKey[]> {
  return (await q.query(`${KEY_SELECT} WHERE k.id = ANY($1::integer[])`, [ids])).map((row) => storedKeyFrom(row));
}

/** A notice to send, with the body's data.event as JSON text. */
export interface ExpiryNotice extends DueNotice {
  payload: string;
}

const EXPIRY_SEND = `
  WITH input AS (
    SELECT * FROM unnest($1::integer[], $2::timestamptz[], $3::integer[], $4::text[]) AS v(key_id, expires_at, seconds, payload)),
  recorded AS (
    INSERT INTO expiry_notices (key_id, expires_at, seconds, sent_at) SELECT key_id, expires_at, seconds, $5 FROM input
    ON CONFLICT DO NOTHING
    RETURNING key_id, expires_at, seconds),
  queued AS (
    INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at, next_attempt_at)
    SELECT w.id, 'key.expiring', v.payload::json, $5, $5
      FROM recorded r JOIN input v USING (key_id, expires_at, seconds) JOIN api_keys k ON k.id = r.key_id
      CROSS JOIN LATERAL webhooks_for('key.expiring', k.tenant_id, k.domain_id, k.application_id, k.subscriber_id) w
    RETURNING 1)
  SELECT (SELECT count(*) FROM recorded)::int AS notices, (SELECT count(*) FROM queued)::int AS messages`;

/** Records notices as sent and writes their messages; a notice recorded already (by another process) is skipped. */
export async function expiryNoticesSend(q: Queryable, notices: readonly ExpiryNotice[], now: Date): Promise<{ notices: number; messages: number }> {
  if (notices.length === 0) return { notices: 0, messages: 0 };
  const rows = await q.query(EXPIRY_SEND, [
    notices.map((n) => n.keyId), notices.map((n) => n.expiresAt), notices.map((n) => n.seconds), notices.map((n) => n.payload), now,
  ]);
  return { notices: rows[0]!.notices as number, messages: rows[0]!.messages as number };
}

/** Forgets the notices of expiries that have passed: none of them can be due again. */
export async function expiryNoticesPrune(q: Queryable, now: Date): Promise<void> {
  await q.query("DELETE FROM expiry_notices WHERE expires_at < $1", [now]);
}

/** The scope and policy of a directory entity that holds a balance (docs/adr/0013). */
export async function entityHolderFind(
  q: Queryable, level: "customer" | "domain" | "application" | "subscriber", id: number,
): Promise<{ scope: Scope; policy: Policy | null } | undefined> {
  const select = {
    customer: "SELECT id AS tenant_id, NULL::integer AS domain_id, NULL::integer AS application_id, NULL::integer AS subscriber_id, policy FROM customers",
    domain: "SELECT tenant_id, id AS domain_id, NULL::integer AS application_id, NULL::integer AS subscriber_id, policy FROM domains",
    application: "SELECT tenant_id, domain_id, id AS application_id, NULL::integer AS subscriber_id, policy FROM applications",
    subscriber: "SELECT tenant_id, domain_id, NULL::integer AS application_id, id AS subscriber_id, policy FROM subscribers",
  }[level];
  const [row] = await q.query(`${select} WHERE id = $1`, [id]);
  if (!row) return undefined;
  const scope = {
    tenantId: row.tenant_id as number,
    domainId: (row.domain_id ?? null) as number | null,
    applicationId: (row.application_id ?? null) as number | null,
    subscriberId: (row.subscriber_id ?? null) as number | null,
  };
  return { scope, policy: policyFromColumn(row.policy) };
}

const USAGE_SEND = `
  WITH recorded AS (
    INSERT INTO usage_notices (holder, generation, sent_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING holder),
  queued AS (
    INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at, next_attempt_at)
    SELECT w.id, 'key.usage_exceeded', $4::json, $3, $3
      FROM recorded CROSS JOIN LATERAL webhooks_for('key.usage_exceeded', $5, $6, $7, $8) w
    RETURNING 1)
  SELECT (SELECT count(*) FROM recorded)::int AS notices, (SELECT count(*) FROM queued)::int AS messages`;

/** Records that a balance's generation reached 0 and writes its messages, unless it was recorded already. */
export async function usageNoticeSend(
  q: Queryable, holder: string, generation: number, scope: Scope, payload: string, now: Date,
): Promise<{ notices: number; messages: number }> {
  const rows = await q.query(USAGE_SEND, [holder, generation, now, payload, scope.tenantId, scope.domainId, scope.applicationId, scope.subscriberId]);
  return { notices: rows[0]!.notices as number, messages: rows[0]!.messages as number };
}
