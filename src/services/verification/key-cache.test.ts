import { describe, expect, it } from "vitest";
import type { Queryable, Row } from "../../store/database.ts";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import { entryBytes, KeyCache, NEGATIVE_ENTRIES, seenValidWithin } from "./key-cache.ts";

// The cache's own rules, over a fake store whose answers the test controls.
function fakeStore() {
  const live = new Set<string>();
  let gate: Promise<void> | undefined;
  const store = {
    queries: 0,
    /** While true, the database cannot be reached. */
    down: false,
    live,
    /** Tokens whose key the store holds, disabled. */
    disabled: new Set<string>(),
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
    async query<R extends Row>(_text: string, params?: readonly unknown[]): Promise<R[]> {
      store.queries++;
      if (store.down) throw new StoreUnavailable("ECONNREFUSED");
      const hash = (params![0] as Buffer).toString("hex");
      // Read when asked; a held answer arrives later, as it was.
      const rows = live.has(hash) ? [{ id: 1, token_hash: params![0], token_sealed: Buffer.alloc(60, 1), active: !store.disabled.has(hash), c_id: 1 }] : [];
      await gate;
      return rows as unknown as R[];
    },
    async exec() {},
  };
  return store satisfies Queryable;
}

const hash = (n: number) => Buffer.alloc(32, n).toString("hex");
/** The nth of as many distinct token hashes as a flood needs. */
const nth = (n: number) => {
  const b = Buffer.alloc(32, 0xee);
  b.writeUInt32BE(n);
  return b.toString("hex");
};

