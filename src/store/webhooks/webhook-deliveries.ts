import type { KeyEvent } from "../../domain/keys/key-event.ts";
import type { DeliveryAttempt, DeliveryState, WebhookDelivery, WebhookType } from "../../domain/webhooks/webhook.ts";
import type { Queryable, Row } from "../database.ts";
import { EVENT_COLUMNS, eventFrom } from "../keys/key-events.ts";

// The outbox (migrations/0006_webhooks.sql): deliveries claimed by whichever process gets to them
// first, with FOR UPDATE SKIP LOCKED, for a lease; their results written back in batches.

export const WEBHOOKS_CHANNEL = "keyplane_webhooks";

/** What an attempt that a process began and never finished (it died, or lost the database) is recorded as. */
export const ABANDONED = "abandoned: the process making the attempt stopped before it ended";

/** A delivery claimed for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  id: number;
  /** The claim's number: only a result of this claim is written. */
  claim: number;
  webhookId: number;
  url: string;
  secretSealed: Buffer;
  /** The webhook is active: a delivery of an inactive one (or of one deleted as it was written) fails without an attempt. */
  active: boolean;
  type: WebhookType;
  createdAt: Date;
  /** The key event it tells of, or else `payload`, the body's data.event as JSON text. */
  event: KeyEvent | undefined;
  payload: string | undefined;
  /** Attempts made before this one. */
  attempts: number;
}

const CLAIM = `
  WITH due AS (
    SELECT d.id FROM webhook_deliveries d
     WHERE d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
     ORDER BY d.next_attempt_at
     LIMIT $2
     FOR UPDATE SKIP LOCKED),
  claimed AS (
    UPDATE webhook_deliveries d
       SET claim = d.claim + 1, claimed_at = $1, lease_until = $3,
           attempts = CASE WHEN d.lease_until IS NULL THEN d.attempts
                      ELSE d.attempts || jsonb_build_object('at', d.claimed_at, 'status', NULL, 'error', $4::text, 'durationMs', NULL) END
      FROM due WHERE d.id = due.id
    RETURNING d.id AS delivery_id, d.claim, d.webhook_id, d.type AS delivery_type, d.event_id, d.payload::text AS payload,
              d.created_at AS delivery_created_at, jsonb_array_length(d.attempts) AS attempts_made),
  busy AS (UPDATE webhook_senders SET busy_until = greatest(busy_until, $5::timestamptz) WHERE $5::timestamptz IS NOT NULL AND EXISTS (SELECT 1 FROM claimed))
  SELECT c.*, w.url, w.secret_sealed, coalesce(w.active, false) AS webhook_active, ${EVENT_COLUMNS}
    FROM claimed c LEFT JOIN webhooks w ON w.id = c.webhook_id LEFT JOIN key_events e ON e.id = c.event_id
   ORDER BY c.delivery_id`;

/**
 * Claims up to `limit` deliveries due at `now` for one attempt each, until `leaseEnd`: a process that
 * dies mid-attempt leaves the delivery due again then, and its attempt is recorded as abandoned. Rows
 * another process is claiming are skipped, never waited for. A claim that finds work says a sender is
 * busy until `busyUntil` (writers of messages then do not announce them); null leaves the record as it is.
 */
export async function deliveryClaim(q: Queryable, now: Date, limit: number, leaseEnd: Date, busyUntil: Date | null): Promise<ClaimedDelivery[]> {
  const rows = await q.query(CLAIM, [now, limit, leaseEnd, ABANDONED, busyUntil]);
  return rows.map((row) => ({
    id: Number(row.delivery_id),
    claim: row.claim as number,
    webhookId: row.webhook_id as number,
    url: (row.url ?? "") as string,
    secretSealed: (row.secret_sealed ?? Buffer.alloc(0)) as Buffer,
    active: row.webhook_active as boolean,
    type: row.delivery_type as WebhookType,
    createdAt: row.delivery_created_at as Date,
    event: row.event_id == null ? undefined : eventFrom(row),
    payload: (row.payload ?? undefined) as string | undefined,
    attempts: row.attempts_made as number,
  }));
}

/** An attempt's outcome, as the claim that made it writes it. */
export interface DeliveryResult {
  id: number;
  claim: number;
  /** None for a delivery failed without an attempt (its webhook inactive, its attempts used up). */
  attempt: DeliveryAttempt | undefined;
  state: DeliveryState;
  /** When to try again; null once delivered or failed. */
  nextAttemptAt: Date | null;
}

