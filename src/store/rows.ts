import type { Application, Customer, Domain, KeyType, StoredKey, Subscriber, User, HttpMethod } from "../domain/model.ts";
import type { Row } from "./database.ts";

// Each entity is selected under an alias prefix ("c_id", "c_name"...), so one mapper serves the
// directory's own queries and the joins that embed the entity in a key.
const COMMON = ["id", "uuid", "active", "created_at", "modified_at"];
const ENTITY_COLUMNS = {
  customer: [...COMMON, "name"],
  domain: [...COMMON, "tenant_id", "domain"],
  application: [...COMMON, "tenant_id", "domain_id", "name", "url", "method"],
  subscriber: [...COMMON, "tenant_id", "domain_id", "msisdn"],
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

export const customerFrom = (row: Row, a = "c"): Customer => ({ ...ids(row, a), name: row[`${a}_name`] as string, ...state(row, a) });

export const domainFrom = (row: Row, a = "d"): Domain => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domain: row[`${a}_domain`] as string,
  ...state(row, a),
});

export const applicationFrom = (row: Row, a = "a"): Application => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domainId: num(row, `${a}_domain_id`),
  name: row[`${a}_name`] as string,
  url: (row[`${a}_url`] ?? null) as string | null,
  method: row[`${a}_method`] as HttpMethod,
  ...state(row, a),
});

export const subscriberFrom = (row: Row, a = "s"): Subscriber => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domainId: num(row, `${a}_domain_id`),
  msisdn: row[`${a}_msisdn`] as string,
  ...state(row, a),
});

export const userFrom = (row: Row, a = "u"): User => ({
  ...ids(row, a),
  tenantId: num(row, `${a}_tenant_id`),
  domainId: numOrNull(row, `${a}_domain_id`),
  email: row[`${a}_email`] as string,
  ...state(row, a),
});

/** SELECT list and FROM clause of a key with its embedded directory objects, read from `source`. */
export const keySelect = (source = "api_keys") => `
  SELECT k.id, k.token_hash, k.token_sealed, k.name, k.active, k.type, k.tenant_id, k.domain_id,
         k.application_id, k.subscriber_id, k.user_id, k.managed_by, k.created_at, k.modified_at,
         k.deleted_at, k.active_at, k.expires_at, k.last_used_at, k.replaced_by,
         ${columns("customer", "c")}, ${columns("domain", "d")}, ${columns("application", "a")},
         ${columns("subscriber", "s")}, ${columns("user", "u")}
    FROM ${source} k
    JOIN customers c ON c.id = k.tenant_id
    LEFT JOIN domains d ON d.id = k.domain_id
    LEFT JOIN applications a ON a.id = k.application_id
    LEFT JOIN subscribers s ON s.id = k.subscriber_id
    LEFT JOIN users u ON u.id = k.user_id`;
export const KEY_SELECT = keySelect();

/**
 * The directory objects a result has read, by alias and id: rows of one list share them (and the
 * list's writer serialises each once, src/http/key-text.ts). Kept only while unchanged.
 */
export type EntityMemo = Map<string, { modifiedAt: Date }>;

function shared<T extends { modifiedAt: Date }>(memo: EntityMemo | undefined, row: Row, alias: string, read: () => T): T {
  if (!memo) return read();
  const id = `${alias}${row[`${alias}_id`] as number}`;
  const seen = memo.get(id);
  if (seen && seen.modifiedAt.getTime() === date(row, `${alias}_modified_at`).getTime()) return seen as T;
  const value = read();
  memo.set(id, value);
  return value;
}

export function storedKeyFrom(row: Row, memo?: EntityMemo): StoredKey {
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
    tenant: shared(memo, row, "c", () => customerFrom(row, "c")),
    domain: row.d_id == null ? null : shared(memo, row, "d", () => domainFrom(row, "d")),
    application: row.a_id == null ? null : shared(memo, row, "a", () => applicationFrom(row, "a")),
    subscriber: row.s_id == null ? null : shared(memo, row, "s", () => subscriberFrom(row, "s")),
    user: row.u_id == null ? null : shared(memo, row, "u", () => userFrom(row, "u")),
  };
}
