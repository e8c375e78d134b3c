import { describe, expect, it } from "vitest";
import type { PathScopes } from "../../domain/scope/access.ts";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import { customerScope, domainScope, type Scope, type ScopeRefs } from "../../domain/scope/scope.ts";
import type { DirectoryNeeds } from "../directory/needs.ts";
import { PathScopeCache } from "./path-scope-cache.ts";

// The cache's own rules, over a fake directory whose answers the test controls: what it names now,
// how many look-ups reached it, and look-ups held until the test lets them answer.
function fakeDirectory() {
  const names = new Map<string, Scope>([["acme", customerScope(1)]]);
  const held: (() => void)[] = [];
  const directory = {
    lookups: 0,
    names,
    holding: false,
    down: false,
    /** Lets every held look-up answer (with what the directory named when it started). */
    release() {
      for (const answer of held.splice(0)) answer();
    },
    async resolve(_ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs): Promise<PathScopes | undefined> {
      directory.lookups++;
      if (directory.down) throw new StoreUnavailable("ECONNREFUSED");
      const scope = names.get(refs.customer ?? "");
      if (directory.holding) await new Promise<void>((resolve) => held.push(resolve));
      return scope && { gate: scope, target: scope };
    },
  };
  return directory;
}

const ctx = {} as Pick<DirectoryNeeds, "db">;
const caller = customerScope(1);
const acme = { gate: customerScope(1), target: customerScope(1) };

