import { LRUCache } from "lru-cache";
import type { Queryable } from "../store/database.ts";
import type { StoredKey } from "../domain/model.ts";
import { keyFindByHash } from "../store/keys.ts";

// The verification cache: the live key behind a token, by the token's hash, so the hot path is one
// hash and one map look-up, and GET /keys/self needs nothing more. Unknown tokens are cached too (a negative entry), so a flood of the
// same bad tokens stays off the database.
//
// Correctness rests on three rules:
// - a change to a key drops its entry before the request that made the change answers (same process);
// - other processes hear of it through NOTIFY and drop the entry; if they may have missed a
//   notification (connection lost), they drop everything;
// - a look-up started before an invalidation never caches its answer (the epoch check), and every
//   entry expires after `ttlMs` whatever happens.
const UNKNOWN = Symbol("unknown");
type Entry = StoredKey | typeof UNKNOWN;

export interface KeyCacheOptions {
  maxEntries?: number;
  ttlMs?: number;
  /** The clock the TTL is measured on, in milliseconds (performance.now; tests move a fake one). */
  now?: () => number;
}

export interface KeyCacheStats {
  hits: number;
  misses: number;
  queries: number;
  size: number;
}

export class KeyCache {
  readonly #db: Queryable;
  readonly #cache: LRUCache<string, Entry>;
  readonly #stats = { hits: 0, misses: 0, queries: 0 };
  #epoch = 0;

  constructor(db: Queryable, { maxEntries = 100_000, ttlMs = 30_000, now }: KeyCacheOptions = {}) {
    this.#db = db;
    this.#cache = new LRUCache<string, Entry>({ max: maxEntries, ttl: ttlMs, ttlAutopurge: false, ...(now && { perf: { now }, ttlResolution: 0 }) });
  }

  /** The live key behind a token hash (active or not), or undefined when there is none. */
  async lookup(hash: Buffer): Promise<StoredKey | undefined> {
    const id = hash.toString("hex");
    const cached = this.#cache.get(id);
    if (cached !== undefined) {
      this.#stats.hits++;
      return cached === UNKNOWN ? undefined : cached;
    }
    this.#stats.misses++;
    const epoch = this.#epoch;
    this.#stats.queries++;
    const found = await keyFindByHash(this.#db, hash);
    if (epoch === this.#epoch) this.#cache.set(id, found ?? UNKNOWN);
    return found;
  }

  /** Drops one key's entry (its token hash, hex). */
  invalidate(hashHex: string): void {
    this.#epoch++;
    this.#cache.delete(hashHex);
  }

  /** Drops every entry: after a change that touches many keys, or when notifications may be lost. */
  clear(): void {
    this.#epoch++;
    this.#cache.clear();
  }

  stats(): KeyCacheStats {
    return { ...this.#stats, size: this.#cache.size };
  }
}
