import { parseId } from "../domain/identifier.ts";
import type { KeyAction, KeyEvent } from "../domain/key-event.ts";
import { mayManage, type Scope } from "../domain/scope.ts";
import { eventListByKey, eventListByScope, type EventPage } from "../store/key-events.ts";
import { keyFindEverById } from "../store/keys.ts";
import type { Context } from "./context.ts";
import { findKey, keyNotFound } from "./keys.ts";

// Reading the events of keys (docs/api.md, "Events"). Writing them is the store's, with each change.

/**
 * One key's events, oldest first. By numeric id also once the key is deleted or expired (its
 * history is what one asks for then); by keyId only while the key is live. A key outside `target`
 * is 404, like one that never existed.
 */
export async function listKeyEvents(ctx: Context, target: Scope, ref: string, action: KeyAction | undefined): Promise<KeyEvent[]> {
  const id = parseId(ref);
  const key = id !== undefined ? await keyFindEverById(ctx.db, id) : await findKey(ctx, target, ref);
  if (!key || !mayManage(target, key)) throw keyNotFound();
  return eventListByKey(ctx.db, key.id, action);
}

/** A page of the events of the keys inside `scope` (of every key, for null: the admin's), newest first. */
export function listEvents(ctx: Context, scope: Scope | null, page: EventPage): Promise<KeyEvent[]> {
  return eventListByScope(ctx.db, scope, page);
}

export type { EventPage };
