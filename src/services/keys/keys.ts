import { conflict, forbidden, notFound, StoreUnavailable, UniqueViolation } from "../../domain/errors.ts";
import { expiryOf, requireFuture } from "../../domain/keys/expiry.ts";
import { parseId } from "../../domain/scope/identifier.ts";
import { childAncestors, isSelf, keyHolder, reaches, type KeyCaller, type Reach } from "../../domain/keys/lineage.ts";
import { changesBetween, type Author, type Changes } from "../../domain/keys/key-event.ts";
import { isExpired } from "../../domain/keys/key-state.ts";
import { keyTypeFor, type Key, type StoredKey } from "../../domain/model.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import { mayManage, scopeOf } from "../../domain/scope/scope.ts";
import { isTokenFormat, newToken, tokenHash } from "../../domain/keys/token.ts";
import {
  holderOf, keyDelete, keyFindByHash, keyFindById, keyFindByIdentity, keyListByScope, keyLockById,
  keyRecordExpiries, keyUpdate, type Entities, type KeyFilter, type KeyInsert, type KeyUpdate,
} from "../../store/keys/keys.ts";
import { orderedPolicy } from "../../store/policy/policies.ts";
import type { KeysNeeds } from "./needs.ts";
import { keysShown } from "../policy/credits.ts";
import { policyChanges, resetBalance } from "../policy/policy-changes.ts";

// Use cases of keys. `target` is always the scope the caller is working in (already authorized):
// a key outside it is treated exactly like a key that does not exist, and so is an expired one. On
// the key paths it names the calling key too (domain/keys/lineage.ts): a restricted caller reaches only
// itself and its descendants, and every other key is as if it did not exist.
// `by` is who makes a change: every change is recorded as an event, in the same transaction.

export function unseal(ctx: Pick<KeysNeeds, "sealer">, stored: StoredKey): Key {
  return withToken(stored, ctx.sealer.open(stored.sealed, stored.hash));
}

/**
 * A stored key as handed out, its token given: one just minted need not be opened again. Field by
 * field, not by spreading: a long list makes one per key.
 */
export function withToken(s: StoredKey, keyId: string): Key {
  return {
    id: s.id, keyId, name: s.name, active: s.active, type: s.type, tenantId: s.tenantId, domainId: s.domainId,
    applicationId: s.applicationId, subscriberId: s.subscriberId, userId: s.userId, managedBy: s.managedBy,
    createdAt: s.createdAt, modifiedAt: s.modifiedAt, deletedAt: s.deletedAt, activeAt: s.activeAt, expiresAt: s.expiresAt,
    lastUsedAt: s.lastUsedAt, replacedBy: s.replacedBy, parentId: s.parentId, lineage: s.lineage, ancestors: s.ancestors, policy: s.policy, tenant: s.tenant, domain: s.domain, application: s.application,
    subscriber: s.subscriber, user: s.user,
  };
}

/** A fresh token with its look-up hash and sealed copy. */
export function mintToken(ctx: Pick<KeysNeeds, "sealer">): Pick<KeyInsert, "hash" | "sealed"> & { token: string } {
  const token = newToken();
  const hash = tokenHash(token);
  return { token, hash, sealed: ctx.sealer.seal(token, hash) };
}

/** When a new key expires: `expiresAt` or `expiresIn` from now, which must lie in the future; null for never. */
export interface ExpiryRequest {
  expiresAt?: Date | undefined;
  expiresIn?: number | undefined;
}

export interface ProvisionRequest extends ExpiryRequest {
  name: string;
  active?: boolean | undefined;
  managedBy?: string | null;
  /** The new key's own policy (docs/api.md, "Key policy"); a key that exists already keeps its own. */
  policy?: Policy | null | undefined;
}

/**
 * Returns the live key of this scope and name, creating it if there is none. The unique index on a
 * live key's identity makes this exact under concurrency, across processes too: of racing inserts one
 * wins, and the others read the winner's key. An expired key whose expiry nothing has recorded yet
 * still holds its place in that index: its expiry is recorded (which frees the name), and the insert
 * tried again.
 */
