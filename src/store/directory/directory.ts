// directory/ of store/: the directory's entities, their announcements (keyplane_directory) and the SQL
// of "inside a scope". It may use domain/, store/'s top files and keys/.

import type { Identifier } from "../../domain/scope/identifier.ts";
import type { Application, Customer, Domain, HttpMethod, Subscriber, User } from "../../domain/model.ts";
import type { Author } from "../../domain/keys/key-event.ts";
import type { Queryable, Row } from "../database.ts";
import { eventParams, recordEvents } from "../keys/key-events.ts";
import { applicationFrom, columns, customerFrom, domainFrom, type EntityKind, subscriberFrom, userFrom } from "../rows.ts";

// Queries of the directory: customers > domains > applications, subscribers; users.
interface EntityTable<T> {
  kind: EntityKind;
  table: string;
  alias: string;
  /** The column an entity is named by, and whether names match case-insensitively. */
  name: string;
  caseless: boolean;
  /** The column naming the parent, and whether names are unique service-wide or only within a parent. */
  parent: string | null;
  globalNames: boolean;
  from: (row: Row) => T;
  /** What deleting one of these deletes too: [table, column naming this entity]. */
  below: [string, string][];
}

const customers: EntityTable<Customer> = {
  kind: "customer", table: "customers", alias: "c", name: "name", caseless: true, parent: null, globalNames: true, from: (r) => customerFrom(r),
  below: [["domains", "tenant_id"], ["applications", "tenant_id"], ["subscribers", "tenant_id"], ["users", "tenant_id"], ["api_keys", "tenant_id"]],
};
const domains: EntityTable<Domain> = {
  kind: "domain", table: "domains", alias: "d", name: "domain", caseless: true, parent: "tenant_id", globalNames: true, from: (r) => domainFrom(r),
  below: [["applications", "domain_id"], ["subscribers", "domain_id"], ["users", "domain_id"], ["api_keys", "domain_id"]],
};
const applications: EntityTable<Application> = {
  kind: "application", table: "applications", alias: "a", name: "name", caseless: true, parent: "domain_id", globalNames: false, from: (r) => applicationFrom(r),
  below: [["api_keys", "application_id"]],
};
const subscribers: EntityTable<Subscriber> = {
  kind: "subscriber", table: "subscribers", alias: "s", name: "msisdn", caseless: false, parent: "domain_id", globalNames: false, from: (r) => subscriberFrom(r),
  below: [["api_keys", "subscriber_id"]],
};
const users: EntityTable<User> = {
  kind: "user", table: "users", alias: "u", name: "email", caseless: true, parent: "tenant_id", globalNames: true, from: (r) => userFrom(r),
  below: [["api_keys", "user_id"]],
};
export const TABLES = { customers, domains, applications, subscribers, users };

/**
 * Finds a live entity by id, uuid or name; `parentId` (when given) must be its parent. A name unique
 * only within a parent finds nothing without one.
 */
export async function entityFind<T>(
  q: Queryable,
  t: EntityTable<T>,
  ident: Exclude<Identifier, { kind: "self" }>,
  parentId: number | null,
): Promise<T | undefined> {
  const x = t.alias;
  const match =
    ident.kind === "id" ? `${x}.id = $1`
    : ident.kind === "uuid" ? `${x}.uuid = $1::uuid`
    : t.caseless ? `lower(${x}.${t.name}) = lower($1)`
    : `${x}.${t.name} = $1`;
  if (ident.kind === "name" && !t.globalNames && parentId === null) return undefined;
  // PostgreSQL text cannot hold U+0000, so no entity is named with one: asking would be an error.
  if (ident.kind === "name" && ident.name.includes("\u0000")) return undefined;
  const params: unknown[] = [ident.kind === "id" ? ident.id : ident.kind === "uuid" ? ident.uuid : ident.name];
  let sql = `SELECT ${columns(t.kind, x)} FROM ${t.table} ${x} WHERE ${match} AND ${x}.deleted_at IS NULL`;
  if (t.parent !== null && parentId !== null) {
    params.push(parentId);
    sql += ` AND ${x}.${t.parent} = $2`;
  }
  const rows = await q.query(sql, params);
  return rows[0] ? t.from(rows[0]) : undefined;
}

export async function entityList<T>(q: Queryable, t: EntityTable<T>, parentId: number | null): Promise<T[]> {
  const x = t.alias;
  const where = t.parent !== null && parentId !== null ? `AND ${x}.${t.parent} = $1` : "";
  const rows = await q.query(
    `SELECT ${columns(t.kind, x)} FROM ${t.table} ${x} WHERE ${x}.deleted_at IS NULL ${where} ORDER BY ${x}.id`,
    where ? [parentId] : [],
  );
  return rows.map(t.from);
}

