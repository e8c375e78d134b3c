// keys/ of store/: keys, their events, the keyplane_keys announcements and the catch-up from the key
// event log. It may use domain/, store/'s top files (the connection), directory/ and policy/.

import type { Author, Changes } from "../../domain/keys/key-event.ts";
import type { AncestorPolicy } from "../../domain/keys/lineage.ts";
import type { KeyType, StoredKey } from "../../domain/model.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import { arrayLiteral, type ArrayElement } from "../array-literal.ts";
import type { Queryable, Row } from "../database.ts";
import { KEYS_CHANNEL, KEYS_IMPORTED } from "./key-change.ts";
import { eventParams, recordEvents } from "./key-events.ts";
import { policyFromColumn, policyParam } from "../policy/policies.ts";
import { addEntities, ENTITIES_SELECT, KEY_COLUMNS, KEY_SELECT, keySelect, listedKeyFrom, storedKeyFrom, type Entities } from "../rows.ts";
import { insideScope, withinLineage } from "../directory/scope-sql.ts";

// Queries of the api_keys table. A key is live while it is neither deleted nor expired; `now` is the
// service's clock, never the database's, so that a test's clock governs expiry everywhere. Every
// statement that changes a key records its event in the same statement (key-events.ts).

/** The condition of a live key of alias `k`, `now` being parameter `$n`. */
const live = (n: number) => `k.deleted_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $${n})`;

/**
 * The keys that may hold a name in a scope (users' keys aside), on api_keys_identity_live's columns,
 * with the five parameters of `identityParams` from `$n` on.
 */
const identity = (n: number) => `k.user_id IS NULL AND k.replaced_by IS NULL AND k.tenant_id = $${n}
  AND coalesce(k.domain_id, 0) = $${n + 1} AND coalesce(k.application_id, 0) = $${n + 2} AND coalesce(k.subscriber_id, 0) = $${n + 3}
  AND k.name = $${n + 4}`;
const identityParams = (scope: Scope, name: string) => [scope.tenantId, scope.domainId ?? 0, scope.applicationId ?? 0, scope.subscriberId ?? 0, name];

export interface KeyInsert {
  hash: Buffer;
  sealed: Buffer;
  name: string;
  active: boolean;
  type: KeyType;
  scope: Scope;
  userId: number | null;
  managedBy: string | null;
  expiresAt: Date | null;
  /** The key's own policy (none when left out); with credits, its balance starts at their `remaining`. */
  policy?: Policy | null | undefined;
  /** The key whose token made it (docs/api.md, "Restricted keys"), with its ancestors' lineages; none when left out. */
  parentId?: number | null | undefined;
  ancestors?: readonly number[] | undefined;
}

/** A key to insert, with what its `created` event records. */
export interface NewKey extends KeyInsert {
  author: Author;
  changes: Changes;
  now: Date;
}

// Statements on the hot paths are texts built once (the driver prepares each under a name it finds by
// its text, and a new string would be hashed anew on every call). This one takes its rows as arrays,
// so one prepared statement inserts any number of keys.
/**
 * The insert of keyInsertUnlessExists (`onConflict` "ON CONFLICT DO NOTHING") or of keyInsertIds, then
 * `select`: a statement over the CTE `inserted`, or more CTEs (from a comma) and then one.
 */
