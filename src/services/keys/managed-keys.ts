import type { StoredKey } from "../../domain/model.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import { keyClaimManagedBy, keyFindByIdentity, keyFindEverById, keyListByManagedBy, keyReleaseManagedBy } from "../../store/keys/keys.ts";
import type { Context } from "../context.ts";

// The operator's claims on keys: a key's managed_by names the ApiKey resource ("namespace/name")
// that manages it (docs/adr/0005).

/** The live key of this scope and name, whoever manages it. */
export const findKeyByName = (ctx: Context, scope: Scope, name: string): Promise<StoredKey | undefined> => keyFindByIdentity(ctx.db, scope, name, ctx.clock());

/** The live keys that `owner` manages. */
export const listManagedKeys = (ctx: Context, owner: string): Promise<StoredKey[]> => keyListByManagedBy(ctx.db, owner, ctx.clock());

/** Claims a key that nobody manages; false when another owner got there first. */
export const claimKey = (ctx: Context, id: number, owner: string): Promise<boolean> => keyClaimManagedBy(ctx.db, id, owner);

/** Gives up `owner`'s claim: the key stays, like one made through REST. False if it held none. */
export const releaseKey = (ctx: Context, id: number, owner: string): Promise<boolean> => keyReleaseManagedBy(ctx.db, id, owner);

/**
 * A key by id whatever became of it (deleted, expired, replaced): how the operator sees that the key
 * an ApiKey showed was rotated through REST or by a leak report, and by which key (docs/operator.md).
 */
export const findKeyEver = (ctx: Context, id: number): Promise<StoredKey | undefined> => keyFindEverById(ctx.db, id);
