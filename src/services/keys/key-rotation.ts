import { conflict } from "../../domain/errors.ts";
import { expiryOf, requireFuture } from "../../domain/keys/expiry.ts";
import { changesBetween, type Author } from "../../domain/keys/key-event.ts";
import type { Key, StoredKey } from "../../domain/model.ts";
import type { Reach } from "../../domain/keys/lineage.ts";
import type { Queryable } from "../../store/database.ts";
import { keyLockById, keyRotate, type KeyInsert } from "../../store/keys/keys.ts";
import type { KeysNeeds } from "./needs.ts";
import { findKey, keyNotFound, mintToken, withToken, type ExpiryRequest } from "./keys.ts";

export interface RotateRequest extends ExpiryRequest {
  /** How long the old key keeps working, in seconds (0: it stops at once). */
  gracePeriodSeconds?: number | undefined;
}

/**
 * Rotates a key inside `target` (docs/api.md, "Lifecycle"): a successor with a new token takes the
 * key's name, scope, type and active, and the old key expires at the end of the grace period, all in
 * one transaction. A rotation never lengthens the old key's life: an earlier expiry stays. The key is
 * locked first, so of concurrent rotations, on any process, one makes the successor and the others
 * find the key replaced: 409.
 */
export async function rotateKey(ctx: KeysNeeds, target: Reach, ref: string, req: RotateRequest, by: Author): Promise<Key> {
  const now = ctx.clock();
  const successorExpiresAt = expiryOf(req, now);
  requireFuture(successorExpiresAt, now);
  const found = await findKey(ctx, target, ref);
  if (!found) throw keyNotFound();
  const { token, ...minted } = mintToken(ctx);
  const since = ctx.keyCache.mark();
  const successor = await ctx.db.transaction(async (tx) => {
    const old = await keyLockById(tx, found.id, now);
    if (!old) throw keyNotFound();
    if (old.replacedBy !== null) throw conflict(`This key was already rotated: key ${old.replacedBy} replaced it.`);
    return rotateLocked(tx, old, { ...minted, expiresAt: successorExpiresAt }, req.gracePeriodSeconds ?? 0, by, now);
  });
  ctx.metrics?.keyEvents("rotated");
  ctx.metrics?.keyEvents("created");
  // The old key now expires (at once, with no grace): this process must not serve it from its cache.
  ctx.keyCache.invalidate(found.hash.toString("hex"));
  // The successor is as this process wrote it: it verifies from now on, through an outage too.
  ctx.keyCache.wrote(minted.hash.toString("hex"), successor, since);
  return withToken(successor, token);
}

/**
 * The rotation of a key that `tx` has locked (keyLockById) and nothing has replaced: what rotateKey
 * does, and a leak report's `rotate` (services/leaks/leaks.ts). The caller counts the events and drops the
 * old key from its cache once the transaction is committed.
 */
export function rotateLocked(
  tx: Queryable, old: StoredKey, successor: Pick<KeyInsert, "hash" | "sealed" | "expiresAt">, graceSeconds: number, by: Author, now: Date,
): Promise<StoredKey> {
  const graceEnd = new Date(now.getTime() + graceSeconds * 1000);
  const expiresAt = old.expiresAt !== null && old.expiresAt < graceEnd ? old.expiresAt : graceEnd;
  return keyRotate(
    tx,
    { id: old.id, expiresAt },
    successor,
    by,
    {
      rotated: changesBetween(old, { ...old, expiresAt }),
      created: changesBetween(undefined, { name: old.name, active: old.active, expiresAt: successor.expiresAt, replacedBy: null }),
    },
    now,
  );
}
