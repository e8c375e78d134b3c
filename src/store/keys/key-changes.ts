import type { ChannelHandlers, Database, ListenState } from "../database.ts";
import { keyCatchUp } from "./key-catch-up.ts";

// The database announces every change to a key's active, deleted_at or name on this channel, whoever
// made it (the trigger api_keys_changed, migrations/0001_init.sql). This module owns that payload.
export const KEYS_CHANNEL = "keyplane_keys";

export interface KeyChange {
  id: number;
  /** The token's hash, hex. */
  hash: string;
  /** "namespace/name" of the ApiKey that manages the key, if any. */
  managedBy: string | null;
}

/** The change a payload announces; undefined for one not of this form. */
export function parseKeyChange(payload: string): KeyChange | undefined {
  try {
    const p = JSON.parse(payload) as Partial<KeyChange>;
    if (typeof p.id !== "number" || typeof p.hash !== "string") return undefined;
    return { id: p.id, hash: p.hash, managedBy: typeof p.managedBy === "string" ? p.managedBy : null };
  } catch {
    return undefined;
  }
}

/** The keys channel's handler: `onChange` for each announced change, `onUnreadable` for a payload it cannot read. */
export function keyChannel(onChange: (change: KeyChange) => void, onUnreadable: () => void): ChannelHandlers {
  return {
    [KEYS_CHANNEL]: (payload) => {
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
