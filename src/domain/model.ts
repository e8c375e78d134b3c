import type { Policy } from "./policy/policy.ts";
import type { Scope } from "./scope/scope.ts";

// The directory of the platform's entities (docs/api.md, "Directory") and the key record.
export interface Customer {
  id: number;
  uuid: string;
  name: string;
  active: boolean;
  /** Its policy (docs/api.md, "Key policy"), binding every key inside it; null for none. */
  policy: Policy | null;
  createdAt: Date;
  modifiedAt: Date;
}

export interface Domain {
  id: number;
  uuid: string;
  tenantId: number;
  domain: string;
  active: boolean;
  /** Its policy (docs/api.md, "Key policy"), binding every key inside it; null for none. */
  policy: Policy | null;
  createdAt: Date;
  modifiedAt: Date;
}

export type HttpMethod = "GET" | "POST";

export interface Application {
  id: number;
  uuid: string;
  tenantId: number;
  domainId: number;
  name: string;
  url: string | null;
  method: HttpMethod;
  active: boolean;
  /** Its policy (docs/api.md, "Key policy"), binding every key inside it; null for none. */
  policy: Policy | null;
  createdAt: Date;
  modifiedAt: Date;
}

export interface Subscriber {
  id: number;
  uuid: string;
  tenantId: number;
  domainId: number;
  msisdn: string;
  active: boolean;
  /** Its policy (docs/api.md, "Key policy"), binding every key inside it; null for none. */
  policy: Policy | null;
  createdAt: Date;
  modifiedAt: Date;
}

export interface User {
  id: number;
  uuid: string;
  tenantId: number;
  domainId: number | null;
  email: string;
  active: boolean;
  createdAt: Date;
  modifiedAt: Date;
}

export type KeyType = "customer" | "user" | "application" | "subscriber";
export const KEY_TYPES = ["customer", "user", "application", "subscriber"] as const satisfies readonly KeyType[];

/** A key as the store holds it: the token only sealed. */
export interface StoredKey extends Scope {
  id: number;
  sealed: Buffer;
  hash: Buffer;
  name: string;
  active: boolean;
  type: KeyType;
  userId: number | null;
  managedBy: string | null;
  createdAt: Date;
  modifiedAt: Date;
  deletedAt: Date | null;
  activeAt: Date | null;
  /** From this time on the key is refused and gone (docs/api.md, "Lifecycle"); null for never. */
  expiresAt: Date | null;
  /** The last successful authentication, as recorded (at most a minute behind). */
  lastUsedAt: Date | null;
  /** The id of the key that replaced this one in a rotation. */
  replacedBy: number | null;
  /** The key whose token made this one through the key paths (docs/api.md, "Restricted keys"); null for none. */
  parentId: number | null;
  /** The id of the first key of its rotation chain: the holder of its own counters (domain/keys/lineage.ts). */
  lineage: number;
  /** Its ancestors' lineages, outermost first. */
  ancestors: readonly number[];
  /** The key's own policy (docs/api.md, "Key policy"); null for none. Its entities' bind it too. */
  policy: Policy | null;
  tenant: Customer;
  domain: Domain | null;
  application: Application | null;
  subscriber: Subscriber | null;
  user: User | null;
}

/** A key as the service hands it out: the token (keyId) unsealed. */
export interface Key extends Omit<StoredKey, "sealed" | "hash"> {
  keyId: string;
}

/** The type a new key gets at a scope (docs/api.md, "Keys": a domain key is a customer key with a domain). */
export function keyTypeFor(scope: Scope): KeyType {
  if (scope.applicationId !== null) return "application";
  if (scope.subscriberId !== null) return "subscriber";
  return "customer";
}
