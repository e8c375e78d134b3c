import type { ListenState } from "../store/database.ts";
import { listenForKeyChanges, type KeyChange } from "../store/key-changes.ts";
import type { Context } from "./context.ts";

export type { KeyChange, ListenState };

/**
 * Calls `onChange` for each change to a key that the database announces, whichever process made it,
 * `onUnreadable` for an announcement it cannot read, and `onReset` whenever announcements may have
 * been missed. Resolves to what stops listening.
 */
export function onKeyChanges(
  ctx: Pick<Context, "db">,
  onChange: (change: KeyChange) => void,
  onReset: (state: ListenState) => void,
  onUnreadable?: () => void,
): Promise<() => Promise<void>> {
  return listenForKeyChanges(ctx.db, onChange, onReset, onUnreadable);
}
