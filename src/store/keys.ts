import type { KeyType, StoredKey } from "../domain/model.ts";
import type { Scope } from "../domain/scope.ts";
import type { Queryable } from "./database.ts";
import { KEY_SELECT, keySelect, storedKeyFrom } from "./rows.ts";

// Queries of the api_keys table. Every read is of live keys (deleted_at IS NULL) unless it says so.
export interface KeyInsert {
  hash: Buffer;
  sealed: Buffer;
  name: string;
  active: boolean;
  type: KeyType;
  scope: Scope;
  userId: number | null;
  managedBy: string | null;
}

/**
 * Inserts a key unless a live key of the same identity exists; the new key with its directory objects
 * (one round trip), or undefined.
 */
export async function keyInsertUnlessExists(q: Queryable, k: KeyInsert, now: Date): Promise<StoredKey | undefined> {
  const rows = await q.query(
    `WITH inserted AS (
       INSERT INTO api_keys (token_hash, token_sealed, name, active, type, tenant_id, domain_id, application_id,
                             subscriber_id, user_id, managed_by, created_at, modified_at, active_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, CASE WHEN $4 THEN $12::timestamptz END)
       ON CONFLICT DO NOTHING
       RETURNING *)
     ${keySelect("inserted")}`,
    [k.hash, k.sealed, k.name, k.active, k.type, k.scope.tenantId, k.scope.domainId, k.scope.applicationId,
      k.scope.subscriberId, k.userId, k.managedBy, now],
  );
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

/** The WHERE condition selecting keys inside `scope`, with its parameters from `$first` on. */
function insideScope(scope: Scope, first: number): { sql: string; params: unknown[] } {
  const parts = ["k.tenant_id"];
  const params: unknown[] = [scope.tenantId];
  for (const [column, value] of [["k.domain_id", scope.domainId], ["k.application_id", scope.applicationId], ["k.subscriber_id", scope.subscriberId]] as const) {
    if (value !== null) {
      parts.push(column);
      params.push(value);
    }
  }
  return { sql: parts.map((c, i) => `${c} = $${first + i}`).join(" AND "), params };
}

export async function keyFindByIdentity(q: Queryable, scope: Scope, name: string): Promise<StoredKey | undefined> {
  const rows = await q.query(
    `${KEY_SELECT} WHERE k.deleted_at IS NULL AND k.user_id IS NULL AND k.name = $1 AND k.tenant_id = $2
       AND coalesce(k.domain_id, 0) = $3 AND coalesce(k.application_id, 0) = $4 AND coalesce(k.subscriber_id, 0) = $5`,
    [name, scope.tenantId, scope.domainId ?? 0, scope.applicationId ?? 0, scope.subscriberId ?? 0],
  );
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

export async function keyFindById(q: Queryable, id: number): Promise<StoredKey | undefined> {
  const rows = await q.query(`${KEY_SELECT} WHERE k.id = $1 AND k.deleted_at IS NULL`, [id]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

export async function keyFindByHash(q: Queryable, hash: Buffer): Promise<StoredKey | undefined> {
  const rows = await q.query(`${KEY_SELECT} WHERE k.token_hash = $1 AND k.deleted_at IS NULL`, [hash]);
  return rows[0] ? storedKeyFrom(rows[0]) : undefined;
}

export interface KeyFilter {
  active?: boolean;
  type?: KeyType;
  name?: string;
}

/** One page of the live keys inside `scope`, ordered by id, after id `after`. */
export async function keyListByScope(
  q: Queryable,
  scope: Scope,
  filter: KeyFilter,
  after: number,
  limit: number,
): Promise<StoredKey[]> {
  const inside = insideScope(scope, 3);
  const params: unknown[] = [after, limit, ...inside.params];
  let sql = `${KEY_SELECT} WHERE k.deleted_at IS NULL AND k.id > $1 AND ${inside.sql}`;
  for (const [column, value] of [["k.active", filter.active], ["k.type", filter.type], ["k.name", filter.name]] as const) {
    if (value !== undefined) {
      params.push(value);
      sql += ` AND ${column} = $${params.length}`;
    }
  }
  const rows = await q.query(`${sql} ORDER BY k.id LIMIT $2`, params);
  return rows.map(storedKeyFrom);
}

export interface KeyPatch {
  name?: string;
  active?: boolean;
}

/** Applies a patch to a live key; modifiedAt moves only when something changed. False if no such key. */
export async function keyUpdate(q: Queryable, id: number, patch: KeyPatch, now: Date): Promise<boolean> {
  const rows = await q.query(
    `UPDATE api_keys SET
       name = coalesce($2, name),
       active = coalesce($3, active),
       active_at = CASE WHEN $3 AND NOT active THEN $4 ELSE active_at END,
       modified_at = CASE WHEN name IS DISTINCT FROM coalesce($2, name) OR active IS DISTINCT FROM coalesce($3, active)
                          THEN $4 ELSE modified_at END
     WHERE id = $1 AND deleted_at IS NULL
     RETURNING id`,
    [id, patch.name ?? null, patch.active ?? null, now],
  );
  return rows.length > 0;
}

export async function keyDelete(q: Queryable, id: number, now: Date): Promise<boolean> {
  const rows = await q.query(
    "UPDATE api_keys SET deleted_at = $2, modified_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id",
    [id, now],
  );
  return rows.length > 0;
}

// The operator's claims. managed_by names the ApiKey resource ("namespace/name") that manages a key.

/** The live keys an ApiKey resource manages. */
export async function keyListByManagedBy(q: Queryable, managedBy: string): Promise<StoredKey[]> {
  const rows = await q.query(`${KEY_SELECT} WHERE k.managed_by = $1 AND k.deleted_at IS NULL ORDER BY k.id`, [managedBy]);
  return rows.map(storedKeyFrom);
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