// Only a claimant writes a delivery (a claim skips rows another holds), so nothing else locks these rows.
const FINISH = `
  WITH busy AS (UPDATE webhook_senders SET busy_until = greatest(busy_until, $6) WHERE $6::timestamptz IS NOT NULL)
  UPDATE webhook_deliveries d
     SET attempts = d.attempts || r.attempt::jsonb, state = r.state, next_attempt_at = r.next_at, claimed_at = NULL, lease_until = NULL
    FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::text[], $5::timestamptz[]) AS r(id, claim, attempt, state, next_at)
   WHERE d.id = r.id AND d.claim = r.claim`;

/**
 * Writes attempts' outcomes, in one statement; one whose claim was taken over since (its lease ran
 * out) is dropped. `busyUntil` as for deliveryClaim.
 */
export async function deliveryFinish(q: Queryable, results: readonly DeliveryResult[], busyUntil: Date | null): Promise<void> {
  if (results.length === 0) return;
  await q.query(FINISH, [
    results.map((r) => r.id), results.map((r) => r.claim), results.map((r) => JSON.stringify(r.attempt ? [r.attempt] : [])),
    results.map((r) => r.state), results.map((r) => r.nextAttemptAt), busyUntil,
  ]);
}

/** When the next delivery may be claimed (its time, or its lease's end), if any is pending. */
export async function deliveryNextDue(q: Queryable): Promise<Date | undefined> {
  const rows = await q.query("SELECT min(greatest(next_attempt_at, lease_until)) AS at FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL");
  return (rows[0]?.at ?? undefined) as Date | undefined;
}

export interface DeliveryPage {
  /** Only deliveries with an id below this one. */
  before?: number | undefined;
  limit: number;
  state?: DeliveryState | undefined;
}

function attemptFrom(a: Record<string, unknown>): DeliveryAttempt {
  return {
    at: new Date(a.at as string),
    status: (a.status ?? null) as number | null,
    error: (a.error ?? null) as string | null,
    durationMs: (a.durationMs ?? null) as number | null,
  };
}

function deliveryFrom(row: Row): WebhookDelivery {
  return {
    id: Number(row.id),
    type: row.type as WebhookType,
    state: row.state as DeliveryState,
    createdAt: row.created_at as Date,
    attempts: (row.attempts as Record<string, unknown>[]).map(attemptFrom),
    nextAttemptAt: (row.next_attempt_at ?? null) as Date | null,
  };
}

/** A page of a webhook's deliveries, newest first. */
export async function deliveryListByWebhook(q: Queryable, webhookId: number, page: DeliveryPage): Promise<WebhookDelivery[]> {
  const rows = await q.query(
    `SELECT d.id, d.type, d.state, d.created_at, d.attempts, greatest(d.next_attempt_at, d.lease_until) AS next_attempt_at FROM webhook_deliveries d
      WHERE d.webhook_id = $1 AND ($2::bigint IS NULL OR d.id < $2) AND ($4::text IS NULL OR d.state = $4)
      ORDER BY d.id DESC LIMIT $3`,
    [webhookId, page.before ?? null, page.limit, page.state ?? null],
  );
  return rows.map(deliveryFrom);
}

export interface QueueStats {
  /** Deliveries not yet delivered nor failed. */
  pending: number;
  /** When the oldest of them was written; undefined when none is. */
  oldest: Date | undefined;
}

export async function deliveryQueueStats(q: Queryable): Promise<QueueStats> {
  const rows = await q.query("SELECT count(*)::int AS n, min(created_at) AS oldest FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL");
  return { pending: (rows[0]?.n ?? 0) as number, oldest: (rows[0]?.oldest ?? undefined) as Date | undefined };
}

/** Deletes up to `limit` delivered and failed deliveries written before `before`; how many. */
export async function deliveryPrune(q: Queryable, before: Date, limit: number): Promise<number> {
  const rows = await q.query(
    `WITH gone AS (
       DELETE FROM webhook_deliveries WHERE id IN (
         -- The oldest first, along the primary key: what is left of the oldest is what is due to go.
         SELECT id FROM webhook_deliveries WHERE next_attempt_at IS NULL AND created_at < $1 ORDER BY id LIMIT $2)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [before, limit],
  );
  return (rows[0]?.n ?? 0) as number;
}
