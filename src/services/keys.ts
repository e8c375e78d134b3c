import { conflict, notFound, UniqueViolation } from "../domain/errors.ts";
import { parseId } from "../domain/identifier.ts";
import { keyTypeFor, type Key, type StoredKey } from "../domain/model.ts";
import { mayManage, type Scope } from "../domain/scope.ts";
import { isTokenFormat, newToken, tokenHash } from "../domain/token.ts";
import type { Queryable } from "../store/database.ts";
import {
  keyDelete, keyFindByHash, keyFindById, keyFindByIdentity, keyInsertUnlessExists, keyListByScope, keyUpdate,
  type KeyFilter, type KeyPatch, type KeyInsert,
} from "../store/keys.ts";
import type { Context } from "./context.ts";

export type { KeyPatch };

// Use cases of keys. `target` is always the scope the caller is working in (already authorized):
// a key outside it is treated exactly like a key that does not exist.

export function unseal(ctx: Context, stored: StoredKey): Key {
  const { sealed, hash, ...rest } = stored;
  return { ...rest, keyId: ctx.sealer.open(sealed, hash) };
}

/** A fresh token with its look-up hash and sealed copy. */
export function mintToken(ctx: Context): Pick<KeyInsert, "hash" | "sealed"> {
  const token = newToken();
  const hash = tokenHash(token);
  return { hash, sealed: ctx.sealer.seal(token, hash) };
}

export interface ProvisionRequest {
  name: string;
  active?: boolean;
  managedBy?: string | null;
}

/**
 * Returns the live key of this scope and name, creating it if there is none. The unique index on a
 * live key's identity makes this exact under concurrency, across processes too: of racing inserts one
 * wins, and the others read the winner's key.
 */
export async function provisionKey(ctx: Context, scope: Scope, req: ProvisionRequest): Promise<{ key: Key; created: boolean }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await keyInsertUnlessExists(
      ctx.db,
      {
        ...mintToken(ctx),
        name: req.name,
        active: req.active ?? true,
        type: keyTypeFor(scope),
        scope,
        userId: null,
        managedBy: req.managedBy ?? null,
      },
      ctx.clock(),
    );
    const stored = inserted ?? (await keyFindByIdentity(ctx.db, scope, req.name));
    // Absent only if the existing key was deleted between the two statements: try again.
    if (stored) return { key: unseal(ctx, stored), created: inserted !== undefined };
  }
  throw new Error("provisioning did not settle after 3 attempts");
}

/** A live key inside `target`, named by keyId or numeric id; undefined when there is none. */
export async function findKey(q: Queryable, target: Scope, ref: string): Promise<StoredKey | undefined> {
  const id = parseId(ref);
  const stored =
    isTokenFormat(ref) ? await keyFindByHash(q, tokenHash(ref))
    : id !== undefined ? await keyFindById(q, id)
    : undefined;
  return stored && mayManage(target, stored) ? stored : undefined;
}

const keyNotFound = () => notFound("No such key.");

export async function getKey(ctx: Context, target: Scope, ref: string): Promise<Key> {
  const stored = await findKey(ctx.db, target, ref);
  if (!stored) throw keyNotFound();
  return unseal(ctx, stored);
}

export async function updateKey(ctx: Context, target: Scope, ref: string, patch: KeyPatch): Promise<Key> {
  const stored = await findKey(ctx.db, target, ref);
  if (!stored) throw keyNotFound();
  try {
    if (!(await keyUpdate(ctx.db, stored.id, patch, ctx.clock()))) throw keyNotFound();
  } catch (error) {
    if (error instanceof UniqueViolation) throw conflict(`A key named "${patch.name}" already exists in this scope.`);
    throw error;
  }
  ctx.keyCache.invalidate(stored.hash.toString("hex"));
  return getKey(ctx, target, String(stored.id));
}

/** Deletes a key inside `target`; nothing happens for a key that is not there (DELETE is 204 either way). */
export async function deleteKey(ctx: Context, target: Scope, ref: string): Promise<void> {
  const stored = await findKey(ctx.db, target, ref);
  if (!stored) return;
  await keyDelete(ctx.db, stored.id, ctx.clock());
  ctx.keyCache.invalidate(stored.hash.toString("hex"));
}

export interface ListRequest {
  filter: KeyFilter;
  after?: number;
  limit?: number;
}

const PAGE_SIZE = 500;

/**
 * The live keys inside `scope`, ordered by id, read from the database in keyset pages of PAGE_SIZE so
 * that a list of any length streams in bounded memory.
 */
export async function* listKeys(ctx: Context, scope: Scope, req: ListRequest): AsyncGenerator<Key> {
  let after = req.after ?? 0;
  let remaining = req.limit ?? Infinity;
  while (remaining > 0) {
    const size = Math.min(PAGE_SIZE, remaining);
    const page = await keyListByScope(ctx.db, scope, req.filter, after, size);
    for (const stored of page) yield unseal(ctx, stored);
    if (page.length < size) return;
    remaining -= page.length;
    after = page[page.length - 1]!.id;
  }
}