describe("KeyCache", () => {
  it("answers a known token from the cache after the first look-up", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    for (let i = 0; i < 10; i++) expect(await v.lookup(hash(1))).toMatchObject({ id: 1 });
    expect(store.queries).toBe(1);
    expect(v.stats()).toMatchObject({ hits: 9, misses: 1, queries: 1 });
  });

  it("remembers unknown tokens too (negative cache)", async () => {
    const store = fakeStore();
    const v = new KeyCache(store);
    for (let i = 0; i < 100; i++) expect(await v.lookup(hash(2))).toBeUndefined();
    expect(store.queries).toBe(1);
  });

  it("asks again after an invalidation or a clear", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    await v.lookup(hash(1));
    store.live.delete(hash(1));
    v.invalidate(hash(1));
    expect(await v.lookup(hash(1))).toBeUndefined();
    store.live.add(hash(1));
    v.clear();
    expect(await v.lookup(hash(1))).toBeDefined();
    expect(store.queries).toBe(3);
  });

  it("forgets every unknown token when keys are imported, an \"unknown\" read while the import committed too, and keeps its keys", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    await v.lookup(hash(1));
    expect(await v.lookup(hash(2))).toBeUndefined();
    const release = store.hold();
    const inFlight = v.lookup(hash(3)); // reads "unknown" ...
    store.live.add(hash(2)).add(hash(3)); // ... both are imported meanwhile,
    v.forgetUnknown(); // and the batch announced
    release();
    expect(await inFlight).toBeUndefined();
    expect(store.queries).toBe(3);
    expect(await v.lookup(hash(2))).toBeDefined();
    expect(await v.lookup(hash(3))).toBeDefined();
    expect(await v.lookup(hash(1))).toBeDefined(); // still from the cache
    expect(store.queries).toBe(5);
  });

  it("does not cache an answer read before an invalidation that came while it was in flight", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    const release = store.hold();
    const inFlight = v.lookup(hash(1)); // reads "live" ...
    store.live.delete(hash(1)); // ... the key is deleted meanwhile,
    v.invalidate(hash(1)); // and the deletion announced,
    release();
    expect(await inFlight).toBeDefined(); // the old answer goes to its own (earlier) caller only:
    expect(await v.lookup(hash(1))).toBeUndefined(); // the next look-up asks the store.
    expect(store.queries).toBe(2);
  });

  it("shares one query among concurrent look-ups of the same token", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    const release = store.hold();
    const waiting = Array.from({ length: 10 }, () => v.lookup(hash(1)));
    release();
    for (const answer of await Promise.all(waiting)) expect(answer).toMatchObject({ id: 1 });
    expect(store.queries).toBe(1);
    expect(v.stats()).toMatchObject({ hits: 0, misses: 10, queries: 1 });
  });

  it("does not let a look-up that starts after an invalidation wait for one from before it", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store);
    const release = store.hold();
    const before = v.lookup(hash(1)); // reads "live" ...
    store.live.delete(hash(1)); // ... the key is deleted meanwhile and the deletion announced,
    v.invalidate(hash(1));
    const after = v.lookup(hash(1)); // so this one asks the store itself.
    release();
    expect(await before).toBeDefined();
    expect(await after).toBeUndefined();
    expect(store.queries).toBe(2);
  });

  it("expires entries after the TTL", async () => {
    const store = fakeStore();
    let now = 1_000;
    const v = new KeyCache(store, { ttlMs: 30, now: () => now });
    await v.lookup(hash(3));
    now += 29;
    await v.lookup(hash(3));
    expect(store.queries).toBe(1);
    now += 2;
    await v.lookup(hash(3));
    expect(store.queries).toBe(2);
  });

  it("holds at most maxEntries keys", async () => {
    const store = fakeStore();
    for (let i = 0; i < 50; i++) store.live.add(hash(i));
    const v = new KeyCache(store, { maxEntries: 10 });
    for (let i = 0; i < 50; i++) await v.lookup(hash(i));
    expect(v.stats().size).toBe(10);
  });

  it("holds keys within maxBytes, each charged its entryBytes", async () => {
    const store = fakeStore();
    for (let i = 0; i < 50; i++) store.live.add(hash(i));
    const one = (await new KeyCache(store).lookup(hash(0)))!;
    const v = new KeyCache(store, { maxBytes: 5 * entryBytes(one) });
    for (let i = 0; i < 50; i++) await v.lookup(hash(i));
    expect(v.stats().size).toBe(5);
    expect(v.bytes()).toBe(5 * entryBytes(one));
  });

  it("charges a key by its text: a long name or a large policy costs more", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const key = (await new KeyCache(store).lookup(hash(1)))!;
    expect(entryBytes({ ...key, name: "n".repeat(1_001) })).toBe(entryBytes({ ...key, name: "n" }) + 2_000);
    const policy = { restrictions: { ips: Array.from({ length: 100 }, (_, i) => `10.0.${i}.0/24`) } } as unknown as StoredKey["policy"];
    expect(entryBytes({ ...key, policy })).toBeGreaterThan(entryBytes(key) + 2 * 1_000);
  });

  it("keeps a key's buffers apart from Node's shared slabs, so a cached key pins none of them", async () => {
    const store = fakeStore();
    store.live.add(hash(3));
    const v = new KeyCache(store);
    const key = (await v.lookup(hash(3)))!;
    expect(key.hash.toString("hex")).toBe(hash(3));
    expect(key.sealed.equals(Buffer.alloc(60, 1))).toBe(true);
    // The key's two buffers and nothing else: its memory is exactly theirs.
    expect(key.hash.buffer).toBe(key.sealed.buffer);
    expect(key.hash.buffer.byteLength).toBe(key.hash.length + key.sealed.length);
    expect(await v.lookup(hash(3))).toBe(key); // what it answers from then on
  });

  it("keeps its keys through a flood of unknown tokens", async () => {
    const store = fakeStore();
    for (let i = 0; i < 10; i++) store.live.add(hash(i));
    const v = new KeyCache(store, { maxEntries: 10 });
    for (let i = 0; i < 10; i++) await v.lookup(hash(i));
    for (let i = 0; i < 1_000; i++) await v.lookup(nth(i));
    const asked = store.queries;
    for (let i = 0; i < 10; i++) expect((await v.lookup(hash(i)))?.id).toBe(1);
    expect(store.queries).toBe(asked);
  });

  it("remembers at most NEGATIVE_ENTRIES unknown tokens, the latest", async () => {
    const store = fakeStore();
    const v = new KeyCache(store);
    for (let i = 0; i < NEGATIVE_ENTRIES + 100; i++) await v.lookup(nth(i));
    expect(v.stats().size).toBe(NEGATIVE_ENTRIES);
    const asked = store.queries;
    expect(await v.lookup(nth(NEGATIVE_ENTRIES + 99))).toBeUndefined();
    expect(store.queries).toBe(asked);
    await v.lookup(nth(0));
    expect(store.queries).toBe(asked + 1);
  });

  describe("when the database cannot be reached", () => {
    function setup(staleMs = 300_000) {
      const store = fakeStore();
      store.live.add(hash(1));
      let now = 1_000;
      const cache = new KeyCache(store, { ttlMs: 30_000, staleMs, now: () => now });
      return { store, cache, advance: (ms: number) => (now += ms) };
    }

    it("keeps answering a key seen valid within the stale window, past its TTL", async () => {
      const { store, cache, advance } = setup();
      await cache.lookup(hash(1));
      store.down = true;
      advance(31_000);
      expect(await cache.lookup(hash(1))).toMatchObject({ id: 1 });
      advance(250_000);
      expect(await cache.lookup(hash(1))).toMatchObject({ id: 1 });
      expect(cache.stats().stale).toBe(2);
    });

    it("stops at the end of the stale window, and never answers an unknown token or a dropped key", async () => {
      const { store, cache, advance } = setup();
      await cache.lookup(hash(1));
      await cache.lookup(hash(2)); // unknown: cached as such
      store.down = true;
      advance(300_001);
      await expect(cache.lookup(hash(1))).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(cache.lookup(hash(2))).rejects.toBeInstanceOf(StoreUnavailable);
      store.down = false;
      await cache.lookup(hash(1));
      cache.invalidate(hash(1)); // disabled or deleted: its entry goes
      store.down = true;
      await expect(cache.lookup(hash(1))).rejects.toBeInstanceOf(StoreUnavailable);
    });

    it("does not answer from the cache at all with a stale window of 0", async () => {
      const { store, cache, advance } = setup(0);
      await cache.lookup(hash(1));
      store.down = true;
      advance(30_001);
      await expect(cache.lookup(hash(1))).rejects.toBeInstanceOf(StoreUnavailable);
    });

    it("does not answer from the cache with a stale window of 0, even at the instant it was seen", async () => {
      const { store, cache } = setup(0);
      await cache.lookup(hash(1));
      cache.listening("lost"); // nothing is fresh: the look-up goes to the database
      store.down = true;
      await expect(cache.lookup(hash(1))).rejects.toBeInstanceOf(StoreUnavailable);
    });

    it("keeps a key read while another key changed or the listening connection came back: the stale window covers it", async () => {
      const { store, cache } = setup();
      cache.listening("lost");
      const release = store.hold();
      const inFlight = cache.lookup(hash(1)); // reads "live" ...
      cache.invalidate(hash(2)); // ... while another key changes
      cache.listening("restored"); // and the connection is back
      release();
      expect(await inFlight).toMatchObject({ id: 1 });
      store.down = true;
      expect(await cache.lookup(hash(1))).toMatchObject({ id: 1 }); // not fresh (read before the return), but seen valid
      expect(cache.stats()).toMatchObject({ queries: 2, stale: 1 });
    });

    it("asks the database while notifications may be missed, and again about everything once heard", async () => {
      const { store, cache, advance } = setup();
      await cache.lookup(hash(1));
      cache.listening("lost");
      await cache.lookup(hash(1));
      await cache.lookup(hash(1));
      expect(store.queries).toBe(3); // nothing is fresh while not listening
      store.down = true;
      expect(await cache.lookup(hash(1))).toMatchObject({ id: 1 }); // but the stale window holds
      store.down = false;
      cache.listening("restored");
      advance(1);
      store.live.delete(hash(1)); // deleted while notifications were missed
      expect(await cache.lookup(hash(1))).toBeUndefined(); // asked again, not served from before
      expect(await cache.lookup(hash(1))).toBeUndefined();
      expect(store.queries).toBe(5);
    });
  });
  it("shows a lastUsedAt just written without asking again, and keeps the entry as fresh as it was", async () => {
    const store = fakeStore();
    store.live.add(hash(5));
    let now = 1_000;
    const v = new KeyCache(store, { ttlMs: 30, staleMs: 100, now: () => now });
    expect((await v.lookup(hash(5)))?.lastUsedAt).toBeNull();
    const at = new Date("2026-11-23T10:00:00Z");
    v.noteLastUse(hash(5), at);
    v.noteLastUse(hash(5), new Date("2026-11-23T09:00:00Z")); // never back
    v.noteLastUse(hash(6), at); // not cached: nothing to do
    expect((await v.lookup(hash(5)))?.lastUsedAt).toEqual(at);
    expect(store.queries).toBe(1);
    now += 31;
    store.down = true;
    expect((await v.lookup(hash(5)))?.lastUsedAt).toEqual(at); // from the stale window, as before
    expect(v.stats().size).toBe(1);
  });

  it("tells a key seen valid within the stale window, past its TTL, without asking the database (for throttled clients)", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    let now = 1_000;
    const v = new KeyCache(store, { ttlMs: 100, staleMs: 1_000, now: () => now });
    expect(v.seenValid(hash(1))).toBe(false); // never looked up
    await v.lookup(hash(1));
    await v.lookup(hash(2)); // unknown: a negative entry
    const queries = store.queries;
    expect(v.seenValid(hash(1))).toBe(true);
    expect(v.seenValid(hash(2))).toBe(false);
    now += 500; // past the TTL, within the stale window
    expect(v.seenValid(hash(1))).toBe(true);
    v.listening("lost"); // nothing is fresh, but it was seen valid all the same: the look-up asks again
    expect(v.seenValid(hash(1))).toBe(true);
    expect(store.queries).toBe(queries);
    v.listening("restored");
    now += 501;
    expect(v.seenValid(hash(1))).toBe(false); // past the stale window
    await v.lookup(hash(1)); // read again: seen valid from now
    expect(v.seenValid(hash(1))).toBe(true);
    v.invalidate(hash(1)); // changed (disabled, deleted): no answer of the past stands
    expect(v.seenValid(hash(1))).toBe(false);
  });

  it("does not tell a key seen inactive as seen valid, nor any key with a stale window of 0", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const off = new KeyCache(store, { staleMs: 0 });
    await off.lookup(hash(1));
    expect(off.seenValid(hash(1))).toBe(false);
    store.disabled.add(hash(1));
    const v = new KeyCache(store);
    expect(await v.lookup(hash(1))).toMatchObject({ active: false });
    expect(v.seenValid(hash(1))).toBe(false);
  });
});