const insertKeys = (onConflict: string, select: string) => `
  WITH input AS (
    SELECT decode(hash, 'hex') AS hash, decode(sealed, 'hex') AS sealed, name, active, type, tenant_id, domain_id,
           application_id, subscriber_id, user_id, managed_by, now, expires_at, actor, changes, request_id, policy::jsonb,
           parent_id, ancestors::integer[]
      FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::integer[], $7::integer[], $8::integer[],
                  $9::integer[], $10::integer[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[], $16::text[],
                  $17::text[], $18::integer[], $19::text[])
        AS v(hash, sealed, name, active, type, tenant_id, domain_id, application_id, subscriber_id, user_id, managed_by, now,
             expires_at, actor, changes, request_id, policy, parent_id, ancestors)),
  inserted AS (
    INSERT INTO api_keys (token_hash, token_sealed, name, active, type, tenant_id, domain_id, application_id,
                          subscriber_id, user_id, managed_by, created_at, modified_at, active_at, expires_at, policy, parent_id, ancestors)
    SELECT hash, sealed, name, active, type, tenant_id, domain_id, application_id, subscriber_id, user_id, managed_by,
           now, now, CASE WHEN active THEN now END, expires_at, policy, parent_id, ancestors
      FROM input
    ${onConflict}
    RETURNING *),
  -- A new key's balance: no process can hold leases of a holder that did not exist, so nothing is announced.
  -- A new key is the first of its rotation chain: its lineage is its id.
  balances AS (
    INSERT INTO policy_balances (holder, remaining, refilled_at, generation)
    SELECT 'key:' || i.id, (i.policy->'credits'->>'remaining')::bigint, i.created_at, 1 FROM inserted i WHERE i.policy ? 'credits'),
  created AS (${recordEvents("(SELECT i.*, v.now AS event_at, v.actor, v.changes, v.request_id FROM inserted i JOIN input v ON v.hash = i.token_hash)", "created", { at: "s.event_at", actor: "s.actor", changes: "s.changes", requestId: "s.request_id" })})
  ${select}`;
const INSERT_UNLESS_EXISTS = insertKeys("ON CONFLICT DO NOTHING", keySelect("inserted"));
/**
 * An import's: answering only the new keys' ids and hashes (it has no use for the rest), and announcing
 * them once on keyplane_keys (KEYS_IMPORTED, $20 and $21) when there are any. Their tokens were chosen
 * elsewhere: a process that refused one before it existed remembers it as unknown until it hears.
 * Delivered when the statement's transaction commits; a listener that missed it learns it from the key
 * event log (key-catch-up.ts).
 */
const INSERTED_IDS = `,
  announced AS (SELECT pg_notify($20, $21) WHERE EXISTS (SELECT 1 FROM inserted))
  SELECT i.id, i.token_hash FROM inserted i LEFT JOIN announced ON true`;
const INSERT_IDS_UNLESS_EXISTS = insertKeys("ON CONFLICT DO NOTHING", INSERTED_IDS);
const INSERT_IDS = insertKeys("", INSERTED_IDS);

/**
 * Inserts keys, each with its `created` event, in one statement, except those whose name a key holds
 * in api_keys_identity_live (or whose user already has one): for each key, in order, the new key with
 * its directory objects, or undefined. A row that breaks a constraint fails the whole statement.
 */
export async function keyInsertUnlessExists(q: Queryable, keys: readonly NewKey[]): Promise<(StoredKey | undefined)[]> {
  const { hashes, params } = keyInsertRows(keys);
  const rows = await q.query(INSERT_UNLESS_EXISTS, params);
  const inserted = new Map(rows.map((row) => [(row.token_hash as Buffer).toString("hex"), storedKeyFrom(row)]));
  return hashes.map((hash) => inserted.get(hash));
}

/** Keys as the insert's parameters (keyInsertRows). */
export interface KeyRows {
  /** Each key's token hash, hex, in order. */
  readonly hashes: readonly string[];
  readonly params: readonly string[];
}

/**
 * The insert's 19 array parameters for these keys, in their text form. An import makes them while
 * the statement before it is under way: sending it then waits for nothing but the connection
 * (docs/migration.md, "How it is written").
 */
