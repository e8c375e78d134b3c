import { parseId } from "../../domain/scope/identifier.ts";
import type { KeyAction, KeyEvent } from "../../domain/keys/key-event.ts";
import { reaches, type Reach } from "../../domain/keys/lineage.ts";
import { mayManage } from "../../domain/scope/scope.ts";
import { eventListByKey, eventListByScope, type EventPage } from "../../store/keys/key-events.ts";
import { keyFindEverById } from "../../store/keys/keys.ts";
import type { KeysNeeds } from "./needs.ts";
import { findKey, keyNotFound } from "./keys.ts";

// Reading the events of keys (docs/api.md, "Events"). Writing them is the store's, with each change.

/**
 * One key's events, oldest first. By numeric id also once the key is deleted or expired (its
 * history is what one asks for then); by keyId only while the key is live. A key outside `target`
 * is 404, like one that never existed.
 */
export async function listKeyEvents(ctx: KeysNeeds, target: Reach, ref: string, action: KeyAction | undefined): Promise<KeyEvent[]> {
  const id = parseId(ref);
  const key = id !== undefined ? await keyFindEverById(ctx.db, id) : await findKey(ctx, target, ref);
  if (!key || !mayManage(target, key) || !reaches(target.caller, key)) throw keyNotFound();
  return eventListByKey(ctx.db, key.id, action);
}

/**
 * A page of the events of the keys inside `scope` (of every key, for null: the admin's), newest first;
 * a restricted caller's, of itself and its descendants only.
 */
export function listEvents(ctx: KeysNeeds, scope: Reach | null, page: EventPage): Promise<KeyEvent[]> {
  const caller = scope?.caller;
  return eventListByScope(ctx.db, scope, page, caller?.restricted ? caller.lineage : undefined);
}

export type { EventPage };
