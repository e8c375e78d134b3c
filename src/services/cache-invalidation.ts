import { directoryChannel } from "../store/directory-changes.ts";
import { keyChannel } from "../store/key-changes.ts";
import type { Context } from "./context.ts";

/**
 * Keeps this process's caches true to the database, on one listening connection: a key changed by
 * any process (this one included) leaves the verification cache, and an announcement about keys that
 * cannot be read empties it; any directory change empties the path answers; while announcements may
 * be missed, neither trusts what it holds (docs/adr/0003, docs/adr/0008). Resolves to what stops
 * listening.
 */
export function invalidateCachesOnChanges(ctx: Pick<Context, "db" | "keyCache" | "pathScopes">): Promise<() => Promise<void>> {
  const { keyCache, pathScopes } = ctx;
  return ctx.db.listen(
    {
      ...keyChannel((change) => keyCache.invalidate(change.hash), () => keyCache.clear()),
      ...directoryChannel(() => pathScopes.clear()),
    },
    (state) => {
      keyCache.listening(state);
      pathScopes.listening(state);
    },
  );
}
