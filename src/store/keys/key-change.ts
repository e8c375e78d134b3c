// The database announces every change to a key's active, deleted_at or name on this channel, whoever
// made it (the trigger api_keys_changed, migrations/0001_init.sql). This module owns that payload; key-changes.ts listens for it.
export const KEYS_CHANNEL = "keyplane_keys";

export interface KeyChange {
  id: number;
  /** The token's hash, hex. */
  hash: string;
  /** "namespace/name" of the ApiKey that manages the key, if any. */
  managedBy: string | null;
}

/**
 * What an import announces once for each group of keys it created (keyInsertIds in keys.ts), not
 * a change to each: their tokens were chosen elsewhere, so any may have been refused as unknown before
 * it existed, and that is all a cache can hold of a key that did not exist.
 */
export const KEYS_IMPORTED = JSON.stringify({ imported: true });

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
