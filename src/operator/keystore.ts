// The operator's port onto the key service: what gather reads and apply changes in the key store,
// through the same use cases as the REST API (idempotent provisioning, cache invalidation).
import { AppError } from "../domain/errors.ts";
import { operator } from "../domain/key-event.ts";
import type { KeyType } from "../domain/model.ts";
import { scopeOf, type Scope, type ScopeRefs } from "../domain/scope.ts";
import type { Context } from "../services/context.ts";
import { rotateKey } from "../services/key-rotation.ts";
import { deleteKey, provisionKey, unseal, updateKey, type KeyPatch } from "../services/keys.ts";
import { resolveNamedScope, type NamedScope } from "../services/named-scope.ts";
import { claimKey, findKeyByName, listManagedKeys, releaseKey } from "../services/managed-keys.ts";

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
}

export interface KeyStore {
  resolveScope(refs: ScopeRefs & { customer: string }): Promise<NamedScope>;
  /** The live key of this scope and name. */
  findKey(scope: Scope, name: string): Promise<KeyWithToken | undefined>;
  /** The live keys that `owner` manages. */
  listManaged(owner: string): Promise<KeyView[]>;
  /** Provisions the key unless a live one of this scope and name exists (then it is left as it is). */
  provision(scope: Scope, name: string, active: boolean, owner: string): Promise<void>;
  /** Claims a key that nobody manages; false when another ApiKey got there first. */
  claim(id: number, owner: string): Promise<boolean>;
  /** Changes a key; `owner` ("namespace/name" of the ApiKey) is the change's actor in the key's events. */
  update(key: Pick<KeyView, "id" | "scope">, patch: KeyPatch, owner: string): Promise<void>;
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

export function keyStoreFor(ctx: Context): KeyStore {
  return {
    resolveScope: (refs) => resolveNamedScope(ctx, refs),
    async findKey(scope, name) {
      const stored = await findKeyByName(ctx, scope, name);
      return stored && { ...view(stored), token: unseal(ctx, stored).keyId, issuedAt: stored.createdAt };
    },
    async listManaged(owner) {
      return (await listManagedKeys(ctx, owner)).map(view);
    },
    async provision(scope, name, active, owner) {
      await provisionKey(ctx, scope, { name, active, managedBy: owner }, operator(owner));
    },
    claim: (id, owner) => claimKey(ctx, id, owner),
    async update(key, patch, owner) {
      await updateKey(ctx, key.scope, String(key.id), patch, operator(owner));
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