export function keyInsertRows(keys: readonly NewKey[]): KeyRows {
  const hashes = keys.map((k) => k.hash.toString("hex"));
  const column = (value: (k: NewKey) => ArrayElement) => arrayLiteral(keys.map(value));
  const params = [
    arrayLiteral(hashes), column((k) => k.sealed.toString("hex")), column((k) => k.name), column((k) => k.active),
    column((k) => k.type), column((k) => k.scope.tenantId), column((k) => k.scope.domainId), column((k) => k.scope.applicationId),
    column((k) => k.scope.subscriberId), column((k) => k.userId), column((k) => k.managedBy), column((k) => k.now),
    column((k) => k.expiresAt), column((k) => JSON.stringify(k.author.actor)), column((k) => JSON.stringify(k.changes)),
    column((k) => k.author.requestId), column((k) => policyParam(k.policy ?? null)), column((k) => k.parentId ?? null),
    column((k) => arrayLiteral(k.ancestors ?? [])),
  ];
  return { hashes, params };
}

/**
 * Imports keys: inserts them as keyInsertUnlessExists does, answering only each new key's id
 * (undefined for a key not inserted), and announces them (INSERTED_IDS). Unless `unlessExists`, a
 * taken name or token fails the whole statement (UniqueViolation) instead: an insert that has no
 * conflict to look for is the cheaper by a probe of each unique index a key (PostgreSQL checks an ON
 * CONFLICT's indexes before it inserts, and again as it does).
 */
export async function keyInsertIds(q: Queryable, rows: KeyRows, unlessExists: boolean): Promise<(number | undefined)[]> {
  const result = await q.query(unlessExists ? INSERT_IDS_UNLESS_EXISTS : INSERT_IDS, [...rows.params, KEYS_CHANNEL, KEYS_IMPORTED]);
  const inserted = new Map(result.map((row) => [(row.token_hash as Buffer).toString("hex"), row.id as number]));
  return rows.hashes.map((hash) => inserted.get(hash));
}

