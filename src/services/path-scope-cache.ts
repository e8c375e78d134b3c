import { LRUCache } from "lru-cache";
import type { PathScopes } from "../domain/access.ts";
import type { Scope, ScopeRefs } from "../domain/scope.ts";
import type { Context } from "./context.ts";
import { resolvePathScope } from "./path-scope.ts";

// What a platform path names, for /auth and POST /verify, kept for a second (docs/gateways.md,
// "Names on platform paths"): a gateway asks about the same few paths over and over, and each
// would otherwise cost a query or more. A change to the directory (a customer deactivated, a domain
// deleted) reaches these answers within that second. Concurrent look-ups of the same path share one.
export const PATH_SCOPE_TTL_MS = 1_000;

export interface PathScopeCacheOptions {
  maxEntries?: number;
  ttlMs?: number;
  /** The clock the TTL is measured on, in milliseconds. */
  now?: () => number;
}

export class PathScopeCache {
  readonly #cache: LRUCache<string, Promise<PathScopes | null>>;

  constructor({ maxEntries = 10_000, ttlMs = PATH_SCOPE_TTL_MS, now = () => performance.now() }: PathScopeCacheOptions = {}) {
    this.#cache = new LRUCache({ max: maxEntries, ttl: ttlMs, ttlAutopurge: false, perf: { now }, ttlResolution: 0 });
  }

  /** resolvePathScope's answer for these references, as seen by this caller (`self` and names depend on it). */
  async resolve(ctx: Context, refs: ScopeRefs, caller: Scope): Promise<PathScopes | undefined> {
    const id = JSON.stringify([refs.customer, refs.domain, refs.application, refs.subscriber, caller.tenantId, caller.domainId, caller.applicationId, caller.subscriberId]);
    let answer = this.#cache.get(id);
    if (!answer) {
      answer = resolvePathScope(ctx, refs, caller).then((scopes) => scopes ?? null);
      this.#cache.set(id, answer);
      // A failed look-up (the database unreachable) is not an answer to keep.
      answer.catch(() => this.#cache.get(id) === answer && this.#cache.delete(id));
    }
    return (await answer) ?? undefined;
  }

  /** Forgets every answer: the directory changed here. */
  clear(): void {
    this.#cache.clear();
  }
}
