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

interface Use {
  hash: Buffer;
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
      this.#pending.set(key.id, { hash: key.hash, at });
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
      // Kept for the next flush (unless a later use came in meanwhile): a database outage loses nothing.
      for (const [id, use] of batch) if (!this.#pending.has(id)) this.#pending.set(id, use);
      this.#log.warn({ err: error, keys: batch.size }, "could not record when keys were last used; will retry");
      return;
    }
    // The cached copies show the lastUsedAt they were read with: this process's answers catch up.
    for (const use of batch.values()) this.#keyCache.noteLastUse(use.hash.toString("hex"), use.at);
  }
}
