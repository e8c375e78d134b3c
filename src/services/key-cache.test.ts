import { describe, expect, it } from "vitest";
import type { Queryable, Row } from "../store/database.ts";
import { KeyCache } from "./key-cache.ts";

// The cache's own rules, over a fake store whose answers the test controls.
function fakeStore() {
  const live = new Set<string>();
  let gate: Promise<void> | undefined;
  const store = {
    queries: 0,
    live,
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
      const hash = (params![0] as Buffer).toString("hex");
      const found = live.has(hash);
      await gate;
      return (found ? [{ id: 1, token_hash: params![0], active: true, c_id: 1 }] : []) as unknown as R[];
    },
    async exec() {},
  };
  return store satisfies Queryable;
}

const hash = (n: number) => Buffer.alloc(32, n);

describe("KeyCache", () => {
  it("answers a known token from the cache after the first look-up", async () => {
    const store = fakeStore();
    store.live.add(hash(1).toString("hex"));
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
    store.live.add(hash(1).toString("hex"));
    const v = new KeyCache(store);
    await v.lookup(hash(1));
    store.live.delete(hash(1).toString("hex"));
    v.invalidate(hash(1).toString("hex"));
    expect(await v.lookup(hash(1))).toBeUndefined();
    store.live.add(hash(1).toString("hex"));
    v.clear();
    expect(await v.lookup(hash(1))).toBeDefined();
    expect(store.queries).toBe(3);
  });

  it("does not cache an answer read before an invalidation that came while it was in flight", async () => {
    const store = fakeStore();
    store.live.add(hash(1).toString("hex"));
    const v = new KeyCache(store);
    const release = store.hold();
    const inFlight = v.lookup(hash(1)); // reads "live" ...
    store.live.delete(hash(1).toString("hex")); // ... the key is deleted meanwhile,
    v.invalidate(hash(1).toString("hex")); // and the deletion announced,
    release();
    expect(await inFlight).toBeDefined(); // the old answer goes to its own (earlier) caller only:
    expect(await v.lookup(hash(1))).toBeUndefined(); // the next look-up asks the store.
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

  it("holds at most maxEntries", async () => {
    const store = fakeStore();
    const v = new KeyCache(store, { maxEntries: 10 });
    for (let i = 0; i < 50; i++) await v.lookup(hash(i));
    expect(v.stats().size).toBe(10);
  });
});
