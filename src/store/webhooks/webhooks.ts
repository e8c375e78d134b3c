// webhooks/ of store/: webhooks, their deliveries (the outbox) and the notices recorded as sent. It may
// use domain/, store/'s top files, keys/, directory/ and policy/.

import type { Scope } from "../../domain/scope/scope.ts";
import type { StoredWebhook, WebhookType } from "../../domain/webhooks/webhook.ts";
import type { Queryable, Row } from "../database.ts";
import { insideScope } from "../directory/scope-sql.ts";

// The webhooks table (migrations/0006_webhooks.sql): who is sent which messages, where. Deliveries
// are webhook-deliveries.ts's.

const COLUMNS = `w.id, w.tenant_id, w.domain_id, w.application_id, w.subscriber_id, w.url, w.events, w.description, w.active,
  w.secret_sealed, w.created_at, w.modified_at`;

function webhookFrom(row: Row): StoredWebhook {
  const tenantId = (row.tenant_id ?? null) as number | null;
  return {
    id: row.id as number,
    scope: tenantId === null ? null : {
      tenantId,
      domainId: (row.domain_id ?? null) as number | null,
      applicationId: (row.application_id ?? null) as number | null,
      subscriberId: (row.subscriber_id ?? null) as number | null,
    },
    url: row.url as string,
    events: row.events as WebhookType[],
    description: (row.description ?? null) as string | null,
    active: row.active as boolean,
    secretSealed: row.secret_sealed as Buffer,
    createdAt: row.created_at as Date,
    modifiedAt: row.modified_at as Date,
  };
}

export interface NewWebhook {
  scope: Scope | null;
  url: string;
  events: readonly WebhookType[];
  description: string | null;
}

/** A webhook's id, drawn before its row is written: its secret is sealed bound to it. */
export async function webhookNextId(q: Queryable): Promise<number> {
  const rows = await q.query<{ id: number }>("SELECT nextval(pg_get_serial_sequence('webhooks', 'id'))::integer AS id");
  return rows[0]!.id;
}

/**
 * Holds, until the transaction ends, the right to add webhooks to `scope` (null: every key's): inserts
 * into one scope count what is there one after another, so two at once cannot both find room for one.
 */
export async function webhookLockScope(tx: Queryable, scope: Scope | null): Promise<void> {
  const key = scope === null ? "*" : [scope.tenantId, scope.domainId, scope.applicationId, scope.subscriberId].join("/");
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('keyplane.webhooks'), hashtext($1))", [key]);
}

/** Inserts a webhook, unless its scope holds `max` already: undefined then. Under webhookLockScope, the count is exact. */
export async function webhookInsert(q: Queryable, id: number, w: NewWebhook, secretSealed: Buffer, now: Date, max: number): Promise<StoredWebhook | undefined> {
  const s = w.scope;
  const rows = await q.query(
    `INSERT INTO webhooks AS w (id, tenant_id, domain_id, application_id, subscriber_id, url, events, description, active, secret_sealed, created_at, modified_at)
     OVERRIDING SYSTEM VALUE
     SELECT $1, $2::integer, $3::integer, $4::integer, $5::integer, $6, $7::text[], $8, true, $9::bytea, $10::timestamptz, $10::timestamptz
      WHERE (SELECT count(*) FROM webhooks o
              WHERE o.tenant_id IS NOT DISTINCT FROM $2::integer AND o.domain_id IS NOT DISTINCT FROM $3::integer
                AND o.application_id IS NOT DISTINCT FROM $4::integer AND o.subscriber_id IS NOT DISTINCT FROM $5::integer) < $11
     RETURNING ${COLUMNS}`,
    [id, s?.tenantId ?? null, s?.domainId ?? null, s?.applicationId ?? null, s?.subscriberId ?? null, w.url, w.events, w.description, secretSealed, now, max],
  );
  return rows[0] ? webhookFrom(rows[0]) : undefined;
}

export async function webhookFindById(q: Queryable, id: number): Promise<StoredWebhook | undefined> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM webhooks w WHERE w.id = $1`, [id]);
  return rows[0] ? webhookFrom(rows[0]) : undefined;
}

/** A page of webhooks: those with an id above `after`, at most `limit` (every one when none). */
export interface WebhookPage {
  after?: number | undefined;
  limit?: number | undefined;
}

/** The webhooks whose scope lies inside `scope` (every one, for null: the admin's), by id. */
export async function webhookListByScope(q: Queryable, scope: Scope | null, { after = 0, limit }: WebhookPage = {}): Promise<StoredWebhook[]> {
  const inside = scope ? insideScope(scope, 3, "w") : { sql: "true", params: [] };
  const rows = await q.query(
    `SELECT ${COLUMNS} FROM webhooks w WHERE w.id > $1 AND ${inside.sql} ORDER BY w.id LIMIT $2`,
    [after, limit ?? null, ...inside.params],
  );
  return rows.map(webhookFrom);
}

export interface WebhookChange {
  url: string;
  events: readonly WebhookType[];
  description: string | null;
  active: boolean;
}

/**
 * Writes a webhook's fields. An inactive webhook is written no messages; those pending fail when
 * their next attempt falls due, without an attempt (webhook-sender.ts): a message is for the webhook
 * as it was when it was written, and an inactive one gets none.
 */
export async function webhookUpdate(q: Queryable, id: number, c: WebhookChange, now: Date): Promise<StoredWebhook | undefined> {
  const rows = await q.query(
    `UPDATE webhooks w SET url = $2, events = $3, description = $4, active = $5, modified_at = $6 WHERE w.id = $1 RETURNING ${COLUMNS}`,
    [id, c.url, c.events, c.description, c.active, now],
  );
  return rows[0] ? webhookFrom(rows[0]) : undefined;
}

/** Deletes a webhook and its deliveries; false when there was none. */
export async function webhookDelete(q: Queryable, id: number): Promise<boolean> {
  const rows = await q.query(
    `WITH gone AS (DELETE FROM webhooks WHERE id = $1 RETURNING id),
     deliveries AS (DELETE FROM webhook_deliveries d USING gone WHERE d.webhook_id = gone.id)
     SELECT id FROM gone`,
    [id],
  );
  return rows.length > 0;
}

/** A receiver answered 410 Gone: the webhook stops, as a deactivation by PUT does. */
export async function webhookDeactivate(q: Queryable, id: number, now: Date): Promise<void> {
  await q.query("UPDATE webhooks SET active = false, modified_at = $2 WHERE id = $1 AND active", [id, now]);
}
