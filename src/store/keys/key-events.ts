import type { Actor, Author, Changes, KeyAction, KeyEvent } from "../../domain/keys/key-event.ts";
import type { KeyType } from "../../domain/model.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Queryable, Row } from "../database.ts";
import { insideScope, withinLineage } from "../directory/scope-sql.ts";

// The key_events table (migrations/0003_key_lifecycle.sql). Events are written only by the statements
// that change keys, through `recordEvents`, so an event never exists without its change, nor a
// change without its event.

/** The values of events being recorded, as SQL expressions of the recording statement (its parameters). */
export interface EventValues {
  /** When: a parameter, or `s.expires_at` for an expiry, which happened at the key's own time. */
  at: string;
  actor: string;
  changes: string;
  requestId: string;
}

/**
 * An INSERT of one `action` event for each api_keys row of `source` (a CTE of the same statement,
 * RETURNING the changed rows), the key's name, type and scope as they are after the change.
 *
 * The listener's catch-up (key-catch-up.ts, docs/adr/0014) relies on this order: the change's own
 * write (or row lock) comes first, so its transaction has its id before the event takes one.
 */
export function recordEvents(source: string, action: KeyAction, v: EventValues): string {
  return `INSERT INTO key_events (at, action, key_id, key_name, key_type, tenant_id, domain_id, application_id, subscriber_id, actor, changes, request_id)
    SELECT ${v.at}, '${action}', s.id, s.name, s.type, s.tenant_id, s.domain_id, s.application_id, s.subscriber_id,
           ${v.actor}::jsonb, ${v.changes}::jsonb, ${v.requestId}::text
      FROM ${source} s`;
}

/** The parameters `recordEvents` refers to, for one author and one set of changes. */
export const eventParams = (author: Author, changes: Changes): [string, string, string | null] => [
  JSON.stringify(author.actor),
  JSON.stringify(changes),
  author.requestId,
];

/** An event's columns, of alias `e`, as eventFrom reads them (webhook-deliveries.ts joins them to a delivery). */
export const EVENT_COLUMNS = `e.id, e.at, e.action, e.key_id, e.key_name, e.key_type, e.tenant_id, e.domain_id, e.application_id,
  e.subscriber_id, e.actor, e.changes, e.request_id, e.count`;

export function eventFrom(row: Row): KeyEvent {
  return {
    // bigint: the drivers give text or a BigInt; ids stay far below 2^53.
    id: Number(row.id),
    at: row.at as Date,
    action: row.action as KeyAction,
    key: row.key_id == null ? null : {
      id: row.key_id as number,
      name: row.key_name as string,
      type: row.key_type as KeyType,
      tenantId: row.tenant_id as number,
      domainId: (row.domain_id ?? null) as number | null,
      applicationId: (row.application_id ?? null) as number | null,
      subscriberId: (row.subscriber_id ?? null) as number | null,
    },
    // jsonb keeps keys in its own order: the type comes first, as the API documents the actor.
    actor: (({ type, ...rest }) => ({ type, ...rest }))(row.actor as Actor) as Actor,
    changes: row.changes as Changes,
    requestId: (row.request_id ?? null) as string | null,
    ...(row.count != null && { count: row.count as number }),
  };
}

/** Records an export of `count` keys in the admin's trail (docs/migration.md): an event about no one key. */
export async function eventRecordExport(q: Queryable, count: number, author: Author, now: Date): Promise<void> {
  const [actor, , requestId] = eventParams(author, {});
  await q.query(
    `INSERT INTO key_events (at, action, actor, changes, request_id, count) VALUES ($1, 'exported', $2::jsonb, '{}', $3, $4)`,
    [now, actor, requestId, count],
  );
}

/** One key's events, oldest first. */
export async function eventListByKey(q: Queryable, keyId: number, action: KeyAction | undefined): Promise<KeyEvent[]> {
  const rows = await q.query(
    `SELECT ${EVENT_COLUMNS} FROM key_events e WHERE e.key_id = $1 AND ($2::text IS NULL OR e.action = $2) ORDER BY e.id`,
    [keyId, action ?? null],
  );
  return rows.map(eventFrom);
}

export interface EventPage {
  /** Only events with an id below this one. */
  before?: number | undefined;
  limit: number;
  action?: KeyAction | undefined;
}

/**
 * A page of the events of keys inside `scope` (every key's, for null), newest first; with `within`,
 * only those of the key of that lineage and its descendants (a restricted caller's).
 */
export async function eventListByScope(q: Queryable, scope: Scope | null, page: EventPage, within?: number): Promise<KeyEvent[]> {
  const params: unknown[] = [page.before ?? null, page.limit, page.action ?? null];
  let sql = `SELECT ${EVENT_COLUMNS} FROM key_events e WHERE ($1::bigint IS NULL OR e.id < $1) AND ($3::text IS NULL OR e.action = $3)`;
  if (scope) {
    const inside = insideScope(scope, params.length + 1, "e");
    sql += ` AND ${inside.sql}`;
    params.push(...inside.params);
  }
  if (within !== undefined) {
    params.push(within);
    sql += ` AND e.key_id IN (SELECT k.id FROM api_keys k WHERE ${withinLineage(params.length)})`;
  }
  const rows = await q.query(`${sql} ORDER BY e.id DESC LIMIT $2`, params);
  return rows.map(eventFrom);
}