const FIND_BY_IDENTITY = `${KEY_SELECT} WHERE ${identity(1)} AND ${live(6)}`;
/** The live key that holds this name in this scope (not replaced by a rotation), if any. */
export async function keyFindByIdentity(q: Queryable, scope: Scope, name: string, now: Date): Promise<StoredKey | undefined> {
  const rows = await q.query(FIND_BY_IDENTITY, [...identityParams(scope, name), now]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

const FIND_BY_ID = `${KEY_SELECT} WHERE k.id = $1 AND ${live(2)}`;
export async function keyFindById(q: Queryable, id: number, now: Date): Promise<StoredKey | undefined> {
  const rows = await q.query(FIND_BY_ID, [id, now]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

/** A key by id whatever became of it: deleted and expired keys keep their events. */
export async function keyFindEverById(q: Queryable, id: number): Promise<StoredKey | undefined> {
  const rows = await q.query(`${KEY_SELECT} WHERE k.id = $1`, [id]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

const FIND_BY_HASH = `${KEY_SELECT} WHERE k.token_hash = $1 AND k.deleted_at IS NULL`;
/** The undeleted key behind a token hash, expired or not: the caller judges its state (domain/keys/key-state.ts). */
export async function keyFindByHash(q: Queryable, hash: Buffer): Promise<StoredKey | undefined> {
  const rows = await q.query(FIND_BY_HASH, [hash]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

/** Locks a live key for the rest of the transaction: what a change reads its "before" from. */
export async function keyLockById(tx: Queryable, id: number, now: Date): Promise<StoredKey | undefined> {
  const rows = await tx.query(`${KEY_SELECT} WHERE k.id = $1 AND ${live(2)} FOR UPDATE OF k`, [id, now]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

export interface KeyFilter {
  active?: boolean;
  type?: KeyType;
  name?: string;
  /** Only the key of this lineage and its descendants (a restricted caller's reach, docs/api.md, "Restricted keys"). */
  within?: number;
}

/**
 * One page of the live keys inside `scope`, ordered by id, after id `after`. The rows carry the keys'
 * own columns; the directory objects they embed are read once for the whole list into `entities`
 * (one more statement for a page that names ones not read yet).
 */
export async function keyListByScope(
  q: Queryable,
  scope: Scope,
  filter: KeyFilter,
  after: number,
  limit: number,
  now: Date,
  entities: Entities = new Map(),
): Promise<StoredKey[]> {
  const inside = insideScope(scope, 4, "k");
  const params: unknown[] = [after, limit, now, ...inside.params];
  let sql = `SELECT ${KEY_COLUMNS} FROM api_keys k WHERE ${live(3)} AND k.id > $1 AND ${inside.sql}`;
  for (const [column, value] of [["k.active", filter.active], ["k.type", filter.type], ["k.name", filter.name]] as const) {
    if (value !== undefined) {
      params.push(value);
      sql += ` AND ${column} = $${params.length}`;
    }
  }
  if (filter.within !== undefined) {
    params.push(filter.within);
    sql += ` AND ${withinLineage(params.length)}`;
  }
  const rows = await q.query(`${sql} ORDER BY k.id LIMIT $2`, params);
  await readEntities(q, rows, entities);
  return rows.map((row) => listedKeyFrom(row, entities));
}

export type { Entities };

/**
 * The own policies of the key lineages given, each as its newest key holds it (a rotation carries the
 * policy on; a deleted or expired ancestor still binds its descendants), with that key's id.
 */
export async function keyLineagePolicies(q: Queryable, lineages: readonly number[]): Promise<AncestorPolicy[]> {
  const rows = await q.query(
    `SELECT DISTINCT ON (coalesce(k.lineage, k.id)) coalesce(k.lineage, k.id) AS lineage, k.id, k.policy
       FROM api_keys k WHERE k.id = ANY($1::integer[]) OR k.lineage = ANY($1::integer[])
      ORDER BY coalesce(k.lineage, k.id), k.id DESC`,
    [lineages],
  );
  return rows.map((row) => ({ lineage: row.lineage as number, id: row.id as number, policy: policyFromColumn(row.policy) }));
}
const MAX_ENTITIES = 10_000;
const SCOPE_COLUMNS = [["c", "tenant_id"], ["d", "domain_id"], ["a", "application_id"], ["s", "subscriber_id"], ["u", "user_id"]] as const;

/** Reads into `entities` the directory objects that rows of KEY_COLUMNS name and it does not hold yet. */
async function readEntities(q: Queryable, rows: readonly Row[], entities: Entities): Promise<void> {
  if (entities.size > MAX_ENTITIES) entities.clear(); // a list's memory stays bounded, however many scopes it spans
  const scopes = new Map<string, Row>();
  for (const row of rows) {
    const missing = SCOPE_COLUMNS.some(([alias, column]) => row[column] != null && !entities.has(`${alias}${row[column] as number}`));
    if (missing) scopes.set(SCOPE_COLUMNS.map(([, column]) => row[column]).join(","), row);
  }
  if (scopes.size === 0) return;
  const ids = SCOPE_COLUMNS.map(([, column]) => [...scopes.values()].map((row) => row[column] ?? null));
  for (const row of await q.query(ENTITIES_SELECT, ids)) addEntities(row, entities);
}

/** A key's fields as an update leaves them (the service works them out from the locked key). */
export interface KeyUpdate {
  name: string;
  active: boolean;
  activeAt: Date | null;
  expiresAt: Date | null;
  /** The key's own policy; left out, it stays as it is. */
  policy?: Policy | null | undefined;
}

/** Writes an update to a key locked by keyLockById, with its `updated` event. */
export async function keyUpdate(tx: Queryable, id: number, u: KeyUpdate, author: Author, changes: Changes, now: Date): Promise<void> {
  await tx.query(
    `WITH changed AS (
       UPDATE api_keys SET name = $2, active = $3, active_at = $4, expires_at = $5, modified_at = $6,
              policy = CASE WHEN $11 THEN $10::jsonb ELSE policy END
        WHERE id = $1 RETURNING *),
     recorded AS (${recordEvents("changed", "updated", { at: "$6::timestamptz", actor: "$7", changes: "$8", requestId: "$9" })})
     SELECT count(*) FROM changed`,
    [id, u.name, u.active, u.activeAt, u.expiresAt, now, ...eventParams(author, changes), policyParam(u.policy ?? null), u.policy !== undefined],
  );
}

/** Records an `updated` event of a key whose state outside api_keys changed (its balance), in the change's transaction. */
export async function keyRecordUpdate(tx: Queryable, id: number, author: Author, changes: Changes, now: Date): Promise<void> {
  await tx.query(
    recordEvents("(SELECT * FROM api_keys WHERE id = $1)", "updated", { at: "$2::timestamptz", actor: "$3", changes: "$4", requestId: "$5" }),
    [id, now, ...eventParams(author, changes)],
  );
}

/** Soft-deletes a live key, with its `deleted` event; false when there was no such key. */
export async function keyDelete(q: Queryable, id: number, author: Author, now: Date): Promise<boolean> {
  const rows = await q.query(
    `WITH gone AS (
       UPDATE api_keys k SET deleted_at = $2, modified_at = $2 WHERE k.id = $1 AND ${live(2)} RETURNING k.*),
     recorded AS (${recordEvents("gone", "deleted", { at: "$2::timestamptz", actor: "$3", changes: "$4", requestId: "$5" })})
     SELECT count(*)::int AS n FROM gone`,
    [id, now, ...eventParams(author, { deletedAt: [null, now.toISOString()] })],
  );
  return (rows[0]?.n as number) > 0;
}

/**
 * Rotates a key locked by keyLockById: the successor (a new token; the same name, scope, type, user,
 * manager and active) takes the name, and the old key gets `replaced_by` and `expiresAt`. One
 * statement: the successor's id is drawn first, so the old key leaves the name before it is taken,
 * and the foreign key is checked at the statement's end. Records `rotated` and `created`. The
 * successor takes the key's policy, parent, ancestors and lineage: the lineage holds its counters
 * (docs/api.md, "Restricted keys"), so its windows and balance go on, shared with the old key for as
 * long as that one still works.
 */
export async function keyRotate(
  tx: Queryable,
  old: { id: number; expiresAt: Date },
  successor: Pick<KeyInsert, "hash" | "sealed" | "expiresAt">,
  author: Author,
  changes: { rotated: Changes; created: Changes },
  now: Date,
): Promise<StoredKey> {
  const [actor, rotatedChanges, requestId] = eventParams(author, changes.rotated);
  const rows = await tx.query(
    `WITH successor AS (SELECT nextval(pg_get_serial_sequence('api_keys', 'id'))::integer AS id),
     old AS (
       UPDATE api_keys k SET replaced_by = successor.id, expires_at = $2, modified_at = $3 FROM successor WHERE k.id = $1 RETURNING k.*),
     inserted AS (
       INSERT INTO api_keys (id, token_hash, token_sealed, name, active, type, tenant_id, domain_id, application_id, subscriber_id,
                             user_id, managed_by, created_at, modified_at, active_at, expires_at, policy, parent_id, lineage, ancestors)
       OVERRIDING SYSTEM VALUE
       SELECT old.replaced_by, $4, $5, old.name, old.active, old.type, old.tenant_id, old.domain_id, old.application_id,
              old.subscriber_id, old.user_id, old.managed_by, $3, $3, CASE WHEN old.active THEN $3::timestamptz END, $6, old.policy,
              old.parent_id, coalesce(old.lineage, old.id), old.ancestors
         FROM old
       RETURNING *),
     rotated AS (${recordEvents("old", "rotated", {
       at: "$3::timestamptz", actor: "$7", changes: "$8::jsonb || jsonb_build_object('replacedBy', jsonb_build_array(null, s.replaced_by))", requestId: "$9",
     })}),
     created AS (${recordEvents("inserted", "created", { at: "$3::timestamptz", actor: "$7", changes: "$10", requestId: "$9" })})
     ${keySelect("inserted")}`,
    [old.id, old.expiresAt, now, successor.hash, successor.sealed, successor.expiresAt, actor, rotatedChanges, requestId, JSON.stringify(changes.created)],
  );
  return storedKeyFrom(rows[0]!);
}

/**
 * Records the expiry of expired keys that match `where` (a condition on alias `k` with parameters
 * from $3 on): sets expiry_recorded_at, which frees their names, and writes their `expired` events,
 * dated at their expiry, actor system. `skipLocked` lets several sweepers share the work; without it,
 * a key locked elsewhere is waited for. Returns how many were recorded.
 */
export async function keyRecordExpiries(
  q: Queryable,
  where: { sql: string; params: unknown[] },
  now: Date,
  { limit = 1000, skipLocked = false } = {},
): Promise<number> {
  const rows = await q.query(
    `WITH due AS (
       SELECT k.id FROM api_keys k
        WHERE k.expires_at <= $1 AND k.expiry_recorded_at IS NULL AND k.deleted_at IS NULL AND ${where.sql}
        ORDER BY k.expires_at LIMIT $2
        FOR UPDATE${skipLocked ? " SKIP LOCKED" : ""}),
     recorded_keys AS (
       UPDATE api_keys k SET expiry_recorded_at = $1 FROM due WHERE k.id = due.id AND k.expiry_recorded_at IS NULL RETURNING k.*),
     recorded AS (${recordEvents("recorded_keys", "expired", { at: "s.expires_at", actor: `'{"type":"system"}'`, changes: "'{}'", requestId: "NULL" })})
     SELECT count(*)::int AS n FROM recorded_keys`,
    [now, limit, ...where.params],
  );
  return rows[0]?.n as number;
}

/** keyRecordExpiries' condition for the key, if any, that holds a name in a scope. */
export const holderOf = (scope: Scope, name: string) => ({ sql: identity(3), params: identityParams(scope, name) });

/** Records when keys were last used: one statement for a batch; a time never moves back. */
export async function keyRecordLastUse(q: Queryable, ids: number[], times: Date[]): Promise<void> {
  await q.query(
    `UPDATE api_keys k SET last_used_at = u.at
       FROM unnest($1::integer[], $2::timestamptz[]) AS u(id, at)
      WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`,
    [ids, times],
  );
}

// The operator's claims. managed_by names the ApiKey resource ("namespace/name") that manages a key.

/** The live keys an ApiKey resource manages that hold their names (a rotated-out key in its grace period does not). */
export async function keyListByManagedBy(q: Queryable, managedBy: string, now: Date): Promise<StoredKey[]> {
  const rows = await q.query(
    `${KEY_SELECT} WHERE k.managed_by = $1 AND k.replaced_by IS NULL AND ${live(2)} ORDER BY k.id`,
    [managedBy, now],
  );
  return rows.map((row) => storedKeyFrom(row));
}

/**
 * Claims a live key for `managedBy` unless another already manages it: true when the key is now
 * managed by `managedBy`. The condition is in the UPDATE, so two claimants racing cannot both win.
 */
export async function keyClaimManagedBy(q: Queryable, id: number, managedBy: string): Promise<boolean> {
  const rows = await q.query(
    `UPDATE api_keys SET managed_by = $2
      WHERE id = $1 AND deleted_at IS NULL AND (managed_by IS NULL OR managed_by = $2)
      RETURNING id`,
    [id, managedBy],
  );
  return rows.length > 0;
}

/** Gives up `managedBy`'s claim on a key (it becomes a key like one made through REST); false if it held none. */
export async function keyReleaseManagedBy(q: Queryable, id: number, managedBy: string): Promise<boolean> {
  const rows = await q.query("UPDATE api_keys SET managed_by = NULL WHERE id = $1 AND managed_by = $2 RETURNING id", [id, managedBy]);
  return rows.length > 0;
}
