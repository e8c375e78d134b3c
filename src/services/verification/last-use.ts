import type { Logger } from "pino";
import type { StoredKey } from "../../domain/model.ts";
import type { Queryable } from "../../store/database.ts";
import { keyRecordLastUse } from "../../store/keys/keys.ts";
import type { KeyCache } from "./key-cache.ts";

// lastUsedAt (docs/api.md, "Lifecycle"): recording a use is a map update on the request's path; the
// database hears of it in one statement per flush, at most once per key per flush interval (a minute),
// and at shutdown. A key nobody used costs nothing.
export const LAST_USE_FLUSH_MS = 60_000;
/**
 * How many keys may wait for a flush before one is made at once: the uses wait in memory, some 100
 * bytes a key, and a mix of many distinct keys would otherwise keep each one used within the minute
 * (docs/scaling.md, "Memory").
 */
export const LAST_USE_MAX_PENDING = 50_000;
/**
 * How many keys' uses are kept while the database cannot take them (a flush failed): past it, further
 * uses are not recorded until it can, so an outage under a mix of many distinct keys cannot grow the
 * map without end (docs/scaling.md, "Memory"). What is lost is only how late those keys' lastUsedAt lag.
 */
export const LAST_USE_MAX_KEPT = 2 * LAST_USE_MAX_PENDING;

interface Use {
  /**
   * The key's token hash, hex: a string, not the key's Buffer, which may be a slice of a shared 8 KiB
   * slab (a key the cache did not keep) and would hold the whole slab for up to the flush interval.
   */
  hashHex: string;
  at: Date;
}

export class LastUse {
  readonly #db: Queryable;
  readonly #keyCache: KeyCache;
  readonly #log: Logger;
  #pending = new Map<number, Use>();
  #flushing: Promise<void> | undefined;

  constructor(db: Queryable, keyCache: KeyCache, log: Logger) {
    this.#db = db;
    this.#keyCache = keyCache;
    this.#log = log;
  }

  /** A successful authentication of `key` at `at`: kept in memory until the next flush. */
  record(key: StoredKey, at: Date): void {
    const use = this.#pending.get(key.id);
    if (use === undefined) {
      if (this.#pending.size >= LAST_USE_MAX_KEPT) return;
      this.#pending.set(key.id, { hashHex: key.hash.toString("hex"), at });
      if (this.#pending.size >= LAST_USE_MAX_PENDING) void this.flush();
    }
    // Compared as numbers: < on two Dates looks up how to make numbers of them, on every request.
    else if (use.at.getTime() < at.getTime()) use.at = at;
  }

  /** How many keys wait for the next flush. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Writes what was recorded since the last flush, in one statement; one flush at a time. */
  flush(): Promise<void> {
    this.#flushing ??= this.#write().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    try {
      await keyRecordLastUse(this.#db, [...batch.keys()], [...batch.values()].map((u) => u.at));
    } catch (error) {
      // Kept for the next flush (unless a later use came in meanwhile), up to LAST_USE_MAX_KEPT keys.
      let dropped = 0;
      for (const [id, use] of batch) {
        if (this.#pending.has(id)) continue;
        if (this.#pending.size < LAST_USE_MAX_KEPT) this.#pending.set(id, use);
        else dropped++;
      }
      this.#log.warn({ err: error, keys: batch.size, dropped }, "could not record when keys were last used; will retry");
      return;
    }
    // The cached copies show the lastUsedAt they were read with: this process's answers catch up.
    for (const use of batch.values()) this.#keyCache.noteLastUse(use.hashHex, use.at);
  }
}
