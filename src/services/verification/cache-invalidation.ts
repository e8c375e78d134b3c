import { directoryChannel } from "../../store/directory/directory-changes.ts";
import { keyCatchUp } from "../../store/keys/key-catch-up.ts";
import { keyChannel } from "../../store/keys/key-changes.ts";
import { CREDITS_CHANNEL } from "../../store/policy/policies.ts";
import type { VerificationNeeds } from "./needs.ts";

/**
 * Keeps this process's caches true to the database, on one listening connection: a key changed by
 * any process (this one included) leaves the verification cache, keys imported take the unknown
 * tokens with them, and an announcement about keys that cannot be read empties it; any directory change empties the path answers and the entities'
 * policies; a balance set or changed gives up this process's lease of it; while announcements may be
 * missed, none trusts what it holds (docs/adr/0003, docs/adr/0008, docs/adr/0013). Key changes have a
 * record, the key event log: whenever the connection is (re)made, and at each check of it, what the
 * announcements missed is read there and leaves the verification cache too (docs/adr/0014); the
 * directory and balances have none, so their caches still start again from empty. Resolves to what
 * stops listening.
 */
export function invalidateCachesOnChanges(ctx: Pick<VerificationNeeds, "db" | "keyCache" | "pathScopes" | "policies" | "meter">): Promise<() => Promise<void>> {
  const { keyCache, pathScopes, policies, meter } = ctx;
  const keyChanged = (change: { hash: string }) => keyCache.invalidate(change.hash);
  const keysMissed = () => keyCache.clear();
  const keysImported = () => keyCache.forgetUnknown();
  return ctx.db.listen(
    {
      ...keyChannel(keyChanged, keysMissed, keysImported),
      ...directoryChannel(() => {
        pathScopes.clear();
        policies.clear();
      }),
      [CREDITS_CHANNEL]: (holder) => meter.dropBalance(holder),
    },
    (state) => {
      keyCache.listening(state);
      pathScopes.listening(state);
      policies.listening(state);
      meter.listening(state);
    },
    keyCatchUp(keyChanged, keysMissed, keysImported),
  );
}
