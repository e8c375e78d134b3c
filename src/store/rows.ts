import type { Application, Customer, Domain, KeyType, StoredKey, Subscriber, User, HttpMethod } from "../domain/model.ts";
import type { Row } from "./database.ts";
import { policyFromColumn } from "./policy/policies.ts";

// Each entity is selected under an alias prefix ("c_id", "c_name"...), so one mapper serves the
// directory's own queries and the joins that embed the entity in a key.
const COMMON = ["id", "uuid", "active", "created_at", "modified_at"];
const ENTITY_COLUMNS = {
  customer: [...COMMON, "name", "policy"],
  domain: [...COMMON, "tenant_id", "domain", "policy"],
  application: [...COMMON, "tenant_id", "domain_id", "name", "url", "method", "policy"],
  subscriber: [...COMMON, "tenant_id", "domain_id", "msisdn", "policy"],
  user: [...COMMON, "tenant_id", "domain_id", "email"],
} as const;
export type EntityKind = keyof typeof ENTITY_COLUMNS;

/** "c.id AS c_id, c.uuid AS c_uuid, ..." */
export function columns(kind: EntityKind, alias: string): string {
  return ENTITY_COLUMNS[kind].map((c) => `${alias}.${c} AS ${alias}_${c}`).join(", ");
}

const num = (row: Row, key: string) => row[key] as number;
const numOrNull = (row: Row, key: string) => (row[key] ?? null) as number | null;
const date = (row: Row, key: string) => row[key] as Date;

// Objects are built in the contract's field order: ids, the entity's own fields, then state and times.
const ids = (row: Row, a: string) => ({ id: num(row, `${a}_id`), uuid: row[`${a}_uuid`] as string });
const state = (row: Row, a: string) => ({
  active: row[`${a}_active`] as boolean,
  createdAt: date(row, `${a}_created_at`),
  modifiedAt: date(row, `${a}_modified_at`),
});
/** The customer and the domain an application or a subscriber lies in. */
const inDomain = (row: Row, a: string) => ({ tenantId: num(row, `${a}_tenant_id`), domainId: num(row, `${a}_domain_id`) });
/** The state of an entity that carries a policy (users do not). */
const policed = (row: Row, a: string) => ({ ...state(row, a), policy: policyFromColumn(row[`${a}_policy`]) });

export const customerFrom = (row: Row, a = "c"): Customer => ({ ...ids(row, a), name: row[`${a}_name`] as string, ...policed(row, a) });

export const domainFrom = (row: Row, a = "d"): Domain => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domain: row[`${a}_domain`] as string,
  ...policed(row, a),
});

export const applicationFrom = (row: Row, a = "a"): Application => ({
  ...ids(row, a),
  ...inDomain(row, a),
  name: row[`${a}_name`] as string,
  url: (row[`${a}_url`] ?? null) as string | null,
  method: row[`${a}_method`] as HttpMethod,
  ...policed(row, a),
});

export const subscriberFrom = (row: Row, a = "s"): Subscriber => ({
  ...ids(row, a),
  ...inDomain(row, a),
  msisdn: row[`${a}_msisdn`] as string,
  ...policed(row, a),
});

export const userFrom = (row: Row, a = "u"): User => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domainId: numOrNull(row, `${a}_domain_id`),
  email: row[`${a}_email`] as string,
  ...state(row, a),
});

/** A key's own columns, of alias `k`. */
export const KEY_COLUMNS = `k.id, k.token_hash, k.token_sealed, k.name, k.active, k.type, k.tenant_id, k.domain_id,
  k.application_id, k.subscriber_id, k.user_id, k.managed_by, k.created_at, k.modified_at, k.deleted_at, k.active_at,
  k.expires_at, k.last_used_at, k.replaced_by, k.policy, k.parent_id, k.lineage, k.ancestors`;

/** The directory objects a key's scope names, joined to alias `t` (which has the key's five scope columns). */
const embeddedFrom = (t: string) => `
    JOIN customers c ON c.id = ${t}.tenant_id
    LEFT JOIN domains d ON d.id = ${t}.domain_id
    LEFT JOIN applications a ON a.id = ${t}.application_id
    LEFT JOIN subscribers s ON s.id = ${t}.subscriber_id
    LEFT JOIN users u ON u.id = ${t}.user_id`;
const EMBEDDED_COLUMNS = `${columns("customer", "c")}, ${columns("domain", "d")}, ${columns("application", "a")},
         ${columns("subscriber", "s")}, ${columns("user", "u")}`;

