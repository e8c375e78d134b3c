import type { StoredKey } from "../../domain/model.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import { keyClaimManagedBy, keyFindByIdentity, keyFindEverById, keyListByManagedBy, keyReleaseManagedBy } from "../../store/keys/keys.ts";
import type { KeysNeeds } from "./needs.ts";

// The operator's claims on keys: a key's managed_by names the ApiKey resource ("namespace/name")
// that manages it (docs/adr/0005).

/** The live key of this scope and name, whoever manages it. */
export const findKeyByName = (ctx: KeysNeeds, scope: Scope, name: string): Promise<StoredKey | undefined> => keyFindByIdentity(ctx.db, scope, name, ctx.clock());

/** The live keys that `owner` manages. */
export const listManagedKeys = (ctx: KeysNeeds, owner: string): Promise<StoredKey[]> => keyListByManagedBy(ctx.db, owner, ctx.clock());

/** Claims a key that nobody manages; false when another owner got there first. */
export const claimKey = (ctx: KeysNeeds, id: number, owner: string): Promise<boolean> => keyClaimManagedBy(ctx.db, id, owner);

/** Gives up `owner`'s claim: the key stays, like one made through REST. False if it held none. */
export const releaseKey = (ctx: KeysNeeds, id: number, owner: string): Promise<boolean> => keyReleaseManagedBy(ctx.db, id, owner);

/**
 * A key by id whatever became of it (deleted, expired, replaced): how the operator sees that the key
 * an ApiKey showed was rotated through REST or by a leak report, and by which key (docs/operator.md).
 */
export const findKeyEver = (ctx: KeysNeeds, id: number): Promise<StoredKey | undefined> => keyFindEverById(ctx.db, id);