describe("PathScopeCache", () => {
  it("keeps an answer, found or not, until the directory changes", async () => {
    const directory = fakeDirectory();
    const cache = new PathScopeCache({ resolve: directory.resolve });
    for (let i = 0; i < 100; i++) {
      expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
      expect(await cache.resolve(ctx, { customer: "initech" }, caller)).toBeUndefined();
    }
    expect(directory.lookups).toBe(2);
  });

  it("asks again after a clear: a deleted name is refused, a created one found", async () => {
    const directory = fakeDirectory();
    const cache = new PathScopeCache({ resolve: directory.resolve });
    await cache.resolve(ctx, { customer: "acme" }, caller);
    await cache.resolve(ctx, { customer: "initech" }, caller);
    directory.names.delete("acme");
    directory.names.set("initech", customerScope(2));
    cache.clear();
    expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toBeUndefined();
    expect(await cache.resolve(ctx, { customer: "initech" }, caller)).toEqual({ gate: customerScope(2), target: customerScope(2) });
    expect(directory.lookups).toBe(4);
  });

  it("keys answers by the caller too: `self` and names below a domain depend on it", async () => {
    const directory = fakeDirectory();
    const cache = new PathScopeCache({ resolve: directory.resolve });
    await cache.resolve(ctx, { customer: "acme" }, caller);
    await cache.resolve(ctx, { customer: "acme" }, domainScope(1, 7));
    expect(directory.lookups).toBe(2);
  });

  it("shares one look-up among concurrent ones of the same path", async () => {
    const directory = fakeDirectory();
    directory.holding = true;
    const cache = new PathScopeCache({ resolve: directory.resolve });
    const answers = Array.from({ length: 20 }, () => cache.resolve(ctx, { customer: "acme" }, caller));
    directory.release();
    expect(await Promise.all(answers)).toEqual(Array(20).fill(acme));
    expect(directory.lookups).toBe(1);
  });

  const forgetting: [string, (cache: PathScopeCache) => void][] = [
    ["a clear", (cache) => cache.clear()],
    ["the connection lost and back", (cache) => {
      cache.listening("lost");
      cache.listening("restored");
    }],
  ];
  it.each(forgetting)("does not keep what a look-up under way across %s finds: it may be from before the change", async (_name, forget) => {
    const directory = fakeDirectory();
    directory.holding = true;
    const cache = new PathScopeCache({ resolve: directory.resolve });
    const before = cache.resolve(ctx, { customer: "acme" }, caller);
    directory.names.delete("acme");
    forget(cache);
    directory.release();
    expect(await before).toEqual(acme); // asked before the change: its caller gets what it found
    directory.holding = false;
    expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toBeUndefined();
    expect(directory.lookups).toBe(2);
  });

  it("does not keep a failed look-up", async () => {
    const directory = fakeDirectory();
    directory.down = true;
    const cache = new PathScopeCache({ resolve: directory.resolve });
    await expect(cache.resolve(ctx, { customer: "acme" }, caller)).rejects.toThrow(StoreUnavailable);
    directory.down = false;
    expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
    expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
    expect(directory.lookups).toBe(2);
  });

  describe("while the database cannot be reached", () => {
    function clocked() {
      const clock = { ms: 0 };
      const directory = fakeDirectory();
      const cache = new PathScopeCache({ resolve: directory.resolve, staleMs: 1_000, now: () => clock.ms });
      return { clock, directory, cache };
    }

    it("answers what the database last said, found or not, within the stale window, and fails after it", async () => {
      const { clock, directory, cache } = clocked();
      await cache.resolve(ctx, { customer: "acme" }, caller);
      await cache.resolve(ctx, { customer: "initech" }, caller);
      cache.listening("lost"); // the outage takes the listener with it: nothing is kept as fresh
      directory.down = true;
      clock.ms = 1_000;
      expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
      expect(await cache.resolve(ctx, { customer: "initech" }, caller)).toBeUndefined();
      await expect(cache.resolve(ctx, { customer: "globex" }, caller)).rejects.toThrow(StoreUnavailable); // never resolved
      clock.ms = 1_001;
      await expect(cache.resolve(ctx, { customer: "acme" }, caller)).rejects.toThrow(StoreUnavailable);
    });

    it("counts an answer kept until the listener was lost as read then, however long ago it was first read", async () => {
      const { clock, directory, cache } = clocked();
      await cache.resolve(ctx, { customer: "acme" }, caller);
      clock.ms = 5_000; // kept all along, no change announced
      cache.listening("lost");
      directory.down = true;
      clock.ms = 5_900;
      expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
    });

    it("forgets the last answers on an announced change, and answers nothing from before it", async () => {
      const { directory, cache } = clocked();
      await cache.resolve(ctx, { customer: "acme" }, caller);
      cache.clear();
      cache.listening("lost");
      directory.down = true;
      await expect(cache.resolve(ctx, { customer: "acme" }, caller)).rejects.toThrow(StoreUnavailable);
    });

    it("keeps the key paths' fresh answers as last answers too", async () => {
      const { directory, cache } = clocked();
      expect(await cache.resolveAfresh(ctx, { customer: "acme" }, caller)).toEqual(acme);
      expect(await cache.resolveAfresh(ctx, { customer: "acme" }, caller)).toEqual(acme);
      expect(directory.lookups).toBe(2); // afresh: never a kept answer while the database answers
      directory.down = true;
      expect(await cache.resolveAfresh(ctx, { customer: "acme" }, caller)).toEqual(acme);
    });

    it("answers nothing from the past with a stale window of 0", async () => {
      const directory = fakeDirectory();
      const cache = new PathScopeCache({ resolve: directory.resolve, staleMs: 0, now: () => 0 });
      await cache.resolve(ctx, { customer: "acme" }, caller);
      cache.listening("lost");
      directory.down = true;
      await expect(cache.resolve(ctx, { customer: "acme" }, caller)).rejects.toThrow(StoreUnavailable);
    });
  });

  it("while announcements may be missed, keeps nothing and asks the directory every time; once heard again, keeps answers anew", async () => {
    const directory = fakeDirectory();
    const cache = new PathScopeCache({ resolve: directory.resolve });
    await cache.resolve(ctx, { customer: "acme" }, caller);
    cache.listening("lost");
    directory.names.delete("acme"); // a change this process may not hear of
    for (let i = 0; i < 5; i++) expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toBeUndefined();
    expect(directory.lookups).toBe(6);
    directory.names.set("acme", customerScope(1));
    cache.listening("restored");
    for (let i = 0; i < 5; i++) expect(await cache.resolve(ctx, { customer: "acme" }, caller)).toEqual(acme);
    expect(directory.lookups).toBe(7);
  });

  it("holds at most maxEntries answers, dropping the least recently used", async () => {
    const directory = fakeDirectory();
    const cache = new PathScopeCache({ maxEntries: 2, resolve: directory.resolve });
    for (const customer of ["a", "b", "c", "b", "c"]) await cache.resolve(ctx, { customer }, caller);
    expect(directory.lookups).toBe(3);
    await cache.resolve(ctx, { customer: "a" }, caller);
    expect(directory.lookups).toBe(4);
  });

  describe("verdicts", () => {
    const key = { id: 7 } as StoredKey;
    function judge(answer: boolean, held?: Promise<void>) {
      const calls = { count: 0 };
      const run = async () => {
        calls.count++;
        await held;
        return answer;
      };
      return { calls, run };
    }

    it("keeps a key's verdict on a method and path until the directory changes", async () => {
      const cache = new PathScopeCache();
      const j = judge(true);
      for (let i = 0; i < 5; i++) expect(await cache.reaches(key, "GET", "/customers/acme", j.run)).toBe(true);
      expect(j.calls.count).toBe(1);
      expect(cache.reaches(key, "GET", "/customers/acme", j.run)).toBe(true); // at once, not a promise
      await cache.reaches(key, "PUT", "/customers/acme", j.run);
      await cache.reaches({ id: 8 } as StoredKey, "GET", "/customers/acme", j.run);
      expect(j.calls.count).toBe(3);
      cache.clear();
      await cache.reaches(key, "GET", "/customers/acme", j.run);
      expect(j.calls.count).toBe(4);
    });

    it("keeps no verdict while announcements may be missed, nor one judged across a clear", async () => {
      const cache = new PathScopeCache();
      const j = judge(false);
      cache.listening("lost");
      for (let i = 0; i < 3; i++) expect(await cache.reaches(key, "GET", "/x", j.run)).toBe(false);
      expect(j.calls.count).toBe(3);
      cache.listening("restored");
      let release = () => {};
      const held = judge(true, new Promise<void>((resolve) => (release = resolve)));
      const before = cache.reaches(key, "GET", "/x", held.run);
      cache.clear();
      release();
      expect(await before).toBe(true);
      expect(await cache.reaches(key, "GET", "/x", j.run)).toBe(false);
      expect(j.calls.count).toBe(4);
    });
  });
});
