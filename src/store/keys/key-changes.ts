import type { ChannelHandlers, Database, ListenState } from "../database.ts";
import { keyCatchUp } from "./key-catch-up.ts";
import { KEYS_CHANNEL, KEYS_IMPORTED, parseKeyChange, type KeyChange } from "./key-change.ts";

/**
 * The keys channel's handler: `onChange` for each announced change, `onImported` for a batch of
 * imported keys, `onUnreadable` for a payload it cannot read.
 */
export function keyChannel(onChange: (change: KeyChange) => void, onUnreadable: () => void, onImported: () => void = () => undefined): ChannelHandlers {
  return {
    [KEYS_CHANNEL]: (payload) => {
      if (payload === KEYS_IMPORTED) return onImported();
      const change = parseKeyChange(payload);
      if (change) onChange(change);
      else onUnreadable();
    },
  };
}

/**
 * Calls `onChange` for each announced change, and for each change the key event log shows that the
 * announcements missed (key-catch-up.ts); `onUnreadable` for a payload it cannot read, or when the log
 * cannot tell what was missed (by default: as if every announcement had been missed); and `onReset`
 * when announcements may be missed ("lost") and when they are heard again ("restored"). Resolves to
 * what stops listening.
 */
export function listenForKeyChanges(
  db: Database,
  onChange: (change: KeyChange) => void,
  onReset: (state: ListenState) => void,
  onUnreadable: () => void = () => onReset("restored"),
): Promise<() => Promise<void>> {
  return db.listen(keyChannel(onChange, onUnreadable), onReset, keyCatchUp(onChange, onUnreadable));
}
