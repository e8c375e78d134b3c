import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { StoredKey } from "../../domain/model.ts";
import type { Queryable, Row } from "../../store/database.ts";
import { KeyCache } from "./key-cache.ts";
import { LAST_USE_MAX_KEPT, LAST_USE_MAX_PENDING, LastUse } from "./last-use.ts";

// What waits for the next flush stays bounded however many distinct keys are used within the minute.
function countingStore() {
  const store = {
    writes: [] as number[],
    down: false,
    async query<R extends Row>(_text: string, params?: readonly unknown[]): Promise<R[]> {
      if (store.down) throw new Error("the database cannot be reached");
      store.writes.push((params![0] as unknown[]).length);
      return [];
    },
    async exec() {},
  };
  return store satisfies Queryable;
}

const key = (id: number) => ({ id, hash: Buffer.alloc(32, id % 256) }) as unknown as StoredKey;

describe("LastUse", () => {
  it("flushes at once when LAST_USE_MAX_PENDING keys wait, not at the interval alone", async () => {
    const store = countingStore();
    const uses = new LastUse(store, new KeyCache(store), pino({ level: "silent" }));
    const at = new Date("2026-11-28T12:00:00Z");
    for (let id = 1; id < LAST_USE_MAX_PENDING; id++) uses.record(key(id), at);
    expect(store.writes).toEqual([]);
    expect(uses.pending).toBe(LAST_USE_MAX_PENDING - 1);
    uses.record(key(LAST_USE_MAX_PENDING), at);
    expect(uses.pending).toBe(0);
    await uses.flush();
    expect(store.writes).toEqual([LAST_USE_MAX_PENDING]);
    uses.record(key(1), at); // the next use waits for the interval again
    expect(uses.pending).toBe(1);
  });

  it("keeps no more than LAST_USE_MAX_KEPT keys while the database cannot take them, and writes them once it can", async () => {
    const store = countingStore();
    store.down = true;
    const uses = new LastUse(store, new KeyCache(store), pino({ level: "silent" }));
    const at = new Date("2026-11-28T12:00:00Z");
    for (let id = 1; id <= LAST_USE_MAX_KEPT + LAST_USE_MAX_PENDING; id++) {
      uses.record(key(id), at);
      if (id % LAST_USE_MAX_PENDING === 0) await uses.flush(); // each failed flush puts its keys back
    }
    expect(uses.pending).toBe(LAST_USE_MAX_KEPT);
    store.down = false;
    await uses.flush();
    expect(store.writes).toEqual([LAST_USE_MAX_KEPT]);
    expect(uses.pending).toBe(0);
  });
});
