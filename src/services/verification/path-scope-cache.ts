import { performance } from "node:perf_hooks";
import { LRUCache } from "lru-cache";
import type { PathScopes } from "../../domain/scope/access.ts";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import type { Scope, ScopeRefs } from "../../domain/scope/scope.ts";
import type { ListenState } from "../../store/database.ts";
import type { DirectoryNeeds } from "../directory/needs.ts";
import { after, type Maybe } from "../maybe.ts";
import { resolvePathScope } from "../directory/path-scope.ts";

// What a platform path names, for /auth and POST /verify (docs/gateways.md, "Names on platform
// paths"): a gateway asks about the same few paths over and over, and each would otherwise cost a
// query or more. See docs/adr/0008-directory-cache.md. Correctness rests on these rules:
// - any change to the directory forgets every answer: before the request that made it answers (same
//   process, deleteEntity), and on hearing the database's announcement (every process,
//   services/verification/cache-invalidation.ts), so an answer is kept for as long as it is true, with no time limit;
// - while announcements may be missed (the listening connection lost), nothing is cached: every
//   look-up asks the database, until listening again;
// - a look-up under way when the answers are forgotten is forgotten with them (what it finds may be
//   from before the change), though callers already waiting on it get its answer;
// - a failed look-up (the database unreachable) is not an answer to keep;
// - while the database cannot be reached, what the database last answered for a path, within the stale
//   window, answers for it (docs/api.md, "When the database cannot be reached"), as the key cache does
//   for keys: those last answers survive the listening connection's loss (nothing is announced then,
//   so nothing is known to have changed) but not an announced change.
// Concurrent look-ups of the same path share one. The verdicts worked out from these answers (may
// this key take this method to this path?) are kept by the same rules.
export interface PathScopeCacheOptions {
  maxEntries?: number;
  /** How a path is resolved when no answer is kept (tests count and hold its calls). */
  resolve?: typeof resolvePathScope;
  /** The stale window (KEYPLANE_STALE_SECONDS): how long a last answer stands in while the database is out of reach (0: not at all). */
  staleMs?: number;
  /** The clock the stale window is measured on, in milliseconds (performance.now). */
  now?: () => number;
}

/** What the database last answered for a path, and when (on the cache's clock). */
interface LastAnswer {
  found: PathScopes | undefined;
  at: number;
}

/** A kept answer: the look-up under way, then what it found. */
type Answer = Promise<PathScopes | undefined> | { found: PathScopes | undefined };

export class PathScopeCache {
  readonly #cache: LRUCache<string, Answer>;
  readonly #reaches: LRUCache<string, boolean>;
  readonly #resolve: typeof resolvePathScope;
  /** The database's last answers, kept through an outage for the stale window; forgotten on a change. */
  readonly #last: LRUCache<string, LastAnswer>;
  readonly #staleMs: number;
  readonly #now: () => number;
  #listening = true;
  /** Moves whenever every answer is forgotten: a verdict judged before then is not kept. */
  #generation = 0;
  /** Moves on every announced change: a look-up under way then is not a last answer either. */
  #changes = 0;

  constructor({ maxEntries = 10_000, resolve = resolvePathScope, staleMs = 300_000, now = () => performance.now() }: PathScopeCacheOptions = {}) {
    this.#cache = new LRUCache({ max: maxEntries });
    this.#last = new LRUCache({ max: maxEntries });
    this.#staleMs = staleMs;
    this.#now = now;
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
    // The whole spelling, not a reading of it: a verdict is for every reading of this path (domain/scope/platform-path.ts).
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
  resolve(ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs, caller: Scope): Maybe<PathScopes | undefined> {
    const id = answerId(refs, caller);
    const answer = this.#answer(ctx, refs, caller, id);
    return answer instanceof Promise ? answer.catch((error: unknown) => this.#lastOr(id, error)) : answer;
  }

  /**
   * The database's answer, not a kept one (the key paths ask afresh each time), remembered as the last
   * answer all the same: while the database cannot be reached, that last answer stands in for it.
   */
  resolveAfresh(ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs, caller: Scope): Promise<PathScopes | undefined> {
    const id = answerId(refs, caller);
    return this.#lookup(ctx, refs, caller, id).catch((error: unknown) => this.#lastOr(id, error));
  }

  #answer(ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs, caller: Scope, id: string): Maybe<PathScopes | undefined> {
    if (!this.#listening) return this.#lookup(ctx, refs, caller, id);
    const kept = this.#cache.get(id);
    if (kept !== undefined) return kept instanceof Promise ? kept : kept.found;
    const lookup = this.#lookup(ctx, refs, caller, id);
    this.#cache.set(id, lookup);
    // Kept once found, unless forgotten meanwhile; a failure is not kept at all.
    lookup.then(
      (found) => this.#cache.peek(id) === lookup && this.#cache.set(id, { found }),
      () => this.#cache.peek(id) === lookup && this.#cache.delete(id),
    );
    return lookup;
  }

  /** The database's answer, remembered as the last one unless a change was announced meanwhile. */
  #lookup(ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs, caller: Scope, id: string): Promise<PathScopes | undefined> {
    const changes = this.#changes;
    const at = this.#now();
    const lookup = this.#resolve(ctx, refs, caller);
    return lookup.then((found) => {
      if (changes === this.#changes) this.#last.set(id, { found, at });
      return found;
    });
  }

  /** The last answer for an outage within the stale window; anything else fails as it failed. */
  #lastOr(id: string, error: unknown): PathScopes | undefined {
    const last = error instanceof StoreUnavailable && this.#staleMs > 0 ? this.#last.get(id) : undefined;
    if (last === undefined || this.#now() - last.at > this.#staleMs) throw error;
    return last.found;
  }

  /** Forgets every answer: the directory changed. */
  clear(): void {
    this.#changes++;
    this.#last.clear();
    this.#forget();
  }

  /**
   * The notification connection's state. Lost: every answer is forgotten and none is kept until it is
   * back (a change made meanwhile would not be heard). Restored: answers are kept again, from empty.
   * The last answers stay, for an outage: they are used only when the database cannot answer.
   */
  listening(state: ListenState): void {
    // Up to now no change was announced: every kept answer was true as late as this, and is the last one.
    if (this.#listening && state === "lost") {
      const at = this.#now();
      this.#cache.forEach((answer, id) => {
        if (!(answer instanceof Promise)) this.#last.set(id, { found: answer.found, at });
      });
    }
    this.#listening = state === "restored";
    this.#forget();
  }

  #forget(): void {
    this.#generation++;
    this.#cache.clear();
    this.#reaches.clear();
  }
}

/** Which answer: the references and the caller they are read for (`self` and names depend on it). */
function answerId(refs: ScopeRefs, caller: Scope): string {
  return JSON.stringify([refs.customer, refs.domain, refs.application, refs.subscriber, caller.tenantId, caller.domainId, caller.applicationId, caller.subscriberId]);
}
