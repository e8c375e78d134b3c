import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailable } from "../../src/domain/errors.ts";
import { ADMIN } from "../../src/domain/keys/key-event.ts";
import { customerScope, type Scope } from "../../src/domain/scope/scope.ts";
import { createSealer } from "../../src/domain/seal.ts";
import { newToken, tokenHash } from "../../src/domain/keys/token.ts";
import { KeyInserts, MAX_BATCH } from "../../src/services/keys/key-inserts.ts";
import type { Database, Queryable } from "../../src/store/database.ts";
import { customerInsert } from "../../src/store/directory/directory.ts";
import { eventListByKey } from "../../src/store/keys/key-events.ts";
import type { NewKey } from "../../src/store/keys/keys.ts";
import { migrate } from "../../src/store/migrate.ts";
import { backends, openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { captureLogger } from "../support/service.ts";

// Provisioning's inserts are gathered into one statement per turn of the event loop
// (docs/adr/0007-provisioning-cost.md); each key still gets the answer inserting it alone would give.
const sealer = createSealer(randomBytes(32));
const now = new Date("2026-11-23T10:00:00.000Z");

function newKey(scope: Scope, name: string): NewKey {
  const token = newToken();
  const hash = tokenHash(token);
  return {
    hash, sealed: sealer.seal(token, hash), name, active: true, type: "customer", scope, userId: null, managedBy: null,
    expiresAt: null, author: ADMIN, changes: { name: [null, name] }, now,
  };
}

/** The database, counting the rows of each insert statement it is sent. */
function counting(db: Database): { q: Queryable; batches: number[] } {
  const batches: number[] = [];
  const q: Queryable = {
    query(text, params) {
      // The first parameter is the token hashes' array literal: hex, so its only commas part elements.
      if (text.includes("INSERT INTO api_keys")) batches.push((params?.[0] as string).split(",").length);
      return db.query(text, params);
    },
  } as Queryable;
  return { q, batches };
}

describe.each(backends())("provisioning's inserts on %s", (backend) => {
  let t: TestDatabase;
  let acme: Scope;

  beforeAll(async () => {
    const log = captureLogger([]);
    t = await openTestDatabase(backend, log);
    await migrate(t.db, log);
    acme = customerScope((await customerInsert(t.db, "acme", now)).id);
  });
  afterAll(() => t.drop());

  it("sends the keys asked for in one turn as one statement, each answered with its own key and event", async () => {
    const { q, batches } = counting(t.db);
    const inserts = new KeyInserts(q);
    const keys = Array.from({ length: 10 }, (_, i) => newKey(acme, `batch-${i}`));
    const stored = await Promise.all(keys.map((k) => inserts.insert(k)));
    expect(batches).toEqual([10]);
    expect(stored.map((s) => s?.name)).toEqual(keys.map((k) => k.name));
    expect(stored.map((s) => s?.hash.toString("hex"))).toEqual(keys.map((k) => k.hash.toString("hex")));
    for (const s of stored) {
      const events = await eventListByKey(t.db, s!.id, undefined);
      expect(events.map((e) => [e.action, e.key!.name, e.at, e.changes])).toEqual([["created", s!.name, now, { name: [null, s!.name] }]]);
    }
  });

  it("answers undefined for a name already taken, and for the second of two keys of one name in a batch", async () => {
    const inserts = new KeyInserts(t.db);
    const [first, again, twin] = await Promise.all([
      inserts.insert(newKey(acme, "twin")),
      inserts.insert(newKey(acme, "batch-0")),
      inserts.insert(newKey(acme, "twin")),
    ]);
    expect(first?.name).toBe("twin");
    expect(again).toBeUndefined();
    expect(twin).toBeUndefined();
  });

  it("tries each key alone when one breaks a constraint: only that one fails", async () => {
    const { q, batches } = counting(t.db);
    const inserts = new KeyInserts(q);
    const results = await Promise.allSettled([
      inserts.insert(newKey(acme, "fine-1")),
      inserts.insert(newKey(customerScope(999_999), "no-such-customer")),
      inserts.insert(newKey(acme, "fine-2")),
    ]);
    expect(batches).toEqual([3, 1, 1, 1]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(results.map((r) => r.status === "fulfilled" && r.value?.name)).toEqual(["fine-1", false, "fine-2"]);
  });

  it(`sends at most ${MAX_BATCH} keys in a statement`, async () => {
    const { q, batches } = counting(t.db);
    const inserts = new KeyInserts(q);
    const stored = await Promise.all(Array.from({ length: MAX_BATCH + 6 }, (_, i) => inserts.insert(newKey(acme, `many-${i}`))));
    expect(batches).toEqual([MAX_BATCH, 6]);
    expect(stored.every((s) => s !== undefined)).toBe(true);
  });
});

describe("provisioning's inserts when the database cannot be reached", () => {
  it("fails every key of the batch at once, without trying them one by one", async () => {
    let statements = 0;
    const down = { query: () => (statements++, Promise.reject(new StoreUnavailable("test"))) } as unknown as Queryable;
    const inserts = new KeyInserts(down);
    const acme = customerScope(1);
    const results = await Promise.allSettled([inserts.insert(newKey(acme, "a")), inserts.insert(newKey(acme, "b"))]);
    expect(results.map((r) => r.status === "rejected" && r.reason instanceof StoreUnavailable)).toEqual([true, true]);
    expect(statements).toBe(1);
  });
});
