// The operator's port onto the key service: what gather reads and apply changes in the key store,
// through the same use cases as the REST API (idempotent provisioning, cache invalidation).
import { AppError } from "../../domain/errors.ts";
import { operator } from "../../domain/keys/key-event.ts";
import type { KeyType, StoredKey } from "../../domain/model.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import { scopeOf, type Scope, type ScopeRefs } from "../../domain/scope/scope.ts";
import { tokenHint } from "../../domain/keys/token.ts";
import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { DirectoryNeeds } from "../../services/directory/needs.ts";
import { rotateKey } from "../../services/keys/key-rotation.ts";
import { deleteKey, findKey, provisionKey, unseal, updateKey, type BalanceOnPolicy, type KeyPatch } from "../../services/keys/keys.ts";
import { getCustomer } from "../../services/directory/directory.ts";
import { resolveNamedScope, type NamedScope } from "../../services/directory/named-scope.ts";
import { claimKey, findKeyByName, findKeyEver, listManagedKeys, releaseKey } from "../../services/keys/managed-keys.ts";
import type { CustomerNames } from "../resource/namespace-binding.ts";

/** A key as the operator sees it: no token. */
export interface KeyView {
  id: number;
  name: string;
  active: boolean;
  type: KeyType;
  /** "namespace/name" of the ApiKey that manages it; null for a key made through REST. */
  managedBy: string | null;
  scope: Scope;
  /** The key that replaced this one in a rotation; it then ends by itself at its expiry. */
  replacedBy: number | null;
}

/** The key an ApiKey asks for, with its token, which goes into the Secret and nowhere else. */
export interface KeyWithToken extends KeyView {
  token: string;
  /** When the key was issued: spec.rotation.every counts from here. */
  issuedAt: Date;
  /** The key's own policy as stored (its credits' `remaining` the balance it started with); null for none. */
  policy: Policy | null;
}

/** A key as it was last stored, whatever became of it since: how a rotation made elsewhere is seen. */
export interface KeyRecord extends KeyView {
  /** The first and last characters of its token (domain/keys/token.ts); never the whole token. */
  hint: string;
  /** When it stops authenticating: for a replaced key, the end of the grace period its rotation gave it. */
  expiresAt: Date | null;
  deleted: boolean;
}

export interface KeyStore {
  resolveScope(refs: ScopeRefs & { customer: string }): Promise<NamedScope>;
  /** The customer an id, uuid or name names, with its other names; undefined for none. */
  findCustomer(ref: string): Promise<CustomerNames | undefined>;
  /** The live key of this scope and name. */
  findKey(scope: Scope, name: string): Promise<KeyWithToken | undefined>;
  /** A key by id while it still authenticates (a replaced one in its grace period included). */
  findLive(key: Pick<KeyView, "id" | "scope">): Promise<KeyWithToken | undefined>;
  /** A key by id, deleted, expired and replaced ones included. */
  findEver(id: number): Promise<KeyRecord | undefined>;
  /** The live keys that `owner` manages. */
  listManaged(owner: string): Promise<KeyView[]>;
  /** Provisions the key unless a live one of this scope and name exists (then it is left as it is). */
  provision(scope: Scope, name: string, active: boolean, owner: string, policy?: Policy | null): Promise<void>;
  /** Claims a key that nobody manages; false when another ApiKey got there first. */
  claim(id: number, owner: string): Promise<boolean>;
  /**
   * Changes a key; `owner` ("namespace/name" of the ApiKey) is the change's actor in the key's events.
   * A policy given resets the live balance, unless `balance` is "keep" (services/keys/keys.ts).
   */
  update(key: Pick<KeyView, "id" | "scope">, patch: KeyPatch, owner: string, balance?: BalanceOnPolicy): Promise<void>;
  delete(key: Pick<KeyView, "id" | "scope">, owner: string): Promise<void>;
  /** Rotates a key (docs/api.md, "Lifecycle"); a key rotated already is refused with a conflict. */
  rotate(key: Pick<KeyView, "id" | "scope">, gracePeriodSeconds: number, owner: string): Promise<void>;
  /** Deletes a key a rotation replaced; one gone already (expired at its grace period's end) is left be. */
  retire(key: Pick<KeyView, "id" | "scope">, owner: string): Promise<void>;
  /** Gives up `owner`'s claim on a key, which then stays in keyplane like one made through REST. */
  release(id: number, owner: string): Promise<void>;
}

function view(k: { id: number; name: string; active: boolean; type: KeyType; managedBy: string | null; replacedBy: number | null } & Scope): KeyView {
  return { id: k.id, name: k.name, active: k.active, type: k.type, managedBy: k.managedBy, scope: scopeOf(k), replacedBy: k.replacedBy };
}

/** What the key store runs with: the keys and directory rooms' needs (the operator resolves an ApiKey's references). */
export type KeyStoreNeeds = KeysNeeds & DirectoryNeeds;

export function keyStoreFor(ctx: KeyStoreNeeds): KeyStore {
  const withToken = (stored: StoredKey): KeyWithToken =>
    ({ ...view(stored), token: unseal(ctx, stored).keyId, issuedAt: stored.createdAt, policy: stored.policy });
  return {
    resolveScope: (refs) => resolveNamedScope(ctx, refs),
    async findCustomer(ref) {
      try {
        const { id, uuid, name } = await getCustomer(ctx, ref);
        return { id, uuid, name };
      } catch (error) {
        if (error instanceof AppError && error.code === "not_found") return undefined;
        throw error;
      }
    },
    async findKey(scope, name) {
      const stored = await findKeyByName(ctx, scope, name);
      return stored && withToken(stored);
    },
    async findLive(key) {
      const stored = await findKey(ctx, key.scope, String(key.id));
      return stored && withToken(stored);
    },
    async findEver(id) {
      const stored = await findKeyEver(ctx, id);
      return stored && { ...view(stored), hint: tokenHint(unseal(ctx, stored).keyId), expiresAt: stored.expiresAt, deleted: stored.deletedAt !== null };
    },
    async listManaged(owner) {
      return (await listManagedKeys(ctx, owner)).map(view);
    },
    async provision(scope, name, active, owner, policy = null) {
      await provisionKey(ctx, scope, { name, active, policy, managedBy: owner }, operator(owner));
    },
    claim: (id, owner) => claimKey(ctx, id, owner),
    async update(key, patch, owner, balance) {
      await updateKey(ctx, key.scope, String(key.id), patch, operator(owner), balance);
    },
    delete: (key, owner) => deleteKey(ctx, key.scope, String(key.id), operator(owner)),
    async rotate(key, gracePeriodSeconds, owner) {
      await rotateKey(ctx, key.scope, String(key.id), { gracePeriodSeconds }, operator(owner));
    },
    async retire(key, owner) {
      try {
        await deleteKey(ctx, key.scope, String(key.id), operator(owner));
      } catch (error) {
        if (!(error instanceof AppError && error.code === "not_found")) throw error;
      }
    },
    async release(id, owner) {
      await releaseKey(ctx, id, owner);
    },
  };
}
