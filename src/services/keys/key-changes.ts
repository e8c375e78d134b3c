import type { ListenState } from "../../store/database.ts";
import type { KeyChange } from "../../store/keys/key-change.ts";
import { listenForKeyChanges } from "../../store/keys/key-changes.ts";
import type { KeysNeeds } from "./needs.ts";

export type { KeyChange, ListenState };

/**
 * Calls `onChange` for each change to a key that the database announces, whichever process made it,
 * and for each one the key event log shows was not announced to this process (a reconnection's
 * catch-up, docs/adr/0014); `onUnreadable` for an announcement it cannot read, or when the log cannot
 * say what was missed; and `onReset` whenever announcements may have been missed. Resolves to what
 * stops listening.
 */
export function onKeyChanges(
  ctx: Pick<KeysNeeds, "db">,
  onChange: (change: KeyChange) => void,
  onReset: (state: ListenState) => void,
  onUnreadable?: () => void,
): Promise<() => Promise<void>> {
  return listenForKeyChanges(ctx.db, onChange, onReset, onUnreadable);
}
