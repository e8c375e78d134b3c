// The key store's changes, as the database announces them (LISTEN/NOTIFY, on PostgreSQL and PGlite):
// a key changed through REST names the ApiKey that manages it, which is then reconciled at once.
import type { KeysNeeds } from "../services/keys/needs.ts";
import { onKeyChanges } from "../services/keys/key-changes.ts";
import { parseRef, type ObjectRef } from "./resource/object-ref.ts";

/**
 * Calls `onChanged` with the ApiKey that manages each changed key, and `onMissed` whenever
 * notifications may have been lost (the listening connection was re-established). Returns the unlisten.
 */
export function listenForManagedKeyChanges(ctx: Pick<KeysNeeds, "db">, onChanged: (owner: ObjectRef) => void, onMissed: () => void): Promise<() => Promise<void>> {
  return onKeyChanges(
    ctx,
    (change) => {
      const owner = parseRef(change.managedBy);
      if (owner) onChanged(owner);
    },
    onMissed,
    () => undefined, // a payload of another form names no ApiKey
  );
}