export async function provisionKey(ctx: KeysNeeds, scope: Reach, req: ProvisionRequest, by: Author): Promise<{ key: Key; created: boolean }> {
  const now = ctx.clock();
  const expiresAt = expiryOf(req, now);
  requireFuture(expiresAt, now);
  const active = req.active ?? true;
  const policy = req.policy ? orderedPolicy(req.policy) : null;
  const changes: Changes = { ...changesBetween(undefined, { name: req.name, active, expiresAt, replacedBy: null }), ...policyChanges(null, policy) };
  for (let attempt = 0; attempt < 3; attempt++) {
    const { token, ...minted } = mintToken(ctx);
    const since = ctx.keyCache.mark();
    const inserted = await ctx.keyInserts.insert({
      ...minted, name: req.name, active, type: keyTypeFor(scope), scope: scopeOf(scope), userId: null, managedBy: req.managedBy ?? null, expiresAt, policy,
      ...parentage(scope.caller), author: by, changes, now,
    });
    if (inserted) {
      ctx.metrics?.keyEvents("created");
      // As this process wrote it: the new key verifies from now on, through an outage too.
      ctx.keyCache.wrote(minted.hash.toString("hex"), inserted, since);
      return { key: await keyShown(ctx, withToken(inserted, token)), created: true };
    }
    const holder = await keyFindByIdentity(ctx.db, scope, req.name, now);
    // A restricted caller never learns another key's token by naming it: the name is taken (409).
    if (holder && !reaches(scope.caller, holder)) throw conflict(`A key named "${req.name}" already exists in this scope.`);
    if (holder) return { key: await keyShown(ctx, unseal(ctx, holder)), created: false };
    // No live key holds the name, so an expired one does, or the holder went between the two statements.
    await keyRecordExpiries(ctx.db, holderOf(scope, req.name), now);
  }
  throw new Error("provisioning did not settle after 3 attempts");
}

/** The parent a key made by `caller` records, and its ancestors; none for the admin, the operator and the runtime. */
function parentage(caller: KeyCaller | undefined): { parentId: number | null; ancestors: readonly number[] } {
  return caller ? { parentId: caller.id, ancestors: childAncestors(caller) } : { parentId: null, ancestors: [] };
}

/** A live key inside `target` that its caller reaches, named by keyId or numeric id; undefined when there is none. */
export async function findKey(ctx: KeysNeeds, target: Reach, ref: string): Promise<StoredKey | undefined> {
  const now = ctx.clock();
  const id = parseId(ref);
  const stored =
    isTokenFormat(ref) ? await keyFindByHash(ctx.db, tokenHash(ref))
    : id !== undefined ? await keyFindById(ctx.db, id, now)
    : undefined;
  return stored && !isExpired(stored.expiresAt, now) && mayManage(target, stored) && reaches(target.caller, stored) ? stored : undefined;
}

export const keyNotFound = () => notFound("No such key.");

/**
 * A key inside `target`, as shown. `caller`: the key that asks, as it authenticated; while the database
 * cannot be reached it answers for itself, as GET /keys/self does (docs/api.md, "When the database
 * cannot be reached").
 */
export async function getKey(ctx: KeysNeeds, target: Reach, ref: string, caller?: StoredKey): Promise<Key> {
  let stored: StoredKey | undefined;
  try {
    stored = await findKey(ctx, target, ref);
  } catch (error) {
    if (!(error instanceof StoreUnavailable && caller && names(ref, caller) && mayManage(target, caller))) throw error;
    stored = caller;
  }
  if (!stored) throw keyNotFound();
  return keyShown(ctx, unseal(ctx, stored));
}

/** Whether a `{key-id}` (a keyId or a numeric id) names this key. */
function names(ref: string, key: StoredKey): boolean {
  return ref === String(key.id) || (isTokenFormat(ref) && tokenHash(ref).equals(key.hash));
}

/** A key as every answer shows it: its policies' credits at their live balances (services/policy/credits.ts). */
export async function keyShown(ctx: KeysNeeds, key: Key): Promise<Key> {
  return (await keysShown(ctx.db, [key], ctx.clock()))[0]!;
}

/**
 * A key may not change its own policy or credits: they are set from above it (docs/api.md, "Key
 * policy"). Its own is any token of its rotation chain: a successor is the same key.
 */
export function refuseSelf(target: Reach, key: StoredKey, what: string): void {
  if (isSelf(target.caller, key)) throw forbidden(`A key may not change its own ${what}.`);
}

/** A change to a key through PUT (or the operator): each field left out stays as it is; expiresAt null removes the expiry. */
export interface KeyPatch {
  name?: string | undefined;
  active?: boolean | undefined;
  expiresAt?: Date | null | undefined;
  /** The key's own policy, replaced whole; null removes it. */
  policy?: Policy | null | undefined;
}

/** The key's fields once `patch` is applied: activeAt moves when the key goes from inactive to active. */
function patched(before: StoredKey, patch: KeyPatch, now: Date): KeyUpdate {
  const active = patch.active ?? before.active;
  return {
    name: patch.name ?? before.name,
    active,
    activeAt: active && !before.active ? now : before.activeAt,
    expiresAt: patch.expiresAt === undefined ? before.expiresAt : patch.expiresAt,
    policy: patch.policy === undefined ? before.policy : patch.policy && orderedPolicy(patch.policy),
  };
}

