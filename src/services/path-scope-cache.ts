import { LRUCache } from "lru-cache";
import type { PathScopes } from "../domain/access.ts";
import type { Scope, ScopeRefs } from "../domain/scope.ts";
import type { ListenState } from "../store/database.ts";
import type { Context } from "./context.ts";
import { resolvePathScope } from "./path-scope.ts";

// What a platform path names, for /auth and POST /verify (docs/gateways.md, "Names on platform
// paths"): a gateway asks about the same few paths over and over, and each would otherwise cost a
// query or more. See docs/adr/0008-directory-cache.md. Correctness rests on these rules:
// - any change to the directory forgets every answer: before the request that made it answers (same
//   process, deleteEntity), and on hearing the database's announcement (every process,
//   services/cache-invalidation.ts), so an answer is kept for as long as it is true, with no time limit;
// - while announcements may be missed (the listening connection lost), nothing is cached: every
//   look-up asks the database, until listening again;
// - a look-up under way when the answers are forgotten is forgotten with them (what it finds may be
//   from before the change), though callers already waiting on it get its answer;
// - a failed look-up (the database unreachable) is not an answer to keep.
// Concurrent look-ups of the same path share one.
export interface PathScopeCacheOptions {
  maxEntries?: number;
  /** How a path is resolved when no answer is kept (tests count and hold its calls). */
  resolve?: typeof resolvePathScope;
}

export class PathScopeCache {
  readonly #cache: LRUCache<string, Promise<PathScopes | null>>;
  readonly #resolve: typeof resolvePathScope;
  #listening = true;

  constructor({ maxEntries = 10_000, resolve = resolvePathScope }: PathScopeCacheOptions = {}) {
    this.#cache = new LRUCache({ max: maxEntries });
    this.#resolve = resolve;
  }

  /** resolvePathScope's answer for these references, as seen by this caller (`self` and names depend on it). */
  async resolve(ctx: Context, refs: ScopeRefs, caller: Scope): Promise<PathScopes | undefined> {
    if (!this.#listening) return this.#resolve(ctx, refs, caller);
    const id = JSON.stringify([refs.customer, refs.domain, refs.application, refs.subscriber, caller.tenantId, caller.domainId, caller.applicationId, caller.subscriberId]);
    let answer = this.#cache.get(id);
    if (!answer) {
      answer = this.#resolve(ctx, refs, caller).then((scopes) => scopes ?? null);
      this.#cache.set(id, answer);
      answer.catch(() => this.#cache.get(id) === answer && this.#cache.delete(id));
    }
    return (await answer) ?? undefined;
  }

  /** Forgets every answer: the directory changed. */
  clear(): void {
    this.#cache.clear();
  }

  /**
   * The notification connection's state. Lost: every answer is forgotten and none is kept until it is
   * back (a change made meanwhile would not be heard). Restored: answers are kept again, from empty.
   */
  listening(state: ListenState): void {
    this.#listening = state === "restored";
    this.#cache.clear();
  }
}
