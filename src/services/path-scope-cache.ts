import { LRUCache } from "lru-cache";
import type { PathScopes } from "../domain/access.ts";
import type { StoredKey } from "../domain/model.ts";
import type { Scope, ScopeRefs } from "../domain/scope.ts";
import type { ListenState } from "../store/database.ts";
import type { Context } from "./context.ts";
import { after, type Maybe } from "./maybe.ts";
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
// Concurrent look-ups of the same path share one. The verdicts worked out from these answers (may
// this key take this method to this path?) are kept by the same rules.
export interface PathScopeCacheOptions {
  maxEntries?: number;
  /** How a path is resolved when no answer is kept (tests count and hold its calls). */
  resolve?: typeof resolvePathScope;
}

/** A kept answer: the look-up under way, then what it found. */
type Answer = Promise<PathScopes | undefined> | { found: PathScopes | undefined };

export class PathScopeCache {
  readonly #cache: LRUCache<string, Answer>;
  readonly #reaches: LRUCache<string, boolean>;
  readonly #resolve: typeof resolvePathScope;
  #listening = true;
  /** Moves whenever every answer is forgotten: a verdict judged before then is not kept. */
  #generation = 0;

  constructor({ maxEntries = 10_000, resolve = resolvePathScope }: PathScopeCacheOptions = {}) {
    this.#cache = new LRUCache({ max: maxEntries });
    // Paths may be long (4 KiB): the verdicts' ids are bounded in text too.
    this.#reaches = new LRUCache({ max: maxEntries, maxSize: 4 * 1024 * 1024, sizeCalculation: (_reaches, id) => id.length });
    this.#resolve = resolve;
  }

  /**
   * Whether `key` may take `method` to `path`, as `judge` works it out from this cache's answers: kept
   * beside them, since a gateway asks about the same key and path over and over. Kept by the key's id:
   * a key's scope never changes (a rotation makes a new key), and its state is judged apart.
   */
  reaches(key: StoredKey, method: string, path: string, judge: () => Maybe<boolean>): Maybe<boolean> {
    if (!this.#listening) return judge();
    // The whole spelling, not a reading of it: a verdict is for every reading of this path (domain/platform-path.ts).
    // A method never holds a line feed (letters on /verify, a header's value on /auth): the parts cannot run together.
    const id = `${key.id}\n${method}\n${path}`;
    const kept = this.#reaches.get(id);
    if (kept !== undefined) return kept;
    const generation = this.#generation;
    return after(judge(), (reaches) => {
      if (generation === this.#generation) this.#reaches.set(id, reaches);
      return reaches;
    });
  }

  /**
   * resolvePathScope's answer for these references, as seen by this caller (`self` and names depend
   * on it): at once when it is kept, else once the look-up (shared with any other under way) answers.
   */
  resolve(ctx: Context, refs: ScopeRefs, caller: Scope): Maybe<PathScopes | undefined> {
    if (!this.#listening) return this.#resolve(ctx, refs, caller);
    const id = JSON.stringify([refs.customer, refs.domain, refs.application, refs.subscriber, caller.tenantId, caller.domainId, caller.applicationId, caller.subscriberId]);
    const kept = this.#cache.get(id);
    if (kept !== undefined) return kept instanceof Promise ? kept : kept.found;
    const lookup = this.#resolve(ctx, refs, caller);
    this.#cache.set(id, lookup);
    // Kept once found, unless forgotten meanwhile; a failure is not kept at all.
    lookup.then(
      (found) => this.#cache.peek(id) === lookup && this.#cache.set(id, { found }),
      () => this.#cache.peek(id) === lookup && this.#cache.delete(id),
    );
    return lookup;
  }

  /** Forgets every answer: the directory changed. */
  clear(): void {
    this.#forget();
  }

  /**
   * The notification connection's state. Lost: every answer is forgotten and none is kept until it is
   * back (a change made meanwhile would not be heard). Restored: answers are kept again, from empty.
   */
  listening(state: ListenState): void {
    this.#listening = state === "restored";
    this.#forget();
  }

  #forget(): void {
    this.#generation++;
    this.#cache.clear();
    this.#reaches.clear();
  }
}