/**
 * How a policy given in a patch treats the live balance: `reset` (what a PUT does) starts it again from
 * the policy's credits' `remaining`; `keep` leaves it as it is when the key had credits before and has
 * them after (the operator putting back a policy changed through REST: credits spent are not drift).
 */
export type BalanceOnPolicy = "reset" | "keep";

export async function updateKey(ctx: KeysNeeds, target: Reach, ref: string, patch: KeyPatch, by: Author, balance: BalanceOnPolicy = "reset"): Promise<Key> {
  const now = ctx.clock();
  if (patch.expiresAt) requireFuture(patch.expiresAt, now);
  const found = await findKey(ctx, target, ref);
  if (!found) throw keyNotFound();
  if (patch.policy !== undefined) refuseSelf(target, found, "policy");
  try {
    const updated = await ctx.db.transaction(async (tx) => {
      const before = await keyLockById(tx, found.id, now);
      if (!before) throw keyNotFound();
      const after = patched(before, patch, now);
      const changes: Changes = { ...changesBetween(before, { ...after, replacedBy: before.replacedBy }), ...policyChanges(before.policy, after.policy ?? null) };
      // A policy given is a policy set: its credits' balance starts again from their `remaining`, unless
      // the caller keeps the balance of a key that has credits before and after.
      const keeps = balance === "keep" && before.policy?.credits !== undefined && after.policy?.credits !== undefined;
      if (patch.policy !== undefined && !keeps) Object.assign(changes, await resetBalance(tx, keyHolder(before), before.policy, after.policy ?? null, now));
      if (Object.keys(changes).length === 0) return false;
      // A name still held by an expired key is free: record that expiry first, or the index refuses the name.
      if (changes.name) await keyRecordExpiries(tx, holderOf(scopeOf(before), after.name), now);
      await keyUpdate(tx, before.id, after, by, changes, now);
      return true;
    });
    if (updated) ctx.metrics?.keyEvents("updated");
    // The key's descendants are bound by its policy: this process resolves their chains again at once
    // (others hear of it from the database, migrations/0008).
    if (updated && patch.policy !== undefined) ctx.policies.clear();
  } catch (error) {
    if (error instanceof UniqueViolation) throw conflict(`A key named "${patch.name}" already exists in this scope.`);
    throw error;
  }
  const hashHex = found.hash.toString("hex");
  ctx.keyCache.invalidate(hashHex);
  // Read back after the write: kept as that, so a key this process enabled verifies from now on, through
  // an outage too (docs/api.md, "When the database cannot be reached").
  const since = ctx.keyCache.mark();
  const stored = await findKey(ctx, target, String(found.id));
  if (!stored) throw keyNotFound();
  ctx.keyCache.wrote(hashHex, stored, since);
  return keyShown(ctx, unseal(ctx, stored));
}

/** Deletes a key inside `target`; nothing happens for a key that is not there (DELETE is 204 either way). */
export async function deleteKey(ctx: KeysNeeds, target: Reach, ref: string, by: Author): Promise<void> {
  const stored = await findKey(ctx, target, ref);
  if (!stored) return;
  if (await keyDelete(ctx.db, stored.id, by, ctx.clock())) ctx.metrics?.keyEvents("deleted");
  ctx.keyCache.invalidate(stored.hash.toString("hex"));
}

export interface ListRequest {
  filter: KeyFilter;
  after?: number | undefined;
  limit?: number | undefined;
}

const PAGE_SIZE = 500;

/**
 * The live keys inside `scope`, ordered by id, read from the database in keyset pages of PAGE_SIZE so
 * that a list of any length streams in bounded memory. The next page is asked for as soon as a page
 * arrives, so the database reads it while this one is written out.
 */
export async function* listKeys(ctx: KeysNeeds, scope: Reach, req: ListRequest): AsyncGenerator<Key> {
  const now = ctx.clock();
  const caller = scope.caller;
  const filter: KeyFilter = caller?.restricted ? { ...req.filter, within: caller.lineage } : req.filter;
  let remaining = req.limit ?? Infinity;
  const entities: Entities = new Map();
  const read = (after: number) => {
    const size = Math.min(PAGE_SIZE, remaining);
    const page = keyListByScope(ctx.db, scope, filter, after, size, now, entities).then((keys) => ({ keys, full: keys.length === size }));
    page.catch(() => undefined); // awaited below; never an unhandled rejection if the reader stops first
    return page;
  };
  let next = read(req.after ?? 0);
  for (;;) {
    const { keys, full } = await next;
    remaining -= keys.length;
    const more = full && remaining > 0;
    if (more) next = read(keys[keys.length - 1]!.id);
    for (const key of await keysShown(ctx.db, keys.map((stored) => unseal(ctx, stored)), now)) yield key;
    if (!more) return;
  }
}
