import { performance } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { LRUCache } from "lru-cache";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import type { ListenState, Queryable } from "../../store/database.ts";
import { keyFindByHash } from "../../store/keys/keys.ts";
import type { Maybe } from "../maybe.ts";

// The verification cache: the live key behind a token, by the token's hash, so the hot path is one
// hash and one map look-up, and GET /keys/self needs nothing more. Unknown tokens are cached too (a
// negative entry), so a flood of the same bad tokens stays off the database. See docs/adr/0003.
//
// Correctness rests on these rules:
// - a change to a key drops its entry before the request that made the change answers (same process);
// - other processes hear of it through NOTIFY and drop the entry;
// - while notifications may be missed (the listening connection lost), no entry is fresh: every
//   look-up asks the database; once listening again, every entry older than that is asked about again;
// - a look-up started before its key's invalidation or this process's write of it (or before every
//   entry was dropped) never caches its answer, nor is it shared with a look-up that starts after it;
//   an answer "unknown" is not cached after any invalidation. Other keys' changes, or the listening
//   connection lost or back meanwhile, leave a key's answer kept: seen valid for the stale window,
//   and fresh only when it was read after the connection came back. Every entry is fresh for
//   `ttlMs` at most, whatever happens;
// - concurrent look-ups of one token share one query: when a hot key's entry ends, the requests
//   already arriving wait for one answer rather than each asking the database;
// - while the database cannot be reached, a key seen valid within `staleMs` is still answered
//   (stale-if-error, docs/api.md "When the database cannot be reached"); nothing else is;
// - a throttled client's token is looked up only when it is such a key (seenValid), so its entry is
//   read again as it ages, however long the client stays throttled;
// - a key this process has just written (created, enabled, rotated) is kept as the write left it, so
//   it counts as seen valid from then; unless it was dropped after the write began (another change).
//
// Memory is bounded by size, not only by count (docs/scaling.md, "Memory"): a key's entry costs some
// 2.5 KiB (bench/cache-cost.ts), so 100,000 of them would not fit the heap `npm start` gives. Keys are
// kept within `maxBytes`, counted by `entryBytes`; unknown tokens apart, in an LRU of their own, so a
// flood of never-seen tokens neither pushes the keys out nor grows past NEGATIVE_ENTRIES.
const UNKNOWN = Symbol("unknown");

/** How many unknown tokens are remembered: some 180 bytes each (bench/cache-cost.ts), 9 MB in all. */
export const NEGATIVE_ENTRIES = 50_000;
/** The share of the heap's limit the keys' entries may take, by default. */
export const HEAP_SHARE = 0.125;
/**
 * What an entry of a key costs beyond the text `entryBytes` counts: its objects, dates, Buffers (the
 * sealed token and the hash) and the hash that is the map's key. bench/cache-cost.ts measured 2,412
 * bytes in all for a domain key on a domain with a policy, one in two with a rate limit, charged
 * 3,017 on average: this base leaves room over the cost.
 */
const ENTRY_BASE_BYTES = 2_048;

/**
 * The key with its two buffers copied into one of their own. Node hands out small buffers (a row's
 * bytea, a hash) as slices of shared 8 KiB slabs, so a cached key's slice kept its whole slab alive
 * outside the heap long after the slab's other buffers were gone: in the soak, 85 MiB outside the
 * heap for some 16,000 keys (docs/scaling.md, "Memory"). Once per entry kept, on a miss.
 */
function unpooled(key: StoredKey): StoredKey {
  const own = Buffer.allocUnsafeSlow(key.sealed.length + key.hash.length);
  key.sealed.copy(own, 0);
  key.hash.copy(own, key.sealed.length);
  return { ...key, sealed: own.subarray(0, key.sealed.length), hash: own.subarray(key.sealed.length) };
}

/**
 * What a key's entry is charged, in bytes: the base, and its text that varies from key to key (its
 * name, its policy and the entities it embeds, with theirs) at 2 bytes a character, an upper bound of
 * what V8 keeps of it. Worked out once per entry kept, on a miss, never on a hit.
 */
export function entryBytes(key: StoredKey): number {
  const text = JSON.stringify([key.name, key.managedBy, key.policy, key.tenant, key.domain, key.application, key.subscriber, key.user]);
  return ENTRY_BASE_BYTES + 2 * text.length;
}

interface Entry {
  value: StoredKey | typeof UNKNOWN;
  /** When the database said so, on the cache's clock. */
  at: number;
}

export interface KeyCacheOptions {
  /** How many keys are kept at most. */
  maxEntries?: number;
  /** How many bytes the keys' entries may take (entryBytes); by default HEAP_SHARE of the heap's limit. */
  maxBytes?: number;
  ttlMs?: number;
  /**
   * The stale window: how long a key seen valid keeps verifying while the database cannot be reached,
   * and keeps being looked up for a throttled client (0: not at all).
   */
  staleMs?: number;
  /** The clock the TTL and the stale window are measured on, in milliseconds (performance.now). */
  now?: () => number;
}