/**
 * Soft-deletes a live entity and everything below it, keys included, in one statement, recording a
 * `deleted` event for each key that was live (not expired) until then. Expiries that are due should be
 * recorded first (keyRecordExpiries, in the same transaction), so that no key ends without its event.
 */
export async function entityDelete<T>(q: Queryable, t: EntityTable<T>, id: number, author: Author, now: Date): Promise<boolean> {
  const cascade = t.below
    .map(([table, column], i) => {
      const update = `below${i} AS (UPDATE ${table} SET deleted_at = $2, modified_at = $2
        WHERE ${column} IN (SELECT id FROM gone) AND deleted_at IS NULL${table === "api_keys" ? " RETURNING *" : ""})`;
      if (table !== "api_keys") return `, ${update}`;
      const liveUntilNow = `(SELECT * FROM below${i} WHERE expires_at IS NULL OR expires_at > $2)`;
      return `, ${update}, below${i}_events AS (${recordEvents(liveUntilNow, "deleted", { at: "$2::timestamptz", actor: "$3", changes: "$4", requestId: "$5" })})`;
    })
    .join("");
  const rows = await q.query(
    `WITH gone AS (UPDATE ${t.table} SET deleted_at = $2, modified_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id)
     ${cascade}
     SELECT count(*)::int AS n FROM gone`,
    [id, now, ...eventParams(author, { deletedAt: [null, now.toISOString()] })],
  );
  return (rows[0]?.n as number) > 0;
}

/** The api_keys column that names an entity of this table: the keys it takes with it when deleted. */
export function keyColumnOf<T>(t: EntityTable<T>): string {
  const column = t.below.find(([table]) => table === "api_keys")?.[1];
  if (!column) throw new Error(`${t.table} has no keys below it`);
  return column;
}

async function insertOne<T>(q: Queryable, t: EntityTable<T>, values: Record<string, unknown>, now: Date): Promise<T> {
  const names = [...Object.keys(values), "created_at", "modified_at"];
  const params = [...Object.values(values), now, now];
  const x = t.alias;
  const rows = await q.query(
    `WITH ${x} AS (INSERT INTO ${t.table} (${names.join(", ")}) VALUES (${params.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *)
     SELECT ${columns(t.kind, x)} FROM ${x}`,
    params,
  );
  return t.from(rows[0]!);
}

export const customerInsert = (q: Queryable, name: string, now: Date) => insertOne(q, customers, { name }, now);

export const domainInsert = (q: Queryable, tenantId: number, domain: string, now: Date) =>
  insertOne(q, domains, { tenant_id: tenantId, domain: domain.toLowerCase() }, now);

export interface ApplicationInput {
  name: string;
  url: string | null;
  method: HttpMethod;
}
export const applicationInsert = (q: Queryable, parent: Domain, input: ApplicationInput, now: Date) =>
  insertOne(q, applications, { tenant_id: parent.tenantId, domain_id: parent.id, name: input.name, url: input.url, method: input.method }, now);

export const subscriberInsert = (q: Queryable, parent: Domain, msisdn: string, now: Date) =>
  insertOne(q, subscribers, { tenant_id: parent.tenantId, domain_id: parent.id, msisdn }, now);

export const userInsert = (q: Queryable, tenantId: number, domainId: number | null, email: string, now: Date) =>
  insertOne(q, users, { tenant_id: tenantId, domain_id: domainId, email }, now);

/** The tables of the entities that carry a policy (users do not). */
export type PolicedTable = EntityTable<Customer | Domain | Application | Subscriber>;

/** Locks a live entity for the rest of the transaction, and reads it: what a change of its policy or balance reads first. */
export async function entityLock<T>(tx: Queryable, t: EntityTable<T>, id: number): Promise<T | undefined> {
  const x = t.alias;
  const rows = await tx.query(`SELECT ${columns(t.kind, x)} FROM ${t.table} ${x} WHERE ${x}.id = $1 AND ${x}.deleted_at IS NULL FOR UPDATE`, [id]);
  return rows[0] ? t.from(rows[0]) : undefined;
}

/** Sets the policy of an entity locked by entityLock (null removes it); its keys' caches hear of it on keyplane_directory. */
export async function entityPolicyUpdate<T>(tx: Queryable, t: EntityTable<T>, id: number, policy: string | null, now: Date): Promise<T> {
  const x = t.alias;
  const rows = await tx.query(
    `WITH ${x} AS (UPDATE ${t.table} SET policy = $2::jsonb, modified_at = $3 WHERE id = $1 RETURNING *)
     SELECT ${columns(t.kind, x)} FROM ${x}`,
    [id, policy, now],
  );
  return t.from(rows[0]!);
}