describe("seenValidWithin", () => {
  const active = { active: true };
  it.each([
    ["an active key seen now", active, 1_000, 1_000, 300, true],
    ["an active key seen at the window's very edge", active, 1_000, 1_300, 300, true],
    ["an active key seen just longer ago than the window", active, 1_000, 1_301, 300, false],
    ["an inactive key seen now", { active: false }, 1_000, 1_000, 300, false],
    ["an active key seen now, with a window of 0", active, 1_000, 1_000, 0, false],
  ])("%s", (_name, key, seenAt, now, staleMs, expected) => {
    expect(seenValidWithin(key, seenAt, now, staleMs)).toBe(expected);
  });
});

describe("KeyCache: keys this process wrote", () => {
  const written = (active = true) => ({ id: 7, active, hash: Buffer.from(hash(1), "hex"), sealed: Buffer.alloc(60, 1) }) as unknown as StoredKey;

  it("counts a key it wrote as seen valid from then, through an outage, never looked up before", async () => {
    const store = fakeStore();
    const clock = { ms: 0 };
    const v = new KeyCache(store, { staleMs: 1_000, now: () => clock.ms });
    const since = v.mark();
    v.wrote(hash(1), written(), since);
    expect(v.seenValid(hash(1))).toBe(true);
    v.listening("lost");
    store.down = true;
    clock.ms = 1_000;
    expect(((await v.lookup(hash(1))) as StoredKey).id).toBe(7);
    clock.ms = 1_001;
    await expect(v.lookup(hash(1))).rejects.toThrow(StoreUnavailable);
  });

  it("keeps nothing when the key was dropped after its write began (another change may follow this process's)", async () => {
    const store = fakeStore();
    const v = new KeyCache(store, { staleMs: 1_000, now: () => 0 });
    const since = v.mark();
    v.invalidate(hash(1));
    v.wrote(hash(1), written(), since);
    expect(v.seenValid(hash(1))).toBe(false);
    const cleared = v.mark();
    v.clear();
    v.wrote(hash(2), written(), cleared);
    expect(v.seenValid(hash(2))).toBe(false);
  });

  it("keeps what it wrote over a look-up that read the key before the write", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    store.disabled.add(hash(1));
    const v = new KeyCache(store, { staleMs: 1_000, now: () => 0 });
    const release = store.hold();
    const inFlight = v.lookup(hash(1)); // reads it disabled ...
    store.disabled.delete(hash(1));
    v.wrote(hash(1), written(), v.mark()); // ... this process enables it meanwhile
    release();
    expect(((await inFlight) as StoredKey).active).toBe(false); // the old answer goes to its own caller only
    expect(((await v.lookup(hash(1))) as StoredKey).active).toBe(true);
    expect(store.queries).toBe(1);
  });

  it("reads a key it wrote again when its change is announced, so it stays seen", async () => {
    const store = fakeStore();
    store.live.add(hash(1));
    const v = new KeyCache(store, { staleMs: 1_000, now: () => 0 });
    v.wrote(hash(1), written(), v.mark());
    const before = store.queries;
    v.invalidate(hash(1)); // its own change, announced
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.queries).toBe(before + 1);
    expect(v.seenValid(hash(1))).toBe(true);
    v.invalidate(hash(3)); // a key it never wrote: dropped, not read
    expect(store.queries).toBe(before + 1);
  });
});