export interface KeyCacheStats {
  hits: number;
  misses: number;
  queries: number;
  /** Answers given from the stale window while the database could not be reached. */
  stale: number;
  /** Entries: keys and unknown tokens. */
  size: number;
}

export class KeyCache {
  readonly #db: Queryable;
  /** Live keys (active or not), within maxEntries and maxBytes. */
  readonly #cache: LRUCache<string, Entry>;
  /** Unknown tokens: a flood of them cannot push keys out of #cache. */
  readonly #unknown = new LRUCache<string, Entry>({ max: NEGATIVE_ENTRIES });
  readonly #ttlMs: number;
  readonly #staleMs: number;
  readonly #now: () => number;
  readonly #stats = { hits: 0, misses: 0, queries: 0, stale: 0 };
  /** The look-up under way for each token hash: later misses of the same token wait for it. */
  readonly #loading = new Map<string, Promise<StoredKey | undefined>>();
  #epoch = 0;
  /** The epoch of each key's last drop or write here, for look-ups and writes under way (bounded: see `wrote`). */
  readonly #dropped = new LRUCache<string, number>({ max: 10_000, dispose: (epoch, _hash, reason) => {
    if (reason === "evict") this.#forgottenDrops = Math.max(this.#forgottenDrops, epoch);
  } });
  /** Drops up to this epoch may have left #dropped: a write begun before it is not kept. */
  #forgottenDrops = 0;
  /**
   * Keys this process wrote, and when: a change announced for one (its own change, most often, heard
   * after the write) is read again at once, so the key stays seen valid for an outage that follows.
   */
  readonly #written = new LRUCache<string, number>({ max: 10_000 });
  /** The epoch of the last time every entry was dropped. */
  #cleared = 0;
  /** Entries from before this moment are not fresh: notifications may have been missed since. */
  #freshSince = -Infinity;
  #listening = true;

  constructor(db: Queryable, {
    maxEntries = 100_000, maxBytes = Math.floor(getHeapStatistics().heap_size_limit * HEAP_SHARE), ttlMs = 30_000, staleMs = 300_000,
    now = () => performance.now(),
  }: KeyCacheOptions = {}) {
    this.#db = db;
    this.#ttlMs = ttlMs;
    this.#staleMs = staleMs;
    this.#now = now;
    // Entries go only when the LRU needs room: whether one is fresh, or within the stale window, is
    // judged here, per entry (the LRU's own time limits cost a clock read on every look-up).
    this.#cache = new LRUCache<string, Entry>({ max: maxEntries, maxSize: maxBytes, sizeCalculation: (entry) => entryBytes(entry.value as StoredKey) });
  }

  /**
   * The live key behind a token hash (hex; active or not), or undefined when there is none: at once
   * from a fresh entry, else from the database.
   */
  lookup(hashHex: string): Maybe<StoredKey | undefined> {
    const cached = this.#cache.get(hashHex) ?? this.#unknown.get(hashHex);
    const now = this.#now();
    if (cached && this.#isFresh(cached, now)) {
      this.#stats.hits++;
      return cached.value === UNKNOWN ? undefined : cached.value;
    }
    this.#stats.misses++;
    let loading = this.#loading.get(hashHex);
    if (loading === undefined) {
      const started = this.#load(hashHex, cached, now).finally(() => {
        if (this.#loading.get(hashHex) === started) this.#loading.delete(hashHex);
      });
      this.#loading.set(hashHex, (loading = started));
    }
    return loading;
  }

  async #load(hashHex: string, cached: Entry | undefined, now: number): Promise<StoredKey | undefined> {
    const since = this.#epoch;
    this.#stats.queries++;
    let found: StoredKey | undefined;
    try {
      found = await keyFindByHash(this.#db, Buffer.from(hashHex, "hex"));
    } catch (error) {
      if (error instanceof StoreUnavailable && cached && this.#seenValid(cached, this.#now())) {
        this.#stats.stale++;
        return cached.value;
      }
      throw error;
    }
    // A key is kept unless it was dropped meanwhile; an unknown token unless anything was (keys
    // imported drop every unknown token, and record none of them).
    const undisturbed = found === undefined ? since === this.#epoch : !this.#droppedSince(hashHex, since);
    return undisturbed ? this.#keep(hashHex, found, now) : found;
  }

  /** Whether the key behind a token hash may have been dropped after epoch `since`: its own drop, or every entry's. */
  #droppedSince(hashHex: string, since: number): boolean {
    return this.#cleared > since || this.#forgottenDrops > since || (this.#dropped.get(hashHex) ?? 0) > since;
  }

  /**
   * Keeps an answer where its kind goes, dropping any of the other kind for the same token: a key as a
   * copy with buffers of its own (unpooled), which is what it answers from then on.
   */
  #keep(hashHex: string, found: StoredKey | undefined, at: number): StoredKey | undefined {
    if (found === undefined) {
      this.#cache.delete(hashHex);
      this.#unknown.set(hashHex, { value: UNKNOWN, at });
      return undefined;
    }
    const kept = unpooled(found);
    this.#unknown.delete(hashHex);
    this.#cache.set(hashHex, { value: kept, at });
    return kept;
  }

  /**
   * Whether this process has seen the key behind a token hash valid within the stale window, without
   * asking the database: what lets a throttled client's key be answered as usual (docs/gateways.md,
   * "Throttling"), its entry read again when no longer fresh. A dropped entry (the key changed) and an
   * unknown token never were.
   */
  seenValid(hashHex: string): boolean {
    const cached = this.#cache.peek(hashHex);
    return cached !== undefined && this.#seenValid(cached, this.#now());
  }

  #isFresh(entry: Entry, now: number): boolean {
    return this.#listening && entry.at > this.#freshSince && now - entry.at < this.#ttlMs;
  }

  #seenValid(entry: Entry, now: number): entry is { value: StoredKey; at: number } {
    return entry.value !== UNKNOWN && seenValidWithin(entry.value, entry.at, now, this.#staleMs);
  }

  /** Drops one key's entry (its token hash, hex): it changed, so no answer of the past may stand. */
  invalidate(hashHex: string): void {
    this.#epoch++;
    this.#dropped.set(hashHex, this.#epoch);
    this.#cache.delete(hashHex);
    this.#unknown.delete(hashHex);
    this.#loading.delete(hashHex);
    const wroteAt = this.#written.get(hashHex);
    if (wroteAt !== undefined && this.#now() - wroteAt <= this.#staleMs) void Promise.resolve(this.lookup(hashHex)).catch(() => undefined);
  }

  /**
   * This process has just written a key's lastUsedAt: its cached copy shows it too. Only that field
   * moves; the entry stays as fresh (and as usable in the stale window) as it was.
   */
  noteLastUse(hashHex: string, lastUsedAt: Date): void {
    const entry = this.#cache.peek(hashHex);
    if (entry === undefined || entry.value === UNKNOWN) return;
    if (entry.value.lastUsedAt !== null && entry.value.lastUsedAt >= lastUsedAt) return;
    this.#cache.set(hashHex, { ...entry, value: { ...entry.value, lastUsedAt } });
  }

  /** Where a write of a key begins: what `wrote` is given, to tell whether the key was dropped since. */
  mark(): number {
    return this.#epoch;
  }

  /**
   * This process has just written `key` (created, enabled or rotated it: docs/api.md, "When the
   * database cannot be reached") and read it back: it is kept as that, seen now, unless it was dropped
   * after `since` (its write began), when another change may have come after this process's.
   */
  wrote(hashHex: string, key: StoredKey, since: number): void {
    this.#written.set(hashHex, this.#now());
    if (this.#droppedSince(hashHex, since)) return;
    // A look-up under way read the key before this write: it must not store its answer over this one.
    this.#dropped.set(hashHex, ++this.#epoch);
    this.#loading.delete(hashHex);
    this.#keep(hashHex, key, this.#now());
  }

  /**
   * Drops every unknown token, and every look-up under way (one begun before may answer "unknown"):
   * keys were imported, whose tokens were chosen elsewhere (docs/migration.md). The keys' entries stay.
   */
  forgetUnknown(): void {
    this.#epoch++;
    this.#unknown.clear();
    this.#loading.clear();
  }

  /** Drops every entry: after a change that touches many keys. */
  clear(): void {
    this.#cleared = ++this.#epoch;
    this.#cache.clear();
    this.#unknown.clear();
    this.#loading.clear();
  }

  /**
   * The notification connection's state. Lost: nothing is fresh until it is back (look-ups go to the
   * database, which may be unreachable: then the stale window applies). Restored: what it may have
   * missed is asked about again, entry by entry, keeping each for the stale window meanwhile.
   */
  listening(state: ListenState): void {
    this.#epoch++;
    this.#loading.clear();
    this.#listening = state === "restored";
    this.#freshSince = this.#now();
  }

  stats(): KeyCacheStats {
    return { ...this.#stats, size: this.#cache.size + this.#unknown.size };
  }

  /** What the keys' entries are charged against maxBytes (entryBytes). */
  bytes(): number {
    return this.#cache.calculatedSize;
  }
}

/**
 * The stale window: whether the database said a key was active no longer than `staleMs` ago (never
 * with a window of 0, even at the same instant). One test for both of its uses, the database out of
 * reach and a throttled client.
 */
export function seenValidWithin(key: { active: boolean }, seenAt: number, now: number, staleMs: number): boolean {
  return staleMs > 0 && key.active && now - seenAt <= staleMs;
}