/** SELECT list and FROM clause of a key with its embedded directory objects, read from `source`. */
export const keySelect = (source = "api_keys") => `
  SELECT ${KEY_COLUMNS}, ${EMBEDDED_COLUMNS}
    FROM ${source} k ${embeddedFrom("k")}`;

export const KEY_SELECT = keySelect();

/** The directory objects a key embeds. */
export interface Embedded {
  tenant: Customer;
  domain: Domain | null;
  application: Application | null;
  subscriber: Subscriber | null;
  user: User | null;
}

/**
 * The directory objects of a list's keys, by alias and id ("c1", "d10"): read once for the whole list,
 * so its rows share them (and the list's writer serialises each once, src/http/keys/key-text.ts).
 */
export type Entities = Map<string, Customer | Domain | Application | Subscriber | User>;

/** One statement reading the directory objects of scopes given as five id arrays (customer, domain, application, subscriber, user). */
export const ENTITIES_SELECT = `
  SELECT ${EMBEDDED_COLUMNS}
    FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::integer[], $5::integer[])
      AS t(tenant_id, domain_id, application_id, subscriber_id, user_id) ${embeddedFrom("t")}`;

const EMBEDDED_READERS = [["c", customerFrom], ["d", domainFrom], ["a", applicationFrom], ["s", subscriberFrom], ["u", userFrom]] as const;

/** Adds the directory objects of an ENTITIES_SELECT row that `entities` does not hold yet. */
export function addEntities(row: Row, entities: Entities): void {
  for (const [alias, read] of EMBEDDED_READERS) {
    const id = row[`${alias}_id`];
    const key = `${alias}${id as number}`;
    if (id != null && !entities.has(key)) entities.set(key, read(row, alias));
  }
}

/** The key of a row of keySelect, its directory objects read from the same row. */
export function storedKeyFrom(row: Row): StoredKey {
  return keyFrom(row, {
    tenant: customerFrom(row, "c"),
    domain: row.d_id == null ? null : domainFrom(row, "d"),
    application: row.a_id == null ? null : applicationFrom(row, "a"),
    subscriber: row.s_id == null ? null : subscriberFrom(row, "s"),
    user: row.u_id == null ? null : userFrom(row, "u"),
  });
}

/** The key of a row of KEY_COLUMNS, its directory objects taken from `entities` (which must hold them). */
export function listedKeyFrom(row: Row, entities: Entities): StoredKey {
  const of = <T>(alias: string, column: string) => (row[column] == null ? null : (entities.get(`${alias}${row[column] as number}`) as T));
  return keyFrom(row, {
    tenant: of<Customer>("c", "tenant_id")!,
    domain: of<Domain>("d", "domain_id"),
    application: of<Application>("a", "application_id"),
    subscriber: of<Subscriber>("s", "subscriber_id"),
    user: of<User>("u", "user_id"),
  });
}

function keyFrom(row: Row, e: Embedded): StoredKey {
  return {
    id: num(row, "id"),
    hash: row.token_hash as Buffer,
    sealed: row.token_sealed as Buffer,
    name: row.name as string,
    active: row.active as boolean,
    type: row.type as KeyType,
    tenantId: num(row, "tenant_id"),
    domainId: numOrNull(row, "domain_id"),
    applicationId: numOrNull(row, "application_id"),
    subscriberId: numOrNull(row, "subscriber_id"),
    userId: numOrNull(row, "user_id"),
    managedBy: (row.managed_by ?? null) as string | null,
    createdAt: date(row, "created_at"),
    modifiedAt: date(row, "modified_at"),
    deletedAt: (row.deleted_at ?? null) as Date | null,
    activeAt: (row.active_at ?? null) as Date | null,
    expiresAt: (row.expires_at ?? null) as Date | null,
    lastUsedAt: (row.last_used_at ?? null) as Date | null,
    replacedBy: numOrNull(row, "replaced_by"),
    parentId: numOrNull(row, "parent_id"),
    lineage: numOrNull(row, "lineage") ?? num(row, "id"),
    ancestors: ancestorsFrom(row.ancestors),
    policy: policyFromColumn(row.policy),
    tenant: e.tenant,
    domain: e.domain,
    application: e.application,
    subscriber: e.subscriber,
    user: e.user,
  };
}

const NO_ANCESTORS: readonly number[] = Object.freeze([]);

/** An integer[] column: an array from both drivers; the one empty array shared, as most keys have it. */
function ancestorsFrom(value: unknown): readonly number[] {
  return Array.isArray(value) && value.length > 0 ? value.map(Number) : NO_ANCESTORS;
}
